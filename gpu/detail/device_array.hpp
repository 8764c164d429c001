#pragma once
/// Device memory of the CUDA backend: an owning array whose failed allocation throws
/// gpu::OutOfMemory naming the device and size (and honours the test hook of
/// gpu/fault_injection.hpp), and host <-> device copies on a stream. nvcc and g++.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "gpu/detail/cuda_check.hpp"
#include "gpu/fault_injection.hpp"

namespace fathom::gpu::detail {

/// Device memory for `count` elements of T; frees on destruction. A failed allocation
/// throws OutOfMemory naming the device and the size.
template <typename T>
class DeviceArray {
public:
    DeviceArray() = default;
    DeviceArray(std::int64_t count, int device) : m_count(count) {
        if (count <= 0) return;
        const auto bytes = static_cast<std::size_t>(count) * sizeof(T);
        // The test hook (gpu/fault_injection.hpp) stands in for a full device.
        const cudaError_t status = testing::take_injected_allocation_failure()
                                       ? cudaErrorMemoryAllocation
                                       : cudaMalloc(reinterpret_cast<void**>(&m_data), bytes);
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            m_data = nullptr;
            throw OutOfMemory("cuda:" + std::to_string(device), static_cast<std::int64_t>(bytes), "cudaMalloc");
        }
        FATHOM_CUDA_CHECK(status);
    }
    ~DeviceArray() {
        if (m_data != nullptr) cudaFree(m_data);
    }
    DeviceArray(DeviceArray&& other) noexcept : m_data(std::exchange(other.m_data, nullptr)), m_count(std::exchange(other.m_count, 0)) {}
    DeviceArray& operator=(DeviceArray&& other) noexcept {
        if (this != &other) {
            if (m_data != nullptr) cudaFree(m_data);
            m_data = std::exchange(other.m_data, nullptr);
            m_count = std::exchange(other.m_count, 0);
        }
        return *this;
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    T* data() noexcept { return m_data; }
    const T* data() const noexcept { return m_data; }
    std::int64_t size() const noexcept { return m_count; }
    std::int64_t bytes() const noexcept { return m_count * static_cast<std::int64_t>(sizeof(T)); }

private:
    T* m_data = nullptr;
    std::int64_t m_count = 0;
};

/// Uploads a host span (empty = no allocation, null pointer).
template <typename T>
DeviceArray<T> upload(std::span<const T> host, int device, cudaStream_t stream) {
    DeviceArray<T> array(static_cast<std::int64_t>(host.size()), device);
    if (!host.empty())
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(array.data(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream));
    return array;
}

template <typename T>
void download(std::vector<T>& host, const T* device_data, std::int64_t count, cudaStream_t stream) {
    host.resize(static_cast<std::size_t>(count));
    if (count > 0)
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(host.data(), device_data, static_cast<std::size_t>(count) * sizeof(T),
                                          cudaMemcpyDeviceToHost, stream));
}

}  // namespace fathom::gpu::detail
