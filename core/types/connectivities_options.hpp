#pragma once
/// Options of the fuzzy neighbourhood graph (core/algo/connectivities.hpp).
namespace fathom {

/// Options of fuzzy_simplicial_set (umap-learn names and the values scanpy passes).
struct ConnectivitiesOptions {
    /// Fuzzy union (1) vs intersection (0) when symmetrising; in [0, 1].
    double set_op_mix_ratio = 1.0;
    /// Number of nearest neighbours assumed fully connected (rho interpolation); >= 0.
    double local_connectivity = 1.0;
    /// Binary-search iterations for each sigma (umap's n_iter); >= 1.
    int num_iterations = 64;
    /// Target multiplier: the search aims for sum_j exp(-(d_j - rho)/sigma) = log2(k) * bandwidth; > 0.
    double bandwidth = 1.0;
    /// Equal when every field is equal.
    friend bool operator==(const ConnectivitiesOptions&, const ConnectivitiesOptions&) = default;
};

}  // namespace fathom
