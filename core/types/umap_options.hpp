#pragma once
/// Options of UMAP (core/algo/umap.hpp).
#include <cstdint>

namespace fathom {

/// How the embedding starts.
enum class UmapInit {
    Spectral,  ///< umap's spectral_layout of the pruned graph (scanpy's init_pos='spectral')
    Random,    ///< uniform in [-10, 10) (umap's init='random')
};

/// UmapParallelism::Auto runs the deterministic SGD up to this many cells (scanpy's
/// 500-epoch regime), Hogwild above.
inline constexpr std::int64_t kUmapDeterministicMaxCells = 10000;

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
    /// its row starts and applied together (vectorised; single-precision schedules). On a
    /// graph symmetric in its values (as neighbors() makes) each edge pulls its head twice
    /// and leaves its tail to its twin edge, so a thread writes only the heads it owns
    /// (UmapResult::twin_pull; 1.3M cells: the step 96 -> 81 s wall on 2 cores).
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
    /// umap()'s EmbeddingObserver receives the embedding every this many epochs (and
    /// after the last); 0 = only after the last. >= 0.
    int publish_every = 10;
    /// Equal when every field is equal.
    friend bool operator==(const UmapOptions&, const UmapOptions&) = default;
};

}  // namespace fathom
