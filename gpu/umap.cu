// The CUDA kernel of UMAP's deterministic SGD: one thread per vertex of a block.
// Arithmetic in gpu/umap_kernels.hpp, shared with the host loop tests/gpu checks
// against the CPU's deterministic UMAP.
#include <algorithm>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/detail/launch.hpp"

namespace fathom::gpu::detail {

namespace {

constexpr int kThreads = 128;

__global__ void umap_block_kernel(kernels::SgdArrays sgd, float* live, const float* block_start, std::int64_t block_begin,
                                  std::int64_t block_end, int epoch, float alpha, std::uint64_t seed) {
    const std::int64_t vertex = block_begin + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (vertex >= block_end) return;
    kernels::process_vertex(sgd, live, block_start, block_begin, block_end, vertex, epoch, alpha, seed);
}

}  // namespace

void launch_umap_block(cudaStream_t stream, const kernels::SgdArrays& sgd, float* live, const float* block_start,
                       std::int64_t block_begin, std::int64_t block_end, int epoch, float alpha, std::uint64_t seed) {
    const std::int64_t count = block_end - block_begin;
    if (count <= 0) return;
    const auto blocks = static_cast<unsigned int>((count + kThreads - 1) / kThreads);
    umap_block_kernel<<<blocks, kThreads, 0, stream>>>(sgd, live, block_start, block_begin, block_end, epoch, alpha, seed);
    FATHOM_CUDA_CHECK_LAUNCH("umap_block_kernel");
}

}  // namespace fathom::gpu::detail
