#pragma once
/// Errors of the CUDA backend. Compiles without nvcc. Both derive from the core device
/// errors, so the engine tells them apart without CUDA headers.
#include <cstdint>
#include <string>

#include "core/types/errors.hpp"

namespace fathom::gpu {

/// A CUDA runtime, cuBLAS, cuSPARSE or cuSOLVER call failed. what() reads
/// "cuda:0: cublasDsyrk(...) failed: CUBLAS_STATUS_EXECUTION_FAILED (13) at gpu/CudaBackend.cpp:210".
class CudaError : public DeviceError {
public:
    CudaError(std::string call, std::string status, int code, std::string file, int line, std::string device = {});
    const std::string& call() const noexcept { return m_call; }
    const std::string& status() const noexcept { return m_status; }
    int code() const noexcept { return m_code; }
    const std::string& file() const noexcept { return m_file; }
    int line() const noexcept { return m_line; }

private:
    std::string m_call, m_status;
    int m_code = 0;
    std::string m_file;
    int m_line = 0;
};

/// A device allocation failed: the step may be retried on the CPU.
class OutOfMemory : public DeviceOutOfMemory {
public:
    OutOfMemory(std::string device, std::int64_t requested_bytes, std::string call);
    std::int64_t requested_bytes() const noexcept { return m_requested_bytes; }

private:
    std::int64_t m_requested_bytes = 0;
};

}  // namespace fathom::gpu
