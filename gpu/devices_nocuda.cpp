#include "core/types/errors.hpp"
#include "gpu/devices.hpp"

namespace fathom::gpu {

DeviceQuery query_devices() {
    DeviceQuery query;
    query.cuda_built = false;
    query.message = "this build has no CUDA support (configured with FATHOM_WITH_CUDA=OFF)";
    return query;
}

DeviceReservation::DeviceReservation(int device, std::int64_t) : m_device(device) {
    throw DeviceError("this build has no CUDA support");
}

DeviceReservation::~DeviceReservation() = default;

}  // namespace fathom::gpu
