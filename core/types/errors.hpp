#pragma once
/// Error types shared across layers. The file errors are defined here, in the lowest
/// library, so that the atomic file writer (core/types/atomic_file.hpp) and every layer
/// above it throw and catch the same types; core/io/errors.hpp names them io::FormatError,
/// io::ReadError and io::WriteError, as the readers and writers use them.
#include <stdexcept>
#include <string>

namespace fathom {

/// The file exists and was opened but its content is malformed.
/// what() reads "<file>: <object>: <problem>", e.g.
/// "pbmc.h5ad: /X/indptr: has 2701 entries; expected n_obs + 1 = 2700".
class FormatError : public std::runtime_error {
public:
    FormatError(std::string file, std::string object, std::string problem)
        : std::runtime_error(file + ": " + (object.empty() ? std::string() : object + ": ") + problem),
          m_file(std::move(file)), m_object(std::move(object)), m_problem(std::move(problem)) {}
    const std::string& file() const noexcept { return m_file; }
    const std::string& object() const noexcept { return m_object; }
    const std::string& problem() const noexcept { return m_problem; }

private:
    std::string m_file, m_object, m_problem;
};

/// The file could not be read at all (missing, permissions, I/O error).
/// what() reads "<file>: <reason>".
class ReadError : public std::runtime_error {
public:
    ReadError(std::string file, std::string reason)
        : std::runtime_error(file + ": " + reason), m_file(std::move(file)), m_reason(std::move(reason)) {}
    const std::string& file() const noexcept { return m_file; }
    const std::string& reason() const noexcept { return m_reason; }

private:
    std::string m_file, m_reason;
};

/// Writing an output failed; nothing was left at the destination path.
/// what() reads "<file>: <reason>".
class WriteError : public std::runtime_error {
public:
    WriteError(std::string file, std::string reason)
        : std::runtime_error(file + ": " + reason), m_file(std::move(file)), m_reason(std::move(reason)) {}
    const std::string& file() const noexcept { return m_file; }
    const std::string& reason() const noexcept { return m_reason; }

private:
    std::string m_file, m_reason;
};

/// A compute device failed (a CUDA call, a lost device). gpu::CudaError derives from it,
/// so core code can tell device failures apart without CUDA headers.
class DeviceError : public std::runtime_error {
public:
    explicit DeviceError(const std::string& message) : std::runtime_error(message) {}
};

/// A device ran out of memory; the engine may retry the step on the CPU.
class DeviceOutOfMemory : public DeviceError {
public:
    explicit DeviceOutOfMemory(const std::string& message) : DeviceError(message) {}
};

}  // namespace fathom
