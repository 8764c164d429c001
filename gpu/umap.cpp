#include "gpu/umap.hpp"

#include <algorithm>
#include <string>

#include <cuda_runtime_api.h>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/fault_injection.hpp"
#include "gpu/detail/launch.hpp"
#include "gpu/umap_kernels.hpp"

namespace fathom::gpu {

namespace {

/// Device memory freed on scope exit; allocation failure is OutOfMemory.
template <typename T>
struct Buffer {
    T* data = nullptr;
    Buffer(std::size_t count, int device) {
        if (count == 0) return;
        const cudaError_t status = testing::take_injected_allocation_failure()
                                       ? cudaErrorMemoryAllocation
                                       : cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(T));
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            throw OutOfMemory("cuda:" + std::to_string(device), static_cast<std::int64_t>(count * sizeof(T)), "cudaMalloc (UMAP)");
        }
        FATHOM_CUDA_CHECK(status);
    }
    ~Buffer() {
        if (data != nullptr) cudaFree(data);
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

template <typename T>
void upload(Buffer<T>& buffer, std::span<const T> host, cudaStream_t stream) {
    if (!host.empty())
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(buffer.data, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream));
}

struct Stream {
    cudaStream_t stream = nullptr;
    Stream() { FATHOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
    ~Stream() {
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
};

}  // namespace

void umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
              const std::function<void(int epochs_done)>& publish, int device, JobContext& ctx) {
    FATHOM_CUDA_CHECK(cudaSetDevice(device));
    Stream stream;
    const std::size_t edges = problem.tail.size();
    const auto positions = static_cast<std::size_t>(problem.num_vertices) * static_cast<std::size_t>(problem.dim);
    Buffer<std::int64_t> offsets(problem.offsets.size(), device);
    Buffer<std::int32_t> tail(edges, device);
    Buffer<double> per_sample(edges, device), per_negative(edges, device), next_sample(edges, device), next_negative(edges, device);
    Buffer<float> live(positions, device), before(positions, device);
    upload(offsets, problem.offsets, stream.stream);
    upload(tail, problem.tail, stream.stream);
    upload(per_sample, problem.epochs_per_sample, stream.stream);
    upload(per_negative, problem.epochs_per_negative_sample, stream.stream);
    upload(next_sample, problem.epochs_per_sample, stream.stream);
    upload(next_negative, problem.epochs_per_negative_sample, stream.stream);
    upload(live, std::span<const float>(embedding, positions), stream.stream);

    kernels::SgdArrays sgd;
    sgd.num_vertices = problem.num_vertices;
    sgd.dim = problem.dim;
    sgd.offsets = offsets.data;
    sgd.tail = tail.data;
    sgd.epochs_per_sample = per_sample.data;
    sgd.epochs_per_negative_sample = per_negative.data;
    sgd.next_sample = next_sample.data;
    sgd.next_negative = next_negative.data;
    sgd.a = problem.a;
    sgd.b = problem.b;
    sgd.gamma = problem.gamma;
    const std::int64_t block_size = std::max<std::int64_t>(1, problem.block_size);
    const auto download = [&] {
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(embedding, live.data, positions * sizeof(float), cudaMemcpyDeviceToHost, stream.stream));
        FATHOM_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
    };
    for (int epoch = 0; epoch < problem.num_epochs; ++epoch) {
        ctx.checkpoint();
        const float alpha = kernels::epoch_alpha(problem.learning_rate, epoch, problem.num_epochs);
        for (std::int64_t block_begin = 0; block_begin < problem.num_vertices; block_begin += block_size) {
            const std::int64_t block_end = std::min(problem.num_vertices, block_begin + block_size);
            const auto first = static_cast<std::size_t>(block_begin) * static_cast<std::size_t>(problem.dim);
            const auto count = static_cast<std::size_t>(block_end - block_begin) * static_cast<std::size_t>(problem.dim);
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(before.data + first, live.data + first, count * sizeof(float),
                                              cudaMemcpyDeviceToDevice, stream.stream));
            detail::launch_umap_block(stream.stream, sgd, live.data, before.data, block_begin, block_end, epoch, alpha,
                                      problem.seed);
        }
        const int done = epoch + 1;
        if (publish_every > 0 && done % publish_every == 0 && done < problem.num_epochs) {
            download();
            publish(done);
        } else if (done % 10 == 0) {
            FATHOM_CUDA_CHECK(cudaStreamSynchronize(stream.stream));  // keeps progress and cancel honest
        }
        ctx.report(static_cast<double>(done) / problem.num_epochs,
                   "epoch " + std::to_string(done) + "/" + std::to_string(problem.num_epochs) + " on cuda:" + std::to_string(device));
    }
    download();
}

}  // namespace fathom::gpu
