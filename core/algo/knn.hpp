#pragma once
/// k-nearest-neighbour search on the replicated cells x components PCA matrix:
/// exact blocked brute force, or an approximate search: NN-descent seeded by a
/// random-projection forest (nn_descent.hpp) or an HNSW index (hnswlib). Queries are
/// split into partitions (one per device); each partition is searched independently
/// against all points and the result does not depend on the partitioning.
#include <cstdint>
#include <string>

#include "core/algo/knn_graph.hpp"
#include "core/types/DenseMatrix.hpp"
#include "core/types/knn_options.hpp"

namespace fathom {

class Accelerator;
class Comm;
class JobContext;

/// Name of a method as the CLI spells it: "auto", "exact", "hnsw", "nndescent", "ivf".
const char* knn_method_name(KnnMethod method) noexcept;

/// The method named `name` (knn_method_name's spelling); throws std::invalid_argument
/// naming `what` (e.g. "--knn-method") and the accepted names otherwise.
KnnMethod parse_knn_method(const std::string& name, const std::string& what);

/// Throws std::invalid_argument naming the field ("KnnOptions::num_neighbors must be >= 2")
/// when an option is out of range or does not fit a num_cells x num_dims input.
void validate(const KnnOptions& options, std::int64_t num_cells, std::int64_t num_dims);

/// Result of the neighbour search.
struct KnnResult {
    KnnGraph graph;                         ///< k neighbours per cell, self first
    KnnMethod method_used = KnnMethod::Exact;  ///< Exact, Hnsw, NnDescent or Ivf (never Auto)
    int num_dims = 0;                       ///< columns used (num_pcs)
    /// Mean fraction of the true k-1 non-self neighbours found, over recall_queries
    /// random cells; 1 for the exact method (NaN when approximate and not measured).
    double recall = 1.0;
    int recall_queries = 0;                 ///< cells the recall was measured on
    /// Exact method: queries whose float-precision candidate screen could not be
    /// certified and were recomputed in double over all points (diagnostic).
    std::int64_t exact_fallback_queries = 0;
    int nndescent_iterations = 0;           ///< NN-descent rounds run (0 for the other methods)
};

/// Nearest neighbours of every row of `points` (cells x components, e.g. X_pca) among
/// all rows, euclidean distance. Distances are computed in double from the float
/// coordinates and stored as float.
///
/// `accelerator` (may be null: the CPU searches): with method Exact or Auto, at any
/// number of cells, Accelerator::exact_knn searches instead of the CPU (e.g. on the
/// GPUs that hold the shards) under the contract of exact_neighbors; method_used is
/// then Exact. A decline leaves the search to the CPU.
KnnResult nearest_neighbors(const DenseMatrix<float>& points, const KnnOptions& options, JobContext& ctx,
                            const Accelerator* accelerator = nullptr);

/// nearest_neighbors over the ranks of `comm`, each holding the same `points` (no
/// accelerator): the exact search is split by queries, the IVF search shares its phases
/// (detail::ivf_knn), NN-descent and HNSW run on rank 0. Rank 0 returns the
/// one-process result bit for bit; the other ranks return a result without a graph
/// (num_cells 0). Collective: every rank calls it with the same points and options.
KnnResult nearest_neighbors(const DenseMatrix<float>& points, const KnnOptions& options, Comm& comm, JobContext& ctx);

/// Exact k nearest neighbours (self first) of the query rows [query_begin, query_end)
/// of `points` among all rows, using the first `num_dims` columns. One partition's
/// work: the rows of the returned table are the queries in order. Certified exact:
/// the blocked float screen (||q||^2 + ||x||^2 - 2 q.x by GEMM tiles) keeps a margin of
/// candidates, and a query whose margin cannot be proven by the float error bound is
/// recomputed in double over all points.
KnnGraph exact_neighbors(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::int64_t query_begin,
                         std::int64_t query_end, JobContext& ctx, std::int64_t* fallback_queries = nullptr);

/// The IVF probes used on num_cells cells: KnnOptions::ivf_probes, grown with the square
/// root of num_cells above KnnOptions::ivf_probes_scale_from (at most 256).
int ivf_probes_for(const KnnOptions& options, std::int64_t num_cells);

/// Mean over `sample` cells of |approx ∩ exact| / (k - 1) on the non-self neighbours.
double knn_recall(const KnnGraph& approximate, const KnnGraph& exact_rows, const std::vector<std::int64_t>& sample);

}  // namespace fathom
