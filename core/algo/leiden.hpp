#pragma once
/// Leiden clustering of the connectivities graph, as scanpy 1.9.6 `tl.leiden`
/// (leidenalg 0.9.1 RBConfigurationVertexPartition, i.e. modularity with a resolution,
/// weighted, iterated until the partition no longer changes), computed with igraph's
/// igraph_community_leiden.
#include <cstdint>
#include <vector>

#include "core/algo/knn_graph.hpp"

namespace fathom {

class JobContext;

/// Options of Leiden (scanpy names and defaults).
struct LeidenOptions {
    double resolution = 1.0;   ///< resolution_parameter gamma of modularity; > 0
    /// Passes of the Leiden algorithm; negative = until a pass changes nothing (scanpy's
    /// n_iterations=-1). 0 is not allowed.
    int num_iterations = -1;
    double beta = 0.01;        ///< randomness of the refinement step (leidenalg's default); > 0
    bool use_weights = true;   ///< scanpy's use_weights=True: edge weights = connectivities
    std::uint64_t seed = 0;    ///< random_state; igraph's default generator is seeded with it
};

/// Throws std::invalid_argument naming the field.
void validate(const LeidenOptions& options);

/// The clustering.
struct LeidenResult {
    /// Per cell: cluster in [0, num_clusters), numbered by decreasing size ("0" is the
    /// largest; ties by smallest member cell), as leidenalg's renumbering gives scanpy.
    std::vector<std::int32_t> labels;
    int num_clusters = 0;
    std::vector<std::int64_t> cluster_sizes;  ///< cells per cluster, decreasing
    /// Weighted modularity of the labels with the resolution (igraph_modularity); what
    /// leidenalg's RBConfigurationVertexPartition.quality() reports divided by 2m.
    double modularity = 0.0;
    int passes = 0;  ///< Leiden passes run
};

/// Leiden on a symmetric weighted graph (connectivities; the diagonal is ignored).
/// igraph optimises the constant Potts model unless given node weights: vertex
/// strengths as node weights and resolution / (2 m) as its resolution (m = total edge
/// weight) make its objective modularity. Deterministic for a seed. Throws
/// std::runtime_error when fathom was built without igraph.
LeidenResult leiden(const CsrGraph& graph, const LeidenOptions& options, JobContext& ctx);

/// Weighted modularity (with a resolution) of a labelling on a symmetric graph,
/// computed directly: sum_c [W_c / W - resolution (S_c / 2W)^2], W the total edge
/// weight, W_c the weight inside c, S_c the summed strengths of c. For tests and
/// reports; independent of igraph.
double modularity(const CsrGraph& graph, const std::vector<std::int32_t>& labels, double resolution = 1.0);

}  // namespace fathom
