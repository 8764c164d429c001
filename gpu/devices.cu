#include <cuda_runtime.h>
#include <cusparse.h>

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

}  // namespace fathom::gpu
