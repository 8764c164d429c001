#pragma once
/// The unclipped projection onto loadings as a sparse product, shared by every backend
/// (CpuBackend's row loop, CudaBackend's cuSPARSE SpMM) so that they start from the
/// same weights and offset:
///   scores = X_block * W - 1 offset^T,  W[c][k] = inv_std[c] * L[c][k],
///   offset[k] = sum over block columns c, in order, of (mean[c] * inv_std[c] + center[c]) * L[c][k].
/// Only stored entries contribute to X_block * W (implicit zeros are zeros of X).
#include <cstdint>
#include <vector>

#include "core/backend/Backend.hpp"

namespace fathom::backend_detail {

/// W (block columns x components, row-major) and the offset (components).
struct SparseProjection {
    std::vector<double> weights;
    std::vector<double> offset;
};

/// For an unclipped request whose sizes were checked (block_size block columns).
SparseProjection sparse_projection(const ProjectionRequest& request, std::int64_t block_size);

}  // namespace fathom::backend_detail
