#pragma once
/// Options of Leiden clustering (core/algo/leiden.hpp).
#include <cstdint>

namespace fathom {

/// Which optimiser runs (the settings' `flavor`). Only Leidenalg gives scanpy's labels;
/// the others are chosen explicitly, never in its place.
enum class LeidenImplementation {
    Leidenalg,  ///< leidenalg 0.9.1's Optimiser as scanpy runs it (same labels for a seed); sequential
    Igraph,     ///< igraph_community_leiden (same objective, other random choices)
    /// Parallel Leiden after GVE-Leiden (core/algo/leiden_parallel.hpp): same objective,
    /// on every thread; deterministic at any thread count; the seed is not used.
    Parallel,
};

/// Options of Leiden (scanpy names and defaults).
struct LeidenOptions {
    double resolution = 1.0;   ///< resolution_parameter gamma of modularity; > 0
    /// Passes of the Leiden algorithm; negative = until a pass improves nothing (scanpy's
    /// n_iterations=-1; at most 1000 passes). 0 is not allowed.
    int num_iterations = -1;
    double beta = 0.01;        ///< randomness of igraph's refinement step (Igraph only); > 0
    bool use_weights = true;   ///< scanpy's use_weights=True: edge weights = connectivities
    std::uint64_t seed = 0;    ///< random_state: seeds the optimiser's mt19937 (leidenalg's set_rng_seed; not Parallel)
    LeidenImplementation implementation = LeidenImplementation::Leidenalg;
    /// Equal when every field is equal.
    friend bool operator==(const LeidenOptions&, const LeidenOptions&) = default;
};

}  // namespace fathom
