#pragma once
/// The Leiden optimiser of leidenalg 0.9.1 (the one scanpy 1.9.6's `tl.leiden` runs),
/// reimplemented on flat arrays: same objective (RBConfigurationVertexPartition, i.e.
/// modularity with a resolution, on the graph as a directed one with both directions of
/// every edge, as scanpy builds it), same random stream (igraph's mt19937 seeded with the
/// seed, drawn with igraph_rng_get_integer exactly where leidenalg draws), same node
/// orders, tie-breaking, community numbering and floating-point summation order, so
/// that on the same graph it returns scanpy's labels. Used by leiden(); exposed for
/// benchmarks and tests.
#include <cstdint>
#include <vector>

#include "core/algo/knn_graph.hpp"

namespace fathom {

class JobContext;

namespace detail {

/// What leidenalg's `find_partition(g, RBConfigurationVertexPartition, weights=...,
/// n_iterations=..., seed=..., resolution_parameter=...)` returns.
struct LeidenalgPartition {
    /// Per cell: community in [0, num_communities), numbered by decreasing size (ties:
    /// leidenalg's order), as leidenalg's renumber_communities leaves them.
    std::vector<std::int32_t> membership;
    int num_communities = 0;
    int passes = 0;             ///< Optimiser.optimise_partition iterations run
    double improvement = 0.0;   ///< summed quality improvement of all passes (unscaled)
};

/// leidenalg's Optimiser on `graph` (symmetric or not; every stored off-diagonal entry
/// with a non-zero value is a directed edge row -> column, in row-major order, which is
/// how scanpy's get_igraph_from_adjacency(directed=True) numbers them; the diagonal is
/// skipped). `use_weights` false gives every edge weight 1. `num_iterations` < 0 runs
/// passes until one improves nothing (leidenalg's n_iterations=-1), at most
/// `max_passes`. Cancellable (JobContext::checkpoint every few thousand node visits).
/// The aggregate graphs are built, and separate communities refined, on TBB's threads;
/// every decision and every floating-point sum is the same for any number of threads.
/// With `renumber_for_locality`, a graph with symmetric weights is renumbered internally
/// in breadth-first order; the membership is the same either way (every order, sum and
/// tie-break is taken in leidenalg's numbering). Off by default: on 1.3M nodes (2 cores,
/// 32 MB L3) it made the refinement 3.5 s faster but summing in leidenalg's edge order
/// over the scattered rows and the extra copy of the graph cost more (73 s of CPU
/// without, 78 s with; `bench_leiden --copies 13 --locality both`).
/// Needs igraph (its random generator); throws std::runtime_error without it.
LeidenalgPartition leidenalg_optimise(const CsrGraph& graph, double resolution, int num_iterations, bool use_weights,
                                      std::uint64_t seed, JobContext& ctx, int max_passes = 1000,
                                      bool renumber_for_locality = false);

}  // namespace detail
}  // namespace fathom
