#pragma once
/// Launchers of the CUDA backend's kernels (gpu/kernels.cu). Every pointer is device
/// memory unless its name ends in _host. Launchers enqueue on `stream` and return at
/// once; they throw gpu::CudaError when a launch fails. C++17: nvcc compiles the
/// definitions, g++ the callers (gpu/CudaBackend.cpp).
#include <cstdint>

#include <cuda_runtime_api.h>

#include "gpu/shard_kernels.hpp"
#include "gpu/umap_kernels.hpp"

namespace fathom::gpu::detail {

/// Per-row totals, non-zeros and subset totals (gene_mask null = no subset).
void launch_row_stats(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      std::int64_t rows, const std::uint8_t* gene_mask, double* total, std::int64_t* nnz,
                      double* subset_total);

/// Column statistics over lanes (bounds: lanes + 1 row indices). Lane partials live in
/// lane_sum/lane_squares/lane_nnz (lanes x width each, zeroed here); the totals (width
/// each) are added in lane order. With labels (per row, -1 = skipped), width is
/// groups x num_genes and row r adds into group labels[r]'s partial row; without,
/// width is num_genes and row_mask (null = all) selects rows.
void launch_column_stats(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                         const std::int64_t* bounds, std::int64_t lanes, std::int64_t num_genes,
                         const kernels::ValueRequest& request, const std::uint8_t* row_mask, const std::int32_t* labels,
                         std::int64_t width, double* lane_sum, double* lane_squares, std::int64_t* lane_nnz, double* sum,
                         double* sum_squares, std::int64_t* nnz);

/// out[row] = value of `gene` in row (0 where not stored).
void launch_gene_column(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                        std::int64_t rows, std::int32_t gene, float* out);

/// values of row r *= factors[r] (one float32 rounding).
void launch_scale_rows(cudaStream_t stream, const std::int64_t* offsets, float* values, std::int64_t rows,
                       const double* factors);

/// values = log1p(values) in float32.
void launch_log1p(cudaStream_t stream, float* values, std::int64_t count);

/// Sets *not_counts to 1 when some value is not a raw count (kernels::is_count);
/// leaves it unchanged otherwise.
void launch_check_counts(cudaStream_t stream, const float* values, std::int64_t count, int* not_counts);

/// counts[row] = kept entries of row (renumber[g] >= 0).
void launch_count_kept(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, std::int64_t rows,
                       const std::int32_t* renumber, std::int64_t* counts);

/// Kept entries of every row, renumbered, written from out_offsets[row] on.
void launch_copy_kept(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      std::int64_t rows, const std::int32_t* renumber, const std::int64_t* out_offsets,
                      std::int32_t* out_genes, float* out_values);

/// Out row r = source row source_rows[r], for `rows` out rows.
void launch_copy_rows(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      const std::int64_t* source_rows, std::int64_t rows, const std::int64_t* out_offsets,
                      std::int32_t* out_genes, float* out_values);

/// Dense standardised tile: rows [first_row, first_row + rows) into tile (rows x width,
/// row-major; i.e. column-major width x rows for cuBLAS).
void launch_fill_tile(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      const kernels::BlockTransform& block, std::int64_t first_row, std::int64_t rows, std::int64_t width,
                      double* tile);

/// Rows [first_row, first_row + rows) as 64-bit double CSR for cuSPARSE: tile_offsets
/// (rows + 1, rebased to first_entry = offsets[first_row]), tile_columns and
/// tile_values (`entries` each).
void launch_widen_tile(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                       std::int64_t first_row, std::int64_t rows, std::int64_t first_entry, std::int64_t entries,
                       std::int64_t* tile_offsets, std::int64_t* tile_columns, double* tile_values);

// ---- exact kNN (gpu/knn.cu; arithmetic in gpu/knn_kernels.hpp) ----

/// norms[p] = squared norm of point p in float (points: row-major num_points x dims).
void launch_squared_norms(cudaStream_t stream, const float* points, std::int64_t num_points, int dims, float* norms);

/// Screens points [point_begin, point_begin + num_points) for `num_queries` queries:
/// dots is the column-major num_queries x num_points GEMM tile of q.p; each query's
/// sorted candidate list (scores/candidates, slot-major with stride num_queries,
/// counts per query) takes s = norms[p] - 2 q.p.
void launch_screen_tile(cudaStream_t stream, const float* dots, const float* norms, std::int64_t point_begin,
                        std::int64_t num_points, std::int64_t num_queries, int capacity, float* scores,
                        std::int32_t* candidates, int* counts);

/// Final neighbours of queries [query_begin, query_begin + num_queries) from their
/// candidates: out rows (num_queries x k) self first, then by double distance.
void launch_rerank(cudaStream_t stream, const float* points, int dims, std::int64_t query_begin, std::int64_t num_queries,
                   const std::int32_t* candidates, const int* counts, double* scratch, int num_neighbors,
                   std::int32_t* out_indices, float* out_distances);

// ---- UMAP SGD (gpu/umap.cu; arithmetic in gpu/umap_kernels.hpp) ----

/// One deterministic block: vertices [block_begin, block_end) updated in parallel,
/// reading the block from block_start and the others from live.
void launch_umap_block(cudaStream_t stream, const kernels::SgdArrays& sgd, float* live, const float* block_start,
                       std::int64_t block_begin, std::int64_t block_end, int epoch, float alpha, std::uint64_t seed);

}  // namespace fathom::gpu::detail
