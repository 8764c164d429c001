#pragma once
/// The backends the conformance suite runs on. CPU always; a CUDA entry is added
/// here by the GPU backend (FATHOM_HAVE_CUDA) and reports itself unavailable, so its
/// cases skip with a message, when no device is usable.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/Backend.hpp"
#include "core/backend/CpuBackend.hpp"

namespace fathom::test {

/// How to build one kind of backend over a host shard.
struct BackendFactory {
    std::string name;                                                   ///< "cpu", "cuda"
    std::function<std::unique_ptr<Backend>(CsrShard, int)> make;        ///< shard, index
    std::function<std::string()> unavailable_reason;                    ///< empty string = available
};

inline const std::vector<BackendFactory>& backend_factories() {
    static const std::vector<BackendFactory> factories{
        {"cpu", [](CsrShard shard, int index) -> std::unique_ptr<Backend> {
             return std::make_unique<CpuBackend>(std::move(shard), index);
         },
         [] { return std::string(); }},
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
