#pragma once
/// The fuzzy neighbourhood graph (obsp['connectivities']) and the kNN distance graph
/// (obsp['distances']) exactly as scanpy 1.9.6 `_compute_connectivities_umap` builds
/// them from the kNN table with umap-learn 0.5.3 `fuzzy_simplicial_set`.
#include <vector>

#include "core/algo/knn_graph.hpp"
#include "core/types/connectivities_options.hpp"

namespace fathom {

class JobContext;

/// Throws std::invalid_argument naming the field.
void validate(const ConnectivitiesOptions& options);

/// The symmetric fuzzy graph plus the per-cell smoothing parameters.
struct ConnectivitiesResult {
    /// num_cells x num_cells, symmetric, zero diagonal, canonical CSR, float32 weights in (0, 1].
    CsrGraph connectivities;
    std::vector<float> sigmas;  ///< per cell: the smoothing scale found by the binary search
    std::vector<float> rhos;    ///< per cell: distance to the nearest non-self neighbour (local_connectivity = 1)
};

/// umap-learn 0.5.3 `fuzzy_simplicial_set` on a precomputed kNN table (self included
/// in column 0, as scanpy passes it):
/// - smooth_knn_dist: rho_i from the positive distances (local_connectivity
///   interpolation), sigma_i by a 64-step binary search until
///   |sum_{j>=1} exp(-max(0, d_ij - rho_i)/sigma_i) - log2(k)| < 1e-5, then floored at
///   1e-3 * mean_j d_ij (or 1e-3 * the mean over all cells when rho_i = 0);
/// - compute_membership_strengths: w_ij = exp(-(d_ij - rho_i)/sigma_i), 1 when
///   d_ij <= rho_i or sigma_i = 0, 0 for self; zeros dropped;
/// - symmetrisation mix * (A + A^T - A o A^T) + (1 - mix) * A o A^T in float32, as scipy
///   evaluates it on float32 matrices; zeros dropped.
ConnectivitiesResult fuzzy_simplicial_set(const KnnGraph& knn, const ConnectivitiesOptions& options, JobContext& ctx);

/// scanpy 1.9.6 `_get_sparse_matrix_from_indices_distances_umap`: the k-1 non-self
/// neighbours of every row with their distances, as canonical CSR (sorted by column
/// index, as scipy's tocsr leaves it); zero distances (self, duplicate cells) dropped.
CsrGraph distances_graph(const KnnGraph& knn);

}  // namespace fathom
