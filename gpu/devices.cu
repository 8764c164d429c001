#include <string>

#include <cuda_runtime.h>
#include <cusparse.h>

#include "core/types/errors.hpp"
#include "gpu/devices.hpp"

namespace fathom::gpu {

DeviceQuery query_devices() {
    DeviceQuery query;
    query.cuda_built = true;
    cudaRuntimeGetVersion(&query.runtime_version);
    if (cudaDriverGetVersion(&query.driver_version) != cudaSuccess) query.driver_version = 0;
    int major = 0, minor = 0, patch = 0;
    cusparseGetProperty(MAJOR_VERSION, &major);
    cusparseGetProperty(MINOR_VERSION, &minor);
    cusparseGetProperty(PATCH_LEVEL, &patch);
    query.cusparse_version = major * 1000 + minor * 100 + patch;

    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        query.message = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
        cudaGetLastError();  // clear the sticky error so later calls start clean
        return query;
    }
    for (int index = 0; index < count; ++index) {
        cudaDeviceProp properties{};
        if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) continue;
        DeviceInfo info;
        info.index = index;
        info.name = properties.name;
        info.total_memory_bytes = static_cast<std::int64_t>(properties.totalGlobalMem);
        info.compute_major = properties.major;
        info.compute_minor = properties.minor;
        info.multiprocessors = properties.multiProcessorCount;
        query.devices.push_back(info);
    }
    if (query.devices.empty()) query.message = "no usable CUDA device";
    return query;
}

DeviceReservation::DeviceReservation(int device, std::int64_t leave_free_bytes) : m_device(device) {
    const auto fail = [device](cudaError_t status) {
        cudaGetLastError();
        throw DeviceError("cuda:" + std::to_string(device) + ": cannot reserve memory: " + cudaGetErrorString(status));
    };
    cudaError_t status = cudaSetDevice(device);
    if (status != cudaSuccess) fail(status);
    std::size_t free_bytes = 0, total_bytes = 0;
    status = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (status != cudaSuccess) fail(status);
    const auto wanted = static_cast<std::int64_t>(free_bytes) - leave_free_bytes;
    if (wanted <= 0) return;
    status = cudaMalloc(&m_data, static_cast<std::size_t>(wanted));
    if (status != cudaSuccess) fail(status);
    m_bytes = wanted;
}

DeviceReservation::~DeviceReservation() {
    if (m_data == nullptr) return;
    cudaSetDevice(m_device);
    cudaFree(m_data);
}

}  // namespace fathom::gpu
