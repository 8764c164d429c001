// The CUDA backend's kernels. Their arithmetic is in gpu/shard_kernels.hpp, shared
// with the host loops that tests/gpu checks against the CPU backend.
#include <algorithm>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/detail/launch.hpp"

namespace fathom::gpu::detail {

namespace {

using namespace fathom::gpu::kernels;

constexpr int kThreads = 256;

/// Blocks for one thread per item, capped (the kernels loop with a grid stride).
unsigned int blocks_for(std::int64_t items) {
    const std::int64_t blocks = (items + kThreads - 1) / kThreads;
    return static_cast<unsigned int>(std::clamp<std::int64_t>(blocks, 1, 1 << 20));
}

__device__ inline std::int64_t global_thread() {
    return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

__global__ void row_stats_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                 std::int64_t rows, const std::uint8_t* gene_mask, double* total, std::int64_t* nnz,
                                 double* subset_total) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        row_stats_one(offsets, genes, values, gene_mask, row, total, nnz, subset_total);
}

/// One block per lane: rows in order, the row's entries shared by the block's threads
/// (distinct genes within a row, so no two threads write one partial at once).
__global__ void lane_stats_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                  const std::int64_t* bounds, std::int64_t num_genes, ValueRequest request,
                                  const std::uint8_t* row_mask, const std::int32_t* labels, std::int64_t width,
                                  double* lane_sum, double* lane_squares, std::int64_t* lane_nnz) {
    const std::int64_t lane = blockIdx.x;
    double* sum = lane_sum + lane * width;
    double* squares = lane_squares + lane * width;
    std::int64_t* nonzero = lane_nnz + lane * width;
    for (std::int64_t row = bounds[lane]; row < bounds[lane + 1]; ++row) {
        std::int64_t base = 0;
        if (labels != nullptr) {
            if (labels[row] < 0) continue;
            base = static_cast<std::int64_t>(labels[row]) * num_genes;
        } else if (row_mask != nullptr && row_mask[row] == 0) {
            continue;
        }
        for (std::int64_t entry = offsets[row] + threadIdx.x; entry < offsets[row + 1]; entry += blockDim.x)
            accumulate_entry(request_value(request, values[entry], row, genes[entry]), genes[entry], sum + base,
                             squares + base, nonzero + base);
        __syncthreads();
    }
}

/// Totals: lane partials added in lane order, one thread per output element.
__global__ void reduce_lanes_kernel(std::int64_t lanes, std::int64_t width, const double* lane_sum,
                                    const double* lane_squares, const std::int64_t* lane_nnz, double* sum,
                                    double* sum_squares, std::int64_t* nnz) {
    for (std::int64_t index = global_thread(); index < width; index += grid_stride()) {
        double total = 0.0, squares = 0.0;
        std::int64_t nonzero = 0;
        for (std::int64_t lane = 0; lane < lanes; ++lane) {
            total += lane_sum[lane * width + index];
            squares += lane_squares[lane * width + index];
            nonzero += lane_nnz[lane * width + index];
        }
        sum[index] = total;
        sum_squares[index] = squares;
        nnz[index] = nonzero;
    }
}

__global__ void gene_column_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                   std::int64_t rows, std::int32_t gene, float* out) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        out[row] = gene_value(offsets, genes, values, row, gene);
}

__global__ void scale_rows_kernel(const std::int64_t* offsets, float* values, std::int64_t rows, const double* factors) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        for (std::int64_t entry = offsets[row]; entry < offsets[row + 1]; ++entry)
            values[entry] = scale_value(values[entry], factors[row]);
}

__global__ void log1p_kernel(float* values, std::int64_t count) {
    for (std::int64_t entry = global_thread(); entry < count; entry += grid_stride()) values[entry] = log1p_value(values[entry]);
}

__global__ void check_counts_kernel(const float* values, std::int64_t count, int* not_counts) {
    for (std::int64_t entry = global_thread(); entry < count; entry += grid_stride())
        if (!is_count(values[entry])) atomicExch(not_counts, 1);
}

__global__ void count_kept_kernel(const std::int64_t* offsets, const std::int32_t* genes, std::int64_t rows,
                                  const std::int32_t* renumber, std::int64_t* counts) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        counts[row] = count_kept(offsets, genes, renumber, row);
}

__global__ void copy_kept_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                 std::int64_t rows, const std::int32_t* renumber, const std::int64_t* out_offsets,
                                 std::int32_t* out_genes, float* out_values) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        copy_kept(offsets, genes, values, renumber, row, out_offsets, out_genes, out_values);
}

__global__ void copy_rows_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                 const std::int64_t* source_rows, std::int64_t rows, const std::int64_t* out_offsets,
                                 std::int32_t* out_genes, float* out_values) {
    for (std::int64_t row = global_thread(); row < rows; row += grid_stride())
        copy_row(offsets, genes, values, source_rows, row, out_offsets, out_genes, out_values);
}

__global__ void fill_tile_kernel(const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                                 BlockTransform block, std::int64_t first_row, std::int64_t rows, std::int64_t width,
                                 double* tile) {
    for (std::int64_t local = global_thread(); local < rows; local += grid_stride())
        fill_standardized_row(offsets, genes, values, block, first_row + local, width, tile + local * width);
}

__global__ void widen_tile_offsets_kernel(const std::int64_t* offsets, std::int64_t first_row, std::int64_t rows,
                                          std::int64_t* tile_offsets) {
    for (std::int64_t local = global_thread(); local <= rows; local += grid_stride())
        tile_offsets[local] = tile_row_offset(offsets, first_row, local);
}

