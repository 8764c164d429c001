#pragma once
/// UMAP embedding of the fuzzy neighbourhood graph, as scanpy 1.9.6 `tl.umap` runs
/// umap-learn 0.5.3 `simplicial_set_embedding` (euclidean output, move_other=True):
/// edge pruning, spectral initialisation, min-max scaling to [0, 10], and the SGD of
/// `optimize_layout_euclidean` with negative sampling.
#include <cstdint>
#include <functional>

#include "core/algo/knn_graph.hpp"
#include "core/algo/spectral.hpp"
#include "core/backend/Accelerator.hpp"
#include "core/types/DenseMatrix.hpp"
#include "core/types/umap_options.hpp"

namespace fathom {

class JobContext;

/// The curve parameters of the low-dimensional similarity 1 / (1 + a d^(2b)).
struct UmapCurve {
    double a = 0.0;
    double b = 0.0;
};

/// umap-learn `find_ab_params(spread, min_dist)`: least-squares fit (Levenberg-Marquardt,
/// as scipy's curve_fit, from a = b = 1) of 1 / (1 + a x^(2b)) to 1 for x < min_dist and
/// exp(-(x - min_dist) / spread) otherwise, on 300 points of linspace(0, 3 spread).
/// min_dist 0.5, spread 1 give a = 0.583, b = 1.334. Throws std::invalid_argument when
/// spread <= 0 or min_dist < 0.
UmapCurve find_ab_params(double spread, double min_dist);

/// Throws std::invalid_argument naming the field ("UmapOptions::min_dist must be >= 0").
void validate(const UmapOptions& options);

/// The embedding and how it was made.
struct UmapResult {
    DenseMatrix<float> embedding;      ///< cells x num_components (obsm['X_umap'])
    UmapCurve curve;                   ///< a, b used
    int num_epochs = 0;                ///< epochs run
    std::int64_t num_edges = 0;        ///< directed edges optimised after pruning
    UmapInit init_used = UmapInit::Spectral;
    int num_graph_components = 0;      ///< connected components of the pruned graph (spectral init)
    bool spectral_converged = true;    ///< false: the eigensolver stopped at max_restarts
    UmapParallelism parallelism = UmapParallelism::Hogwild;  ///< the SGD that ran (Auto resolved)
    /// Hogwild on a graph symmetric in its values: every edge pulled its head twice and
    /// left its tail to its twin, as the deterministic SGD does (see core/algo/umap.cpp).
    bool twin_pull = false;
};

/// Receives the intermediate embeddings while UMAP's SGD runs (e.g. the plot, which
/// shows the layout as it forms).
class EmbeddingObserver {
public:
    virtual ~EmbeddingObserver() = default;
    /// The embedding (cells x num_components) after `epoch` epochs: every
    /// UmapOptions::publish_every epochs and after the last, on the thread that called
    /// umap(). Valid during the call only.
    virtual void on_epoch(int epoch, const DenseMatrix<float>& embedding) = 0;
};

/// UMAP of `connectivities` (symmetric, as neighbors() returns). `data` (cells x
/// features, e.g. X_pca) is only used by the spectral init to place disconnected
/// components (may be empty). Calls ctx.checkpoint()/report() every epoch.
///
/// `accelerator` (may be null: the host runs everything): in the Deterministic mode its
/// umap_sgd runs the epochs instead of the CPU (a decline leaves them to the CPU), and
/// the spectral init multiplies through it (spectral_layout). `observer` (may be null)
/// receives the intermediate embeddings.
UmapResult umap(const CsrGraph& connectivities, const DenseMatrix<float>& data, const UmapOptions& options, JobContext& ctx,
                const Accelerator* accelerator = nullptr, EmbeddingObserver* observer = nullptr);

namespace detail {

/// UMAP's deterministic SGD on the host (umap() in the Deterministic mode, and
/// CpuAccelerator::umap_sgd): every epoch of `problem` on `embedding` (num_vertices x
/// dim, row-major) in place, blocks in order, each block's vertices in parallel with
/// the same result on any number of threads. Reports progress to ctx and calls
/// publish(epochs_done) every publish_every epochs before the last (0 = never).
/// Cancellable between epochs. The arrays of `problem` are assumed consistent
/// (accelerator_checks::check_umap_sgd).
void deterministic_umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
                            const std::function<void(int epochs_done)>& publish, JobContext& ctx);

}  // namespace detail

}  // namespace fathom
