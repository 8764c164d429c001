#pragma once
/// Leiden clustering of the connectivities graph, as scanpy 1.9.6 `tl.leiden`
/// (leidenalg 0.9.1 RBConfigurationVertexPartition, i.e. modularity with a resolution,
/// weighted, iterated until a pass no longer improves it): by default leidenalg's
/// optimiser reproduced step for step (core/algo/leiden_optimiser.hpp), so that the
/// labels are scanpy's; optionally igraph's igraph_community_leiden.
#include <cstdint>
#include <vector>

#include "core/algo/knn_graph.hpp"
#include "core/types/leiden_options.hpp"

namespace fathom {

class JobContext;

/// Throws std::invalid_argument naming the field.
void validate(const LeidenOptions& options);

/// The clustering.
struct LeidenResult {
    /// Per cell: cluster in [0, num_clusters), numbered by decreasing size ("0" is the
    /// largest). Leidenalg: leidenalg's own numbering (ties by its community order), i.e.
    /// scanpy's labels; Igraph: ties by smallest member cell.
    std::vector<std::int32_t> labels;
    int num_clusters = 0;
    std::vector<std::int64_t> cluster_sizes;  ///< cells per cluster, decreasing
    /// Weighted modularity of the labels with the resolution (modularity() below for
    /// Leidenalg, igraph_modularity for Igraph); what leidenalg's
    /// RBConfigurationVertexPartition.quality() reports divided by 2m.
    double modularity = 0.0;
    int passes = 0;  ///< Leiden passes run (leidenalg's optimise_partition calls)
};

/// Leiden on a symmetric weighted graph (connectivities; the diagonal is ignored).
/// Leidenalg: the graph as scanpy hands it to leidenalg (every stored entry a directed
/// edge, row-major order), labels equal to scanpy's for the same graph and seed.
/// Igraph: igraph optimises the constant Potts model unless given node weights: vertex
/// strengths as node weights and resolution / (2 m) as its resolution (m = total edge
/// weight) make its objective modularity. Deterministic for a seed; cancellable. Throws
/// std::runtime_error when fathom was built without igraph (both use its generator).
LeidenResult leiden(const CsrGraph& graph, const LeidenOptions& options, JobContext& ctx);

/// Weighted modularity (with a resolution) of a labelling on a symmetric graph,
/// computed directly: sum_c [W_c / W - resolution (S_c / 2W)^2], W the total edge
/// weight, W_c the weight inside c, S_c the summed strengths of c. For tests and
/// reports; independent of igraph.
double modularity(const CsrGraph& graph, const std::vector<std::int32_t>& labels, double resolution = 1.0);

}  // namespace fathom