__global__ void widen_tile_entries_kernel(const std::int32_t* genes, const float* values, std::int64_t first_entry,
                                          std::int64_t entries, std::int64_t* columns, double* tile_values) {
    for (std::int64_t entry = global_thread(); entry < entries; entry += grid_stride())
        widen_tile_entry(genes, values, first_entry, entry, columns + entry, tile_values + entry);
}

}  // namespace

void launch_row_stats(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      std::int64_t rows, const std::uint8_t* gene_mask, double* total, std::int64_t* nnz,
                      double* subset_total) {
    if (rows <= 0) return;
    row_stats_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, values, rows, gene_mask, total, nnz,
                                                                 subset_total);
    FATHOM_CUDA_CHECK_LAUNCH("row_stats_kernel");
}

void launch_column_stats(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                         const std::int64_t* bounds, std::int64_t lanes, std::int64_t num_genes,
                         const ValueRequest& request, const std::uint8_t* row_mask, const std::int32_t* labels,
                         std::int64_t width, double* lane_sum, double* lane_squares, std::int64_t* lane_nnz, double* sum,
                         double* sum_squares, std::int64_t* nnz) {
    if (width <= 0) return;
    const auto partial_entries = static_cast<std::size_t>(lanes * width);
    if (lanes > 0) {
        FATHOM_CUDA_CHECK(cudaMemsetAsync(lane_sum, 0, partial_entries * sizeof(double), stream));
        FATHOM_CUDA_CHECK(cudaMemsetAsync(lane_squares, 0, partial_entries * sizeof(double), stream));
        FATHOM_CUDA_CHECK(cudaMemsetAsync(lane_nnz, 0, partial_entries * sizeof(std::int64_t), stream));
        lane_stats_kernel<<<static_cast<unsigned int>(lanes), kThreads, 0, stream>>>(
            offsets, genes, values, bounds, num_genes, request, row_mask, labels, width, lane_sum, lane_squares, lane_nnz);
        FATHOM_CUDA_CHECK_LAUNCH("lane_stats_kernel");
    }
    reduce_lanes_kernel<<<blocks_for(width), kThreads, 0, stream>>>(lanes, width, lane_sum, lane_squares, lane_nnz, sum,
                                                                    sum_squares, nnz);
    FATHOM_CUDA_CHECK_LAUNCH("reduce_lanes_kernel");
}

void launch_gene_column(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                        std::int64_t rows, std::int32_t gene, float* out) {
    if (rows <= 0) return;
    gene_column_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, values, rows, gene, out);
    FATHOM_CUDA_CHECK_LAUNCH("gene_column_kernel");
}

void launch_scale_rows(cudaStream_t stream, const std::int64_t* offsets, float* values, std::int64_t rows,
                       const double* factors) {
    if (rows <= 0) return;
    scale_rows_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, values, rows, factors);
    FATHOM_CUDA_CHECK_LAUNCH("scale_rows_kernel");
}

void launch_log1p(cudaStream_t stream, float* values, std::int64_t count) {
    if (count <= 0) return;
    log1p_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, count);
    FATHOM_CUDA_CHECK_LAUNCH("log1p_kernel");
}

void launch_check_counts(cudaStream_t stream, const float* values, std::int64_t count, int* not_counts) {
    if (count <= 0) return;
    check_counts_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, count, not_counts);
    FATHOM_CUDA_CHECK_LAUNCH("check_counts_kernel");
}

void launch_count_kept(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, std::int64_t rows,
                       const std::int32_t* renumber, std::int64_t* counts) {
    if (rows <= 0) return;
    count_kept_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, rows, renumber, counts);
    FATHOM_CUDA_CHECK_LAUNCH("count_kept_kernel");
}

void launch_copy_kept(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      std::int64_t rows, const std::int32_t* renumber, const std::int64_t* out_offsets,
                      std::int32_t* out_genes, float* out_values) {
    if (rows <= 0) return;
    copy_kept_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, values, rows, renumber, out_offsets,
                                                                 out_genes, out_values);
    FATHOM_CUDA_CHECK_LAUNCH("copy_kept_kernel");
}

void launch_copy_rows(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      const std::int64_t* source_rows, std::int64_t rows, const std::int64_t* out_offsets,
                      std::int32_t* out_genes, float* out_values) {
    if (rows <= 0) return;
    copy_rows_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, values, source_rows, rows, out_offsets,
                                                                 out_genes, out_values);
    FATHOM_CUDA_CHECK_LAUNCH("copy_rows_kernel");
}

void launch_fill_tile(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                      const BlockTransform& block, std::int64_t first_row, std::int64_t rows, std::int64_t width,
                      double* tile) {
    if (rows <= 0 || width <= 0) return;
    fill_tile_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(offsets, genes, values, block, first_row, rows, width,
                                                                 tile);
    FATHOM_CUDA_CHECK_LAUNCH("fill_tile_kernel");
}

void launch_widen_tile(cudaStream_t stream, const std::int64_t* offsets, const std::int32_t* genes, const float* values,
                       std::int64_t first_row, std::int64_t rows, std::int64_t first_entry, std::int64_t entries,
                       std::int64_t* tile_offsets, std::int64_t* tile_columns, double* tile_values) {
    if (rows <= 0) return;
    widen_tile_offsets_kernel<<<blocks_for(rows + 1), kThreads, 0, stream>>>(offsets, first_row, rows, tile_offsets);
    FATHOM_CUDA_CHECK_LAUNCH("widen_tile_offsets_kernel");
    if (entries <= 0) return;
    widen_tile_entries_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(genes, values, first_entry, entries, tile_columns,
                                                                            tile_values);
    FATHOM_CUDA_CHECK_LAUNCH("widen_tile_entries_kernel");
}

}  // namespace fathom::gpu::detail
