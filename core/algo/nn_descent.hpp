#pragma once
/// Approximate k-nearest-neighbour graph of all points by NN-descent (Dong, Moses & Li
/// 2011, "Efficient k-nearest neighbor graph construction for generic similarity
/// measures", in the form pynndescent 0.5 gives it: new/old flags, sampled candidates,
/// reverse neighbours, early stop by delta) seeded by a random-projection forest. Used
/// by nearest_neighbors (KnnMethod::NnDescent), which re-ranks the candidates in double.
#include <cstdint>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom {

class JobContext;

namespace detail {

/// Longest neighbour list and largest leaf nn_descent takes.
inline constexpr int kNnDescentMaxList = 1024;
/// Most candidates nn_descent samples per point and round.
inline constexpr int kNnDescentMaxCandidates = 256;
/// Largest beam width of nn_descent's final graph search.
inline constexpr int kNnDescentMaxSearchEf = 4096;

/// Parameters of nn_descent (nn_descent throws std::invalid_argument when out of range).
struct NnDescentParams {
    int pool = 34;            ///< neighbours kept per point, in [1, min(num_cells - 1, kNnDescentMaxList)]
    int num_trees = 2;        ///< random-projection trees of the initial graph (>= 1)
    int leaf_size = 32;       ///< largest leaf of a tree, in [2, kNnDescentMaxList]; leaves are searched by brute force
    int max_candidates = 50;  ///< new (and old) candidates sampled per point and round, in [1, kNnDescentMaxCandidates]
    int max_iterations = 10;  ///< NN-descent rounds at most (>= 0)
    double delta = 0.001;     ///< stop when fewer than delta * num_cells * pool entries changed in a round
    /// Beam width of the final graph search (0 = none), in [0, kNnDescentMaxSearchEf]:
    /// every point's list is searched for again, best first, over the NN-descent graph
    /// made undirected (each list plus up to pool reverse neighbours), seeded from the
    /// point's own list, as HNSW searches its bottom layer. Raises the recall where
    /// NN-descent stalls (large inputs); each point reads only the frozen graph.
    int search_ef = 0;
    std::uint64_t seed = 0;   ///< trees and candidate sampling
};

/// Candidate neighbour lists of an approximate search (nn_descent, ivf_knn), before the
/// re-ranking that nearest_neighbors applies.
struct KnnCandidates {
    int pool = 0;                       ///< entries per point
    /// num_cells x pool row indices of `points` (in no particular order); -1 where fewer
    /// than pool neighbours were found. Never the point itself.
    std::vector<std::int32_t> indices;
    /// num_cells x pool squared euclidean distances matching `indices`, computed in
    /// double from the float coordinates (sum over the columns in order).
    std::vector<double> sq_distances;
    int iterations = 0;                 ///< rounds run (NN-descent rounds, IVF refinement passes)
};

/// The `pool` approximate nearest neighbours of every row of `points` (first num_dims
/// columns), euclidean. Points are first reordered by the leaf order of the first tree
/// (neighbours then sit close in memory); the search runs on a float copy with rows
/// padded for l2_padded_many. Deterministic: the result depends on the seed only, not
/// on the number of threads (every round's outcome is the `pool` smallest of a set of
/// proposals fixed at the start of the round, keyed by (float distance, index)).
KnnCandidates nn_descent(const DenseMatrix<float>& points, int num_dims, const NnDescentParams& params,
                               JobContext& ctx);

}  // namespace detail
}  // namespace fathom
