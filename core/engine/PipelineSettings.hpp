#pragma once
/// The pipeline's user-facing settings (what the GUI form and the CLI flags edit).
/// Each field's default is taken from the step's Options struct in core/algo so that
/// every default lives in one place; the engine maps these onto those structs.
#include <cstdint>
#include <string>

namespace fathom {

/// Settings of one pipeline run. Steps are run in order; a disabled step and all
/// steps that need it are skipped.
struct PipelineSettings {
    std::string recipe = "zheng17";  ///< "zheng17", "seurat" or "none" (X already processed)
    int num_top_genes = 1000;        ///< HVGs kept by the recipe (n_top_genes)
    int num_pcs = 50;                ///< PCA components (n_comps)
    bool run_neighbors = true;
    int num_neighbors = 15;          ///< n_neighbors, self included as scanpy counts
    /// kNN search: "auto" (exact below 8192 cells, else NN-descent), "exact", "nndescent"
    /// or "hnsw" (knn_method_name's spelling).
    std::string knn_method = "auto";
    bool run_umap = true;
    double min_dist = 0.5;
    double spread = 1.0;
    int umap_epochs = 0;             ///< 0 = scanpy's default (500 up to 10k cells, else 200)
    int umap_components = 2;         ///< n_components of obsm['X_umap'], in [1, 8] (3 for the 3-D view)
    bool run_leiden = true;
    double resolution = 1.0;
    std::string markers = "t-test";  ///< "t-test", "wilcoxon" or "" (skip)
    std::uint64_t seed = 0;          ///< random_state of every randomised step
    /// Bit-for-bit reproducible neighbours and UMAP for a seed, whatever the number of
    /// threads: NN-descent and the exact search are so at any setting, an HNSW index is
    /// built by one thread (queries stay parallel), and UMAP
    /// runs its deterministic SGD (UmapParallelism::Deterministic) instead of Hogwild.
    /// Slower. The kNN graph and UMAP of one PCA are also the same at any number of
    /// shards, but the PCA's reductions over shards round differently for different
    /// shard counts, so bit-identity across cpu:N needs the same N.
    bool deterministic = false;
    double min_counts_per_cell = 0;  ///< optional pre-filter (sc.pp.filter_cells(min_counts))

    /// Throws std::invalid_argument naming the field ("PipelineSettings::num_pcs must be >= 1").
    void validate() const;
    friend bool operator==(const PipelineSettings&, const PipelineSettings&) = default;
};

}  // namespace fathom
