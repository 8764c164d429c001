// Kernels of the CUDA exact kNN. Arithmetic in gpu/knn_kernels.hpp, shared with the
// host loop that tests/gpu checks against the CPU's exact search.
#include <algorithm>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/detail/launch.hpp"
#include "gpu/knn_kernels.hpp"

namespace fathom::gpu::detail {

namespace {

using namespace fathom::gpu::kernels;

constexpr int kThreads = 256;

unsigned int blocks_for(std::int64_t items) {
    return static_cast<unsigned int>(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, 1 << 20));
}

__global__ void squared_norms_kernel(const float* points, std::int64_t num_points, int dims, float* norms) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t point = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; point < num_points; point += stride)
        norms[point] = squared_norm(points, dims, point);
}

/// One thread per query; reads of the tile are coalesced (queries are its fast axis).
__global__ void screen_tile_kernel(const float* dots, const float* norms, std::int64_t point_begin, std::int64_t num_points,
                                   std::int64_t num_queries, int capacity, float* scores, std::int32_t* candidates,
                                   int* counts) {
    const std::int64_t query = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (query >= num_queries) return;
    int count = counts[query];
    for (std::int64_t point = 0; point < num_points; ++point) {
        const float score = norms[point_begin + point] - 2.0f * dots[point * num_queries + query];
        count = insert_candidate(score, static_cast<std::int32_t>(point_begin + point), scores + query, candidates + query,
                                 count, capacity, num_queries);
    }
    counts[query] = count;
}

__global__ void rerank_kernel(const float* points, int dims, std::int64_t query_begin, std::int64_t num_queries,
                              const std::int32_t* candidates, const int* counts, double* scratch, int num_neighbors,
                              std::int32_t* out_indices, float* out_distances) {
    const std::int64_t local = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (local >= num_queries) return;
    rerank_candidates(points, dims, query_begin + local, candidates + local, counts[local], num_queries, scratch + local,
                      num_neighbors, out_indices + local * num_neighbors, out_distances + local * num_neighbors);
}

}  // namespace

void launch_squared_norms(cudaStream_t stream, const float* points, std::int64_t num_points, int dims, float* norms) {
    if (num_points <= 0) return;
    squared_norms_kernel<<<blocks_for(num_points), kThreads, 0, stream>>>(points, num_points, dims, norms);
    FATHOM_CUDA_CHECK_LAUNCH("squared_norms_kernel");
}

void launch_screen_tile(cudaStream_t stream, const float* dots, const float* norms, std::int64_t point_begin,
                        std::int64_t num_points, std::int64_t num_queries, int capacity, float* scores,
                        std::int32_t* candidates, int* counts) {
    if (num_queries <= 0 || num_points <= 0) return;
    screen_tile_kernel<<<blocks_for(num_queries), kThreads, 0, stream>>>(dots, norms, point_begin, num_points, num_queries,
                                                                         capacity, scores, candidates, counts);
    FATHOM_CUDA_CHECK_LAUNCH("screen_tile_kernel");
}

void launch_rerank(cudaStream_t stream, const float* points, int dims, std::int64_t query_begin, std::int64_t num_queries,
                   const std::int32_t* candidates, const int* counts, double* scratch, int num_neighbors,
                   std::int32_t* out_indices, float* out_distances) {
    if (num_queries <= 0) return;
    rerank_kernel<<<blocks_for(num_queries), kThreads, 0, stream>>>(points, dims, query_begin, num_queries, candidates,
                                                                    counts, scratch, num_neighbors, out_indices,
                                                                    out_distances);
    FATHOM_CUDA_CHECK_LAUNCH("rerank_kernel");
}

}  // namespace fathom::gpu::detail
