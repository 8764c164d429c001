#pragma once
/// Approximate k-nearest-neighbour graph of all points by an inverted-file search
/// refined on the graph. The points are clustered by k-means (Lloyd, on a sample);
/// every point is compared, in dense dot-product tiles, with the members of its
/// `probes` nearest clusters; then every list is improved by its neighbours' neighbours.
/// Used by nearest_neighbors (KnnMethod::Ivf), which re-ranks the candidates in double.
#include <cstdint>
#include <vector>

#include "core/algo/nn_descent.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

class Comm;
class JobContext;

namespace detail {

/// Most clusters an ivf_knn point probes.
inline constexpr int kIvfMaxProbes = 256;

/// Parameters of ivf_knn (ivf_knn throws std::invalid_argument when out of range).
struct IvfParams {
    int pool = 34;                  ///< neighbours kept per point, in [1, min(num_cells - 1, kNnDescentMaxList)]
    int cluster_size = 256;         ///< mean points per k-means cluster (>= 1): num_cells / cluster_size clusters
    int probes = 16;                ///< nearest clusters searched per point, in [1, kIvfMaxProbes]
    int kmeans_iterations = 8;      ///< Lloyd iterations (>= 0)
    int training_per_cluster = 48;  ///< k-means sample size per cluster (>= 1)
    /// From this many clusters on (0 = never), k-means runs in two levels: about
    /// sqrt(clusters) coarse clusters of the sample, each then split into its share of the
    /// clusters; training then costs sample x 2 sqrt(clusters) distances per Lloyd
    /// iteration instead of sample x clusters (at 1.3M cells and 5078 clusters, 36x less).
    /// On the 1.3M-cell synthetic benchmark (47 probes) the recall went from 0.976 to
    /// 0.980 and the kNN step from 121 to 109 CPU s with the one-pass probe selection;
    /// below 1024 clusters (the 100k-cell set: 390) the training is flat, as before.
    int two_level_from = 1024;
    /// With a two-level k-means (two_level_from), a point's probes are searched among the
    /// centres of its nearest assign_groups coarse groups only (and further groups in
    /// order while those hold fewer centres than probes); 0 = among all centres. (>= 0)
    int assign_groups = 8;
    int refine_rounds = 1;          ///< neighbours-of-neighbours passes after the search (>= 0)
    /// Refinement: a list is merged with the first refine_fanout entries of the lists of
    /// its first refine_fanout neighbours (>= 1; at most pool are used).
    int refine_fanout = 10;
    /// Refinement: reverse neighbours joined per point besides the refine_fanout forward
    /// ones: the nearest of the points whose first refine_fanout entries hold it (>= 0;
    /// 0 = forward neighbours only).
    int refine_reverse = 10;
    std::uint64_t seed = 0;         ///< k-means sample and initial centres
};

/// Means of the first num_dims columns of `points`, summed in double in row order (the
/// centre the float screens of the exact and IVF searches subtract; 0 rows: zeros).
std::vector<double> column_means(const DenseMatrix<float>& points, int num_dims);

/// The `pool` approximate nearest neighbours of every row of `points` (first num_dims
/// columns), euclidean, in the layout nn_descent returns (iterations = refine rounds
/// run). Deterministic: the result depends on the seed only, not on the threads.
///
/// `comm` (may be null: one process): the ranks of a run, each holding the same
/// `points`, share the work: every rank computes the same clusters, then assigns its
/// share of the points to them, searches its share of the clusters and refines its share
/// of the lists; the shares are exchanged in rank order (all_gather) between the phases,
/// and the lists go to rank 0 at the end. Every point's list depends only on the
/// clusters and the previous phase's lists, so rank 0's result is the one-process result
/// bit for bit; the other ranks return an empty result (pool 0, no entries).
KnnCandidates ivf_knn(const DenseMatrix<float>& points, int num_dims, const IvfParams& params, JobContext& ctx,
                      Comm* comm = nullptr);

}  // namespace detail
}  // namespace fathom
