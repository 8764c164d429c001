#pragma once
/// UMAP's deterministic SGD on one CUDA device (DeviceProvider::umap_sgd): the graph,
/// schedule and embedding stay on the device for every epoch; one kernel launch per
/// deterministic block updates the block's vertices in parallel (gpu/umap_kernels.hpp,
/// the CPU's arithmetic). Public header: compiles without nvcc; usable in a build with
/// FATHOM_HAVE_CUDA.
#include <functional>

#include "core/backend/DeviceProvider.hpp"

namespace fathom::gpu {

/// Runs every epoch of `problem` on `device`, updating `embedding` (num_vertices x dim)
/// in place; downloads it and calls publish(epochs_done) every publish_every epochs
/// (0 = never). Throws OutOfMemory / CudaError, Cancelled.
void umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
              const std::function<void(int epochs_done)>& publish, int device, JobContext& ctx);

}  // namespace fathom::gpu
