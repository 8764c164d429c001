#pragma once
/// The backends the conformance suite runs on. CPU always; CUDA in a build with
/// FATHOM_HAVE_CUDA, where it reports itself unavailable, so its cases skip with a
/// message, when no device is usable (ctest label `gpu`).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/Backend.hpp"
#include "core/backend/CpuBackend.hpp"
#include "gpu/devices.hpp"
#if defined(FATHOM_HAVE_CUDA)
#include "gpu/CudaBackend.hpp"
#endif

namespace fathom::test {

/// How to build one kind of backend over a host shard.
struct BackendFactory {
    std::string name;                                                   ///< "cpu", "cuda"
    std::function<std::unique_ptr<Backend>(CsrShard, int)> make;        ///< shard, index
    std::function<std::string()> unavailable_reason;                    ///< empty string = available
    std::function<std::string(int)> name_for;                           ///< Backend::name() of make(_, index)
};

inline const std::vector<BackendFactory>& backend_factories() {
    static const std::vector<BackendFactory> factories{
        {"cpu", [](CsrShard shard, int index) -> std::unique_ptr<Backend> {
             return std::make_unique<CpuBackend>(std::move(shard), index);
         },
         [] { return std::string(); }, [](int index) { return "cpu:" + std::to_string(index); }},
#if defined(FATHOM_HAVE_CUDA)
        // Index k becomes device k modulo the number of devices (tests ask for index 3).
        {"cuda", [](CsrShard shard, int index) -> std::unique_ptr<Backend> {
             const auto count = static_cast<int>(gpu::query_devices().devices.size());
             return std::make_unique<gpu::CudaBackend>(shard, count > 0 ? index % count : index);
         },
         [] {
             const auto query = gpu::query_devices();
             return query.devices.empty() ? query.message : std::string();
         },
         [](int index) {
             const auto count = static_cast<int>(gpu::query_devices().devices.size());
             return "cuda:" + std::to_string(count > 0 ? index % count : index);
         }},
#endif
    };
    return factories;
}

inline std::vector<std::string> backend_names() {
    std::vector<std::string> names;
    for (const auto& factory : backend_factories()) names.push_back(factory.name);
    return names;
}

inline const BackendFactory& backend_factory(const std::string& name) {
    for (const auto& factory : backend_factories())
        if (factory.name == name) return factory;
    throw std::invalid_argument("no backend factory named " + name);
}

}  // namespace fathom::test
