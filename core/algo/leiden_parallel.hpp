#pragma once
/// A parallel Leiden (LeidenImplementation::Parallel), after GVE-Leiden (Sahu 2023,
/// "Fast Leiden Algorithm for Community Detection in Shared Memory Setting"): local
/// moving with vertex pruning, a greedy refinement of every community from singletons,
/// aggregation by the refined communities, repeated until a level merges nothing; the
/// passes repeat from the last partition until one no longer improves the quality.
/// Objective: modularity with a resolution (leidenalg's RBConfigurationVertexPartition on
/// a symmetric graph), so its quality is comparable with the faithful optimiser's.
///
/// Deterministic for any number of threads: nodes are taken in fixed-size batches in
/// node order; each node's best move is computed on TBB's threads against the partition
/// frozen at the batch's start, then the moves are applied one by one in node order, each
/// re-checked against the partition as it stands (a move that no longer gains is
/// dropped). Every sum is taken in a fixed order. No random numbers are drawn, so the seed
/// plays no part. Not leidenalg's labels: other node orders and no randomised refinement.
#include <cstdint>
#include <vector>

#include "core/algo/knn_graph.hpp"

namespace fathom {

class JobContext;

namespace detail {

/// What parallel_leiden_optimise returns.
struct ParallelLeidenPartition {
    /// Per cell: community in [0, num_communities), numbered by first cell. Every
    /// community is connected in the (symmetrised) graph.
    std::vector<std::int32_t> membership;
    int num_communities = 0;
    int passes = 0;        ///< passes run (each: levels of moving, refinement, aggregation)
    double quality = 0.0;  ///< modularity with the resolution on the symmetrised graph
};

/// Parallel Leiden on `graph`. The diagonal and zero entries are skipped; a graph whose
/// weights are not symmetric is optimised as (A + A^T) / 2. `use_weights` false gives
/// every edge weight 1. `num_iterations` < 0: passes until one improves the quality by
/// less than 1e-7 of it (at most `max_passes`); else that many passes. Cancellable.
/// Throws std::invalid_argument naming the entry for a negative or non-finite weight.
ParallelLeidenPartition parallel_leiden_optimise(const CsrGraph& graph, double resolution, int num_iterations, bool use_weights,
                                                 JobContext& ctx, int max_passes = 1000);

}  // namespace detail
}  // namespace fathom
