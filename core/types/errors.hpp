#pragma once
/// Error types shared across layers (io errors live in core/io/errors.hpp).
#include <stdexcept>
#include <string>

namespace fathom {

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
