#pragma once
/// Checking macros for every CUDA runtime / cuBLAS call of the backend (RAFT style):
/// a failure throws gpu::CudaError carrying the call, status, file and line; an
/// allocation failure throws gpu::OutOfMemory. Compiled by nvcc and by g++.
#include <cstdint>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gpu/errors.hpp"

namespace fathom::gpu::detail {

[[noreturn]] inline void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
    cudaGetLastError();  // clear a non-sticky error so later calls start clean
    throw CudaError(call, cudaGetErrorName(status), static_cast<int>(status), file, line);
}

inline const char* cublas_status_name(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

}  // namespace fathom::gpu::detail

/// Checks a CUDA runtime call; cudaErrorMemoryAllocation becomes gpu::OutOfMemory.
#define FATHOM_CUDA_CHECK(call)                                                                          \
    do {                                                                                                 \
        const cudaError_t fathom_status_ = (call);                                                      \
        if (fathom_status_ == cudaErrorMemoryAllocation) {                                              \
            cudaGetLastError();                                                                          \
            throw ::fathom::gpu::OutOfMemory("cuda", 0, #call);                                          \
        }                                                                                                \
        if (fathom_status_ != cudaSuccess) ::fathom::gpu::detail::throw_cuda(fathom_status_, #call, __FILE__, __LINE__); \
    } while (false)

/// Checks a cuBLAS call; CUBLAS_STATUS_ALLOC_FAILED becomes gpu::OutOfMemory.
#define FATHOM_CUBLAS_CHECK(call)                                                                        \
    do {                                                                                                 \
        const cublasStatus_t fathom_status_ = (call);                                                   \
        if (fathom_status_ == CUBLAS_STATUS_ALLOC_FAILED) throw ::fathom::gpu::OutOfMemory("cuda", 0, #call); \
        if (fathom_status_ != CUBLAS_STATUS_SUCCESS)                                                     \
            throw ::fathom::gpu::CudaError(#call, ::fathom::gpu::detail::cublas_status_name(fathom_status_), \
                                           static_cast<int>(fathom_status_), __FILE__, __LINE__);        \
    } while (false)

/// Checks that the last kernel launch was accepted.
#define FATHOM_CUDA_CHECK_LAUNCH(kernel_name)                                                            \
    do {                                                                                                 \
        const cudaError_t fathom_status_ = cudaGetLastError();                                          \
        if (fathom_status_ != cudaSuccess)                                                               \
            ::fathom::gpu::detail::throw_cuda(fathom_status_, "launch of " kernel_name, __FILE__, __LINE__); \
    } while (false)
