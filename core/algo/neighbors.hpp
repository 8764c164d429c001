#pragma once
/// scanpy 1.9.6 `pp.neighbors(method='umap', metric='euclidean')` on the replicated
/// cells x components matrix: kNN search, then obsp['distances'] and
/// obsp['connectivities'].
#include "core/algo/connectivities.hpp"
#include "core/algo/knn.hpp"
#include "core/algo/knn_graph.hpp"
#include "core/types/DenseMatrix.hpp"
#include "core/types/neighbors_options.hpp"

namespace fathom {

class Accelerator;
class JobContext;

/// Throws std::invalid_argument naming the field.
void validate(const NeighborsOptions& options, std::int64_t num_cells, std::int64_t num_dims);

/// What pp.neighbors stores, plus the kNN table and search diagnostics.
struct NeighborsResult {
    KnnResult knn;              ///< k neighbours per cell (self first), method used, recall
    CsrGraph distances;         ///< obsp['distances']: k-1 non-self neighbours per row
    CsrGraph connectivities;    ///< obsp['connectivities']: symmetric fuzzy graph
    std::vector<float> sigmas;  ///< per cell smoothing scale (umap's sigmas)
    std::vector<float> rhos;    ///< per cell nearest-neighbour distance (umap's rhos)
};

/// Runs nearest_neighbors (with `accelerator`, which may be null), distances_graph and
/// fuzzy_simplicial_set in turn.
NeighborsResult neighbors(const DenseMatrix<float>& points, const NeighborsOptions& options, JobContext& ctx,
                          const Accelerator* accelerator = nullptr);

/// distances_graph and fuzzy_simplicial_set of a kNN result found elsewhere (the shares
/// of an exact search gathered from several processes): what neighbors() returns for the
/// same table.
NeighborsResult neighbors_from_knn(KnnResult knn, const NeighborsOptions& options, JobContext& ctx);

}  // namespace fathom
