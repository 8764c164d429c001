#pragma once
/// Argument checks shared by every Accelerator implementation, so that all of them
/// reject the same inputs with the same messages ("Accelerator::<operation>: ...",
/// std::invalid_argument). Each runs before the operation may decline.
#include <cstdint>
#include <span>

#include "core/backend/Accelerator.hpp"

namespace fathom::accelerator_checks {

/// num_dims in [1, points.cols()], num_neighbors in [1, points.rows()], fewer than
/// 2^31 rows.
void check_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors);

/// dim in [1, 8], num_epochs >= 0, block_size >= 1, offsets of num_vertices + 1
/// entries from 0, never decreasing, the per-edge arrays as long as the last offset,
/// and an embedding of num_vertices x dim.
void check_umap_sgd(const UmapSgdProblem& problem, const DenseMatrix<float>& embedding);

/// A square matrix of fewer than 2^31 rows and count in [1, rows].
void check_symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count);

/// offsets from 0 (at least one entry), never decreasing, columns and values as long as
/// the last offset, column indices in [0, rows).
void check_sparse_matrix(std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                         std::span<const double> values);

}  // namespace fathom::accelerator_checks
