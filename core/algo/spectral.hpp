#pragma once
/// Spectral initialisation of UMAP, as umap-learn 0.5.3 `spectral_layout`: the
/// eigenvectors of the 2nd..(dim+1)-th smallest eigenvalues of the symmetric
/// normalised Laplacian L = I - D^-1/2 W D^-1/2 of the (pruned) fuzzy graph, with
/// `multi_component_layout` when the graph is not connected.
#include <cstdint>
#include <vector>

#include "core/algo/knn_graph.hpp"
#include "core/types/DenseMatrix.hpp"
#include "core/types/spectral_options.hpp"

namespace fathom {

class Accelerator;
class JobContext;

/// M = D^-1/2 W D^-1/2 of a symmetric graph as CSR with the scaling folded into the
/// values (what an accelerator multiplies by): values[e] = w[e] / sqrt(d[row] d[col]),
/// d = weighted degree; rows of degree 0 are empty.
struct NormalizedAdjacencyCsr {
    std::int64_t num_vertices = 0;
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> columns;
    std::vector<double> values;
};

/// The matrix above for `graph` (all of it; spectral_layout builds one per component).
NormalizedAdjacencyCsr normalized_adjacency_csr(const CsrGraph& graph);

/// y = M x for the CSR above on the host, each row summed in stored order (the
/// arithmetic of the device product, up to the device's summation order).
void multiply(const NormalizedAdjacencyCsr& matrix, const double* x, double* y);

/// Throws std::invalid_argument naming the field.
void validate(const SpectralOptions& options);

/// The layout and how it was obtained.
struct SpectralResult {
    DenseMatrix<double> coordinates;   ///< cells x num_components (not yet scaled by UMAP)
    int num_graph_components = 0;      ///< connected components of the graph
    /// True when every component's eigensolve reached the tolerance. umap falls back to
    /// a random layout when ARPACK does not converge; we keep the best Ritz vectors
    /// found (a better start than noise) and report it here.
    bool converged = true;
    int restarts = 0;                  ///< solver restarts, summed over components
};

/// umap-learn 0.5.3 spectral_layout(data, graph, dim, random_state). `data` (cells x
/// features, e.g. X_pca) is only used to place components relative to each other
/// when there are more than 2 * dim of them (component_layout: spectral embedding
/// of the centroids' exp(-d^2) affinities); it may be empty, then umap's
/// data-free fallback (uniform random meta positions in [0, 10)) is used.
/// Deterministic for a seed whatever the number of threads.
///
/// `accelerator` (may be null: the host multiplies): the Krylov-Schur iteration of each
/// connected component solved iteratively (over 400 vertices) multiplies by the
/// component's M = D^-1/2 W D^-1/2 (NormalizedAdjacencyCsr, values already scaled)
/// through Accelerator::upload_sparse_matrix; the rest of the iteration runs on the
/// host as without it. A decline leaves the product to the host; a DeviceError thrown
/// by a product restarts that component's solve on the host from the same start (the
/// job's progress message says so).
SpectralResult spectral_layout(const CsrGraph& graph, const DenseMatrix<float>& data, const SpectralOptions& options,
                               JobContext& ctx, const Accelerator* accelerator = nullptr);

/// Connected components of a symmetric graph: label per cell in [0, count), numbered
/// in order of each component's smallest cell (as scipy's connected_components).
std::vector<std::int32_t> connected_components(const CsrGraph& graph, int* count);

}  // namespace fathom
