#pragma once
/// Options of the preprocessing recipes (core/algo/recipes.hpp).
#include <cstdint>
#include <optional>

#include "core/types/hvg_options.hpp"
#include "core/types/pca_options.hpp"

namespace fathom {

/// Options of recipe_zheng17 (scanpy names and defaults).
struct Zheng17Options {
    std::int64_t num_top_genes = 1000;  ///< n_top_genes, >= 1
    bool log = true;                    ///< log1p after the second normalisation
    /// scanpy held X as integers (an h5ad with int32/int64 X): the first normalisation
    /// then runs in float64 (NormalizeTotalOptions::integer_dtype). The engine sets it
    /// from the dataset; scanpy's 10x / Matrix Market readers give float32 (false).
    bool integer_dtype = false;
    std::optional<PcaOptions> pca = PcaOptions{};  ///< PCA after the recipe; unset = none
    /// Equal when every field is equal.
    friend bool operator==(const Zheng17Options&, const Zheng17Options&) = default;
};

/// Options of recipe_seurat (scanpy 1.9 pp.recipe_seurat, then PCA).
struct SeuratRecipeOptions {
    std::int64_t min_genes = 200;          ///< filter_cells(min_genes)
    std::int64_t min_cells = 3;            ///< filter_genes(min_cells)
    double target_sum = 1e4;               ///< normalize_total(target_sum)
    /// filter_genes_dispersion(flavor='seurat', log=False) on the normalised non-log
    /// data: the cut-offs (min_mean 0.0125, max_mean 3, min_disp 0.5) or, when
    /// num_top_genes is set, the top n.
    HvgOptions hvg = [] {
        HvgOptions hvg_options;
        hvg_options.flavor = HvgFlavor::Seurat;
        hvg_options.api = HvgApi::FilterGenesDispersion;
        hvg_options.log = false;
        return hvg_options;
    }();
    bool log = true;                       ///< log1p after selecting genes
    double max_value = 10.0;               ///< scale(max_value)
    std::optional<PcaOptions> pca = PcaOptions{};
    /// Equal when every field is equal.
    friend bool operator==(const SeuratRecipeOptions&, const SeuratRecipeOptions&) = default;
};

}  // namespace fathom
