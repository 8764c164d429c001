#pragma once
/// Dense and sparse linear algebra of the CUDA backend outside the shards: PCA's
/// symmetric eigendecomposition (cuSOLVER) and the sparse products of the spectral
/// initialisation (cuSPARSE SpMM). Public header: compiles without nvcc; usable in a
/// build with FATHOM_HAVE_CUDA. Every call is checked (gpu::CudaError,
/// gpu::OutOfMemory).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/backend/DeviceProvider.hpp"

namespace fathom::gpu {

/// The `count` largest eigenpairs of the symmetric n x n `matrix` (column-major; for a
/// symmetric matrix row-major is the same) on `device`, by cusolverDnDsyevdx (eigenvalue
/// range by index, upper triangle): ascending_values gets `count` values in ascending
/// order and column_major_vectors the n x count eigenvectors, column j for value j.
/// Throws std::invalid_argument for bad sizes, OutOfMemory, CudaError (a solver that
/// did not converge: info != 0), Cancelled.
void symmetric_top_eigenpairs(const double* matrix, std::int64_t n, int count, int device,
                              std::vector<double>& ascending_values, std::vector<double>& column_major_vectors,
                              JobContext& ctx);

/// Uploads a square CSR matrix (int64 offsets, int32 columns widened to int64 on the
/// device, double values) to `device` for cuSPARSE SpMM products with host vectors.
/// Throws std::invalid_argument for inconsistent arrays, OutOfMemory, CudaError.
std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                         std::span<const std::int32_t> columns,
                                                         std::span<const double> values, int device);

}  // namespace fathom::gpu
