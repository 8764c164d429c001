#pragma once
/// CUDA device discovery. Compiles without nvcc; without a CUDA build or driver it
/// reports that no device is usable so that callers fall back to the CPU backend.
#include <cstdint>
#include <string>
#include <vector>

namespace fathom::gpu {

/// One CUDA device as the runtime reports it.
struct DeviceInfo {
    int index = 0;
    std::string name;
    std::int64_t total_memory_bytes = 0;
    int compute_major = 0;
    int compute_minor = 0;
    int multiprocessors = 0;
};

/// Result of probing for CUDA devices. Never throws.
struct DeviceQuery {
    bool cuda_built = false;           ///< the binary was built with FATHOM_WITH_CUDA
    std::vector<DeviceInfo> devices;   ///< usable devices (empty when none)
    std::string message;               ///< why none is usable, or the runtime version
    int runtime_version = 0;           ///< e.g. 13000
    int driver_version = 0;            ///< 0 when no driver is installed
    int cusparse_version = 0;          ///< cuSPARSE library version linked in
};

/// Probes the CUDA runtime. Safe on machines without a driver or device.
DeviceQuery query_devices();

/// Takes device memory until destroyed, leaving about `leave_free_bytes` free on the
/// device: simulates a full device (out-of-memory tests, the GPU benchmark). Throws
/// DeviceError when the device cannot be used (always, in a build without CUDA).
class DeviceReservation {
public:
    DeviceReservation(int device, std::int64_t leave_free_bytes);
    ~DeviceReservation();
    DeviceReservation(const DeviceReservation&) = delete;
    DeviceReservation& operator=(const DeviceReservation&) = delete;
    std::int64_t reserved_bytes() const noexcept { return m_bytes; }

private:
    void* m_data = nullptr;
    int m_device = 0;
    std::int64_t m_bytes = 0;
};

}  // namespace fathom::gpu
