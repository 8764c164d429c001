#pragma once
/// Options of Leiden clustering (core/algo/leiden.hpp).
#include <cstdint>

namespace fathom {

/// Which optimiser runs.
enum class LeidenImplementation {
    Leidenalg,  ///< leidenalg 0.9.1's Optimiser as scanpy runs it (same labels for a seed)
    Igraph,     ///< igraph_community_leiden (same objective, other random choices)
};

/// Options of Leiden (scanpy names and defaults).
struct LeidenOptions {
    double resolution = 1.0;   ///< resolution_parameter gamma of modularity; > 0
    /// Passes of the Leiden algorithm; negative = until a pass improves nothing (scanpy's
    /// n_iterations=-1; at most 1000 passes). 0 is not allowed.
    int num_iterations = -1;
    double beta = 0.01;        ///< randomness of igraph's refinement step (Igraph only); > 0
    bool use_weights = true;   ///< scanpy's use_weights=True: edge weights = connectivities
    std::uint64_t seed = 0;    ///< random_state: seeds the optimiser's mt19937 (leidenalg's set_rng_seed)
    LeidenImplementation implementation = LeidenImplementation::Leidenalg;
    /// Equal when every field is equal.
    friend bool operator==(const LeidenOptions&, const LeidenOptions&) = default;
};

}  // namespace fathom
