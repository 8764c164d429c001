#pragma once
/// The CUDA device provider handed to the engine (EngineConfig::device_provider).
/// Compiles without nvcc; in a build without CUDA it resolves every spec to no device,
/// with the reason, so the engine runs on the CPU and says why.
#include <memory>

#include "core/backend/DeviceProvider.hpp"

namespace fathom::gpu {

/// CUDA devices from gpu::query_devices(), shards as CudaBackend.
std::shared_ptr<DeviceProvider> make_device_provider();

}  // namespace fathom::gpu
