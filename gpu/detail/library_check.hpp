#pragma once
/// Checking macros for cuSOLVER and cuSPARSE calls, as FATHOM_CUDA_CHECK for the
/// runtime (gpu/detail/cuda_check.hpp): a failure throws gpu::CudaError carrying the
/// call, status, file and line; an allocation failure throws gpu::OutOfMemory.
#include <cusolverDn.h>
#include <cusparse.h>

#include "gpu/detail/cuda_check.hpp"

namespace fathom::gpu::detail {

inline const char* cusolver_status_name(cusolverStatus_t status) {
    switch (status) {
        case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
        case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
        case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
        case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
        case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
        case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
        case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
        case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
        case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
        default: return "CUSOLVER_STATUS_UNKNOWN";
    }
}

}  // namespace fathom::gpu::detail

/// Checks a cuSOLVER call; CUSOLVER_STATUS_ALLOC_FAILED becomes gpu::OutOfMemory.
#define FATHOM_CUSOLVER_CHECK(call)                                                                      \
    do {                                                                                                 \
        const cusolverStatus_t fathom_status_ = (call);                                                 \
        if (fathom_status_ == CUSOLVER_STATUS_ALLOC_FAILED) throw ::fathom::gpu::OutOfMemory("cuda", 0, #call); \
        if (fathom_status_ != CUSOLVER_STATUS_SUCCESS)                                                   \
            throw ::fathom::gpu::CudaError(#call, ::fathom::gpu::detail::cusolver_status_name(fathom_status_), \
                                           static_cast<int>(fathom_status_), __FILE__, __LINE__);        \
    } while (false)

/// Checks a cuSPARSE call; CUSPARSE_STATUS_ALLOC_FAILED becomes gpu::OutOfMemory.
#define FATHOM_CUSPARSE_CHECK(call)                                                                      \
    do {                                                                                                 \
        const cusparseStatus_t fathom_status_ = (call);                                                 \
        if (fathom_status_ == CUSPARSE_STATUS_ALLOC_FAILED) throw ::fathom::gpu::OutOfMemory("cuda", 0, #call); \
        if (fathom_status_ != CUSPARSE_STATUS_SUCCESS)                                                   \
            throw ::fathom::gpu::CudaError(#call, cusparseGetErrorName(fathom_status_),                  \
                                           static_cast<int>(fathom_status_), __FILE__, __LINE__);        \
    } while (false)
