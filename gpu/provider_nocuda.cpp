#include <stdexcept>

#include "core/types/errors.hpp"
#include "gpu/devices.hpp"
#include "gpu/provider.hpp"

namespace fathom::gpu {

namespace {

/// A build without CUDA: no device is ever usable.
class NoCudaProvider final : public DeviceProvider {
public:
    DeviceResolution resolve(const DeviceSpec&) const override { return {{}, query_devices().message}; }
    std::unique_ptr<Backend> load(const RowBlockReader&, const RowRange&, std::span<const std::int64_t>, std::int64_t,
                                  int, JobContext&) const override {
        throw DeviceError("this build has no CUDA support");
    }
};

}  // namespace

std::shared_ptr<DeviceProvider> make_device_provider() { return std::make_shared<NoCudaProvider>(); }

}  // namespace fathom::gpu
