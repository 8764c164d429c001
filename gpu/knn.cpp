#include "gpu/knn.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/fault_injection.hpp"
#include "gpu/detail/launch.hpp"
#include "gpu/knn_kernels.hpp"

namespace fathom::gpu {

namespace {

/// Queries per block and points per GEMM tile: a 64k x 4k float tile is 1 GiB.
constexpr std::int64_t kQueryBlock = 65536;
constexpr std::int64_t kPointTile = 4096;

/// Device memory freed on scope exit; allocation failure is OutOfMemory.
template <typename T>
struct Buffer {
    T* data = nullptr;
    Buffer(std::int64_t count, int device) {
        if (count <= 0) return;
        const auto bytes = static_cast<std::size_t>(count) * sizeof(T);
        const cudaError_t status = testing::take_injected_allocation_failure()
                                       ? cudaErrorMemoryAllocation
                                       : cudaMalloc(reinterpret_cast<void**>(&data), bytes);
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            throw OutOfMemory("cuda:" + std::to_string(device), static_cast<std::int64_t>(bytes), "cudaMalloc (kNN)");
        }
        FATHOM_CUDA_CHECK(status);
    }
    ~Buffer() {
        if (data != nullptr) cudaFree(data);
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

/// Stream and cuBLAS handle of one device, released on scope exit.
struct DeviceContext {
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    explicit DeviceContext(int device) {
        FATHOM_CUDA_CHECK(cudaSetDevice(device));
        FATHOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        FATHOM_CUBLAS_CHECK(cublasCreate(&cublas));
        FATHOM_CUBLAS_CHECK(cublasSetStream(cublas, stream));
    }
    ~DeviceContext() {
        if (cublas != nullptr) cublasDestroy(cublas);
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    DeviceContext(const DeviceContext&) = delete;
    DeviceContext& operator=(const DeviceContext&) = delete;
};

/// Queries [query_begin, query_end) on one device.
void search_on_device(int device, const float* points, std::int64_t num_cells, int dims, int num_neighbors,
                      std::int64_t query_begin, std::int64_t query_end, std::int32_t* indices, float* distances,
                      JobContext& ctx) {
    DeviceContext context(device);
    const int capacity = kernels::knn_capacity(num_neighbors, num_cells);
    Buffer<float> points_device(num_cells * dims, device), norms(num_cells, device);
    FATHOM_CUDA_CHECK(cudaMemcpyAsync(points_device.data, points, static_cast<std::size_t>(num_cells * dims) * sizeof(float),
                                      cudaMemcpyHostToDevice, context.stream));
    detail::launch_squared_norms(context.stream, points_device.data, num_cells, dims, norms.data);
    const std::int64_t block = std::min(kQueryBlock, std::max<std::int64_t>(1, query_end - query_begin));
    const std::int64_t tile = std::min(kPointTile, num_cells);
    Buffer<float> dots(block * tile, device), scores(block * capacity, device), out_distances(block * num_neighbors, device);
    Buffer<std::int32_t> candidates(block * capacity, device), out_indices(block * num_neighbors, device);
    Buffer<int> counts(block, device);
    Buffer<double> scratch(block * capacity, device);
    const float one = 1.0f, zero = 0.0f;
    for (std::int64_t begin = query_begin; begin < query_end; begin += block) {
        const std::int64_t queries = std::min(block, query_end - begin);
        FATHOM_CUDA_CHECK(cudaMemsetAsync(counts.data, 0, static_cast<std::size_t>(queries) * sizeof(int), context.stream));
        for (std::int64_t point = 0; point < num_cells; point += tile) {
            ctx.checkpoint();
            const std::int64_t count = std::min(tile, num_cells - point);
            // dots (queries x count, column-major) = Q P^T: points are row-major, i.e.
            // column-major dims x n, so Q^T and P are plain column-major views.
            FATHOM_CUBLAS_CHECK(cublasSgemm(context.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(queries),
                                            static_cast<int>(count), dims, &one, points_device.data + begin * dims, dims,
                                            points_device.data + point * dims, dims, &zero, dots.data,
                                            static_cast<int>(queries)));
            detail::launch_screen_tile(context.stream, dots.data, norms.data, point, count, queries, capacity, scores.data,
                                       candidates.data, counts.data);
            if ((point / tile) % 16 == 15) FATHOM_CUDA_CHECK(cudaStreamSynchronize(context.stream));
        }
        detail::launch_rerank(context.stream, points_device.data, dims, begin, queries, candidates.data, counts.data,
                              scratch.data, num_neighbors, out_indices.data, out_distances.data);
        const auto rows = static_cast<std::size_t>(queries * num_neighbors);
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(indices + (begin - query_begin) * num_neighbors, out_indices.data,
                                          rows * sizeof(std::int32_t), cudaMemcpyDeviceToHost, context.stream));
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(distances + (begin - query_begin) * num_neighbors, out_distances.data,
                                          rows * sizeof(float), cudaMemcpyDeviceToHost, context.stream));
        FATHOM_CUDA_CHECK(cudaStreamSynchronize(context.stream));
    }
}

}  // namespace

void exact_knn(const float* points, std::int64_t num_cells, int dims, int num_neighbors, std::span<const int> devices,
               std::int32_t* indices, float* distances, JobContext& ctx) {
    if (devices.empty() || num_cells == 0) return;
    const auto parts = static_cast<std::int64_t>(devices.size());
    std::vector<std::exception_ptr> errors(devices.size());
    std::vector<std::thread> threads;
    for (std::int64_t part = 0; part < parts; ++part) {
        const std::int64_t begin = num_cells * part / parts, end = num_cells * (part + 1) / parts;
        threads.emplace_back([&, part, begin, end] {
            try {
                search_on_device(devices[static_cast<std::size_t>(part)], points, num_cells, dims, num_neighbors, begin, end,
                                 indices + begin * num_neighbors, distances + begin * num_neighbors, ctx);
            } catch (...) {
                errors[static_cast<std::size_t>(part)] = std::current_exception();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace fathom::gpu
