#pragma once
/// Options of the highly-variable-gene selection (core/algo/hvg.hpp).
#include <cstdint>
#include <limits>
#include <optional>

namespace fathom {

/// Dispersion flavour.
enum class HvgFlavor {
    /// Seurat v1/v2: input is log1p data, expm1'd back; dispersion = log(var / mean),
    /// mean = log1p(mean); z-score of dispersion within n_bins equal-width mean bins.
    Seurat,
    /// Cell Ranger (Zheng et al. 2017): dispersion var / mean (non-log), bins at the
    /// 10th, 15th, ..., 100th percentiles of the mean; |d - median| / MAD per bin.
    CellRanger,
    /// Seurat v3 (Stuart et al. 2019): on raw counts; LOESS (span, degree 2) of
    /// log10 variance on log10 mean; variance of clipped standardised counts.
    SeuratV3,
};

/// Which scanpy function's conventions to follow where they differ.
enum class HvgApi {
    /// pp.highly_variable_genes (scanpy 1.9): cell_ranger normalised dispersion is
    /// signed (d - median) / MAD; NaN norms count as 0 against the top-n cut-off.
    HighlyVariableGenes,
    /// pp.filter_genes_dispersion (deprecated, recipe_zheng17): |d - median| / MAD;
    /// the cut-off is the n-th largest norm rounded to float32, and genes whose
    /// (double) norm is >= it are kept, so ties are kept and rounding may keep n-1.
    FilterGenesDispersion,
};

/// Options of highly_variable_genes (scanpy names and defaults).
struct HvgOptions {
    HvgFlavor flavor = HvgFlavor::Seurat;
    HvgApi api = HvgApi::HighlyVariableGenes;
    /// Keep the top n genes by normalised dispersion (or variance for seurat_v3);
    /// unset = use the cut-offs below (seurat / cell_ranger only). >= 1.
    std::optional<std::int64_t> num_top_genes;
    double min_mean = 0.0125;   ///< cut-off on mean (exclusive)
    double max_mean = 3.0;      ///< cut-off on mean (exclusive)
    double min_disp = 0.5;      ///< cut-off on normalised dispersion (exclusive)
    double max_disp = std::numeric_limits<double>::infinity();  ///< (exclusive)
    int num_bins = 20;          ///< seurat: number of equal-width mean bins, >= 1
    double span = 0.3;          ///< seurat_v3: LOESS span in (0, 1]
    /// seurat: the input is log1p data and is expm1'd before mean/var (scanpy 1.9's
    /// 'seurat' flavour always does; set false only for data that is not logged).
    bool expm1_input = true;
    /// filter_genes_dispersion only: log the dispersion and log1p the mean (its `log`
    /// argument). recipe_zheng17 passes false.
    bool log = false;
    /// Equal when every field is equal.
    friend bool operator==(const HvgOptions&, const HvgOptions&) = default;
};

}  // namespace fathom
