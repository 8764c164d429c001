#include "gpu/errors.hpp"

#include <atomic>
#include <utility>

#include "gpu/fault_injection.hpp"

namespace fathom::gpu {

namespace {

std::string describe(const std::string& device, const std::string& call, const std::string& status, int code,
                     const std::string& file, int line) {
    std::string text = device.empty() ? std::string() : device + ": ";
    text += call + " failed: " + status + " (" + std::to_string(code) + ")";
    if (!file.empty()) text += " at " + file + ":" + std::to_string(line);
    return text;
}

}  // namespace

CudaError::CudaError(std::string call, std::string status, int code, std::string file, int line, std::string device)
    : DeviceError(describe(device, call, status, code, file, line)),
      m_call(std::move(call)),
      m_status(std::move(status)),
      m_code(code),
      m_file(std::move(file)),
      m_line(line) {}

OutOfMemory::OutOfMemory(std::string device, std::int64_t requested_bytes, std::string call)
    : DeviceOutOfMemory(device + ": GPU out of memory (" + call + " of " + std::to_string(requested_bytes >> 20) +
                        " MiB)"),
      m_requested_bytes(requested_bytes) {}

namespace testing {

namespace {
std::atomic<int> g_failing_allocations{0};
}  // namespace

void fail_next_device_allocations(int count) { g_failing_allocations.store(count > 0 ? count : 0); }

bool take_injected_allocation_failure() noexcept {
    int armed = g_failing_allocations.load();
    while (armed > 0)
        if (g_failing_allocations.compare_exchange_weak(armed, armed - 1)) return true;
    return false;
}

int pending_injected_allocation_failures() noexcept { return g_failing_allocations.load(); }

}  // namespace testing

}  // namespace fathom::gpu
