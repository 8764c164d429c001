#pragma once
/// UMAP embedding of the fuzzy neighbourhood graph, as scanpy 1.9.6 `tl.umap` runs
/// umap-learn 0.5.3 `simplicial_set_embedding` (euclidean output, move_other=True):
/// edge pruning, spectral initialisation, min-max scaling to [0, 10], and the SGD of
/// `optimize_layout_euclidean` with negative sampling.
#include <cstdint>
#include <functional>

#include "core/algo/knn_graph.hpp"
#include "core/algo/spectral.hpp"
#include "core/backend/DeviceProvider.hpp"
#include "core/types/DenseMatrix.hpp"

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

/// How the embedding starts.
enum class UmapInit {
    Spectral,  ///< umap's spectral_layout of the pruned graph (scanpy's init_pos='spectral')
    Random,    ///< uniform in [-10, 10) (umap's init='random')
};

/// How the SGD runs.
enum class UmapParallelism {
    /// Deterministic up to kUmapDeterministicMaxCells cells, Hogwild above. On small
    /// graphs Hogwild's unsynchronised updates collide often enough to cost layout
    /// quality (about 0.004 trustworthiness on 1k-cell data) for little speed (the whole
    /// SGD takes about a second there).
    Auto,
    /// Heads (rows of the graph) split across threads with lock-free (Hogwild) updates,
    /// as umap's parallel=True: fastest; results depend on thread timing. A head's
    /// attractions and negative samples of an epoch are evaluated at its position when
    /// its row starts and applied together (vectorised; single-precision schedules).
    Hogwild,
    /// Same result for a seed on any number of threads: every epoch reads the positions
    /// of the epoch start (each edge's pull on the other end is applied by that end's own
    /// copy of the edge), vertices are updated in parallel, and negative samples come
    /// from a generator keyed on (seed, epoch, vertex).
    Deterministic,
    /// umap's parallel=False loop on one thread, edge by edge in order (reference).
    Sequential,
};

/// Options of UMAP (scanpy's tl.umap names and defaults).
struct UmapOptions {
    int num_components = 2;            ///< n_components; >= 1
    double min_dist = 0.5;             ///< scanpy's default; >= 0
    double spread = 1.0;               ///< > 0
    /// Curve parameters; both 0 = fitted from min_dist and spread (find_ab_params).
    double a = 0.0;
    double b = 0.0;
    /// Epochs; 0 = scanpy's default: 500 when num_cells <= 10000, else 200.
    int num_epochs = 0;
    double learning_rate = 1.0;        ///< alpha, > 0
    double repulsion_strength = 1.0;   ///< gamma, >= 0
    int negative_sample_rate = 5;      ///< >= 0
    UmapInit init = UmapInit::Spectral;
    std::uint64_t seed = 0;            ///< random_state
    UmapParallelism parallelism = UmapParallelism::Auto;
    /// Call on_epoch every this many epochs (and after the last); 0 = only after the last.
    int publish_every = 10;
    /// Receives intermediate embeddings (cells x num_components) on the calling thread.
    std::function<void(int epoch, const DenseMatrix<float>& embedding)> on_epoch;
    /// Deterministic mode only: an accelerator's SGD (the CUDA backend's, set by the
    /// engine when the shards are on GPUs) run instead of the CPU epochs. It updates
    /// `embedding` in place under UmapSgdProblem's contract, calls publish(epochs_done)
    /// with the embedding current, and returns true; false = declined, the CPU runs.
    std::function<bool(const UmapSgdProblem& problem, DenseMatrix<float>& embedding,
                       const std::function<void(int epochs_done)>& publish, JobContext& ctx)>
        accelerated_sgd;
    /// Spectral init only: an accelerator's sparse product for the eigensolver
    /// (SpectralOptions::accelerated_operator; the engine sets it when the shards are on
    /// GPUs). Empty = the host multiplies.
    decltype(SpectralOptions::accelerated_operator) accelerated_spectral_operator;
};

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
};

/// UmapParallelism::Auto runs the deterministic SGD up to this many cells (scanpy's
/// 500-epoch regime), Hogwild above.
inline constexpr std::int64_t kUmapDeterministicMaxCells = 10000;

/// UMAP of `connectivities` (symmetric, as neighbors() returns). `data` (cells x
/// features, e.g. X_pca) is only used by the spectral init to place disconnected
/// components (may be empty). Calls ctx.checkpoint()/report() every epoch.
UmapResult umap(const CsrGraph& connectivities, const DenseMatrix<float>& data, const UmapOptions& options, JobContext& ctx);

}  // namespace fathom
