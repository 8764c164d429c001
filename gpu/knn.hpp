#pragma once
/// Exact k-nearest-neighbour search on CUDA devices: the queries split evenly across
/// the devices, the points replicated on each; a float screen by cuBLAS SGEMM tiles
/// and per-query sorted candidate lists, then a re-rank by the distance in double
/// (gpu/knn_kernels.hpp). Same contract as the CPU's exact search (core/algo/knn):
/// self first at 0, then increasing distance, ties by increasing index.
/// Public header: compiles without nvcc; usable in a build with FATHOM_HAVE_CUDA.
#include <cstdint>
#include <span>

#include "core/types/JobContext.hpp"

namespace fathom::gpu {

/// points: row-major num_cells x dims (float). Writes num_cells x num_neighbors
/// tables (row-major). Throws OutOfMemory / CudaError, Cancelled when ctx is cancelled.
void exact_knn(const float* points, std::int64_t num_cells, int dims, int num_neighbors, std::span<const int> devices,
               std::int32_t* indices, float* distances, JobContext& ctx);

}  // namespace fathom::gpu
