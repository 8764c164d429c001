#include <iostream>
#include <thread>

#include "app/cli/commands.hpp"
#include "gpu/devices.hpp"

namespace fathom::cli {

void add_devices_command(CLI::App& app, int& exit_code) {
    auto* command = app.add_subcommand("devices", "List CUDA devices, or say why the CPU backend will be used");
    command->callback([&exit_code] {
        exit_code = guarded([] {
            const gpu::DeviceQuery query = gpu::query_devices();
            std::cout << "CPU: available (reference backend, " << std::thread::hardware_concurrency()
                      << " hardware threads)\n";
            if (query.cuda_built) {
                std::cout << "CUDA: built with runtime " << query.runtime_version / 1000 << "."
                          << (query.runtime_version % 1000) / 10 << ", cuSPARSE " << query.cusparse_version
                          << ", driver " << (query.driver_version ? std::to_string(query.driver_version) : "none")
                          << "\n";
            }
            if (query.devices.empty()) {
                std::cout << "CUDA devices: none usable (" << query.message << "); the CPU backend will be used\n";
                return static_cast<int>(Ok);
            }
            for (const auto& device : query.devices) {
                std::cout << "cuda:" << device.index << "  " << device.name << "  "
                          << device.total_memory_bytes / (1024 * 1024) << " MiB  sm_" << device.compute_major
                          << device.compute_minor << "  " << device.multiprocessors << " SMs\n";
            }
            return static_cast<int>(Ok);
        });
    });
}

}  // namespace fathom::cli
