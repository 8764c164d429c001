#include "gpu/devices.hpp"

namespace fathom::gpu {

DeviceQuery query_devices() {
    DeviceQuery query;
    query.cuda_built = false;
    query.message = "this build has no CUDA support (configured with FATHOM_WITH_CUDA=OFF)";
    return query;
}

}  // namespace fathom::gpu
