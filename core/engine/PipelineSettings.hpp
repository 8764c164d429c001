#pragma once
/// The pipeline's user-facing settings (what the GUI form, the CLI flags and a session
/// file edit). They are made of the steps' own Options structs, so every default lives
/// in the step's Options; core/engine/settings_schema.hpp describes each setting once
/// (name, range, choices, help) for validation, the CLI, the form, sessions, the h5ad's
/// uns params and the README.
#include <cstdint>

#include "core/types/knn_options.hpp"
#include "core/types/leiden_options.hpp"
#include "core/types/markers_options.hpp"
#include "core/types/pca_options.hpp"
#include "core/types/recipes_options.hpp"
#include "core/types/umap_options.hpp"

namespace fathom {

/// The preprocessing recipe: an ordered list of steps with preset Options
/// (recipe_steps in core/engine/settings_schema.hpp).
enum class Recipe {
    Zheng17,  ///< scanpy's pp.recipe_zheng17 (raw counts)
    Seurat,   ///< scanpy's pp.recipe_seurat (raw counts)
    None,     ///< X is already processed: PCA centres it, nothing else
};

/// Settings of one pipeline run. Steps run in order; a disabled step and all steps that
/// need it are skipped.
struct PipelineSettings {
    Recipe recipe = Recipe::Zheng17;
    /// Optional pre-filter (sc.pp.filter_cells(min_counts)); 0 = keep every cell.
    double min_counts_per_cell = 0.0;
    /// QC cell filters before the recipe, on the raw counts' QC metrics (scanpy's
    /// calculate_qc_metrics: total_counts, n_genes_by_counts, pct_counts_mt), as
    /// sc.pp.filter_cells(max_counts / min_genes / max_genes) and
    /// adata[adata.obs.pct_counts_mt < max].
    double max_counts_per_cell = 0.0;        ///< keep total counts <= this; 0 = no limit
    std::int64_t min_genes_per_cell = 0;     ///< keep >= this many expressed genes; 0 = no limit
    std::int64_t max_genes_per_cell = 0;     ///< keep <= this many expressed genes; 0 = no limit
    double max_pct_counts_mt = 100.0;        ///< keep pct_counts_mt <= this (percent); 100 = no limit
    /// HVGs kept by the recipe (n_top_genes).
    std::int64_t num_top_genes = Zheng17Options{}.num_top_genes;
    /// PCA (n_pcs = num_components). Its seed is `seed` below.
    PcaOptions pca;
    bool run_neighbors = true;
    /// The kNN search (n_neighbors, method). Its seed, partitions and HNSW build mode are
    /// set by the engine from `seed`, the devices and `deterministic`.
    KnnOptions neighbors;
    bool run_umap = true;
    /// UMAP (min_dist, spread, n_epochs, n_components). Its seed is `seed`; its
    /// parallelism is Deterministic when `deterministic` is set.
    UmapOptions umap;
    bool run_leiden = true;
    /// Leiden (resolution). Its seed is `seed`.
    LeidenOptions leiden;
    /// Marker genes of the Leiden clusters (needs run_leiden).
    bool run_markers = true;
    RankGenesGroupsOptions markers;
    /// random_state of every randomised step: it replaces the seed of pca, neighbors,
    /// umap and leiden, whose own seed fields are not read.
    std::uint64_t seed = 0;
    /// Bit-for-bit reproducible neighbours and UMAP for a seed, whatever the number of
    /// threads: NN-descent, IVF and the exact search are so at any setting, an HNSW index
    /// is built by one thread (queries stay parallel), and UMAP runs its deterministic
    /// SGD (UmapParallelism::Deterministic) instead of Hogwild. Slower. The kNN graph and
    /// UMAP of one PCA are also the same at any number of shards, but the PCA's
    /// reductions over shards round differently for different shard counts, so
    /// bit-identity across cpu:N needs the same N.
    bool deterministic = false;

    /// Throws std::invalid_argument naming the setting by its schema name
    /// ("n_pcs must be in [1, 500] (got 0)").
    void validate() const;
    friend bool operator==(const PipelineSettings&, const PipelineSettings&) = default;
};

}  // namespace fathom
