#pragma once
/// Preprocessing recipes, as scanpy's pp.recipe_zheng17 and pp.recipe_seurat, followed
/// by PCA (scanpy's pp.pca as the reference run calls it). The shards are changed in
/// place exactly as the recipe changes adata.X (filtered, normalised, logged); the
/// scaling is kept as a ScaleResult instead of a dense matrix.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/algo/filter.hpp"
#include "core/algo/hvg.hpp"
#include "core/algo/normalize.hpp"
#include "core/algo/pca.hpp"
#include "core/algo/qc.hpp"
#include "core/algo/scale.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/recipes_options.hpp"

namespace fathom {

/// Everything recipe_zheng17 computed. Gene and cell indices refer to the INPUT of the
/// recipe (the matrix the shards held when it started).
struct Zheng17Result {
    FilterResult gene_filter;              ///< filter_genes(min_counts=1) on the input genes
    NormalizeTotalResult first_normalization;   ///< counts_per_cell = obs['n_counts_all'] (every input cell)
    HvgResult dispersion;                  ///< filter_genes_dispersion on the genes kept by gene_filter
    std::vector<std::int64_t> hvg_genes;   ///< input gene index of every gene kept, in order
    NormalizeTotalResult second_normalization;  ///< on the HVG block
    std::vector<std::int64_t> kept_cells;  ///< input cell index of every cell kept (all: normalize_total keeps cells)
    ScaleResult scaling;                   ///< what pp.scale computed (mean_before_scaling / std_before_scaling)
    std::optional<PcaResult> pca;          ///< when options.pca is set
};

/// recipe_zheng17 in parts, for callers that cache each stage (the engine). Running
/// zheng17_preprocess, highly_variable_genes(zheng17_hvg_options), subsetting the
/// shards to the selected genes, then zheng17_finish is exactly recipe_zheng17.
struct Zheng17Preprocessed {
    FilterResult gene_filter;              ///< filter_genes(min_counts=1)
    NormalizeTotalResult normalization;    ///< normalize_total(key_added='n_counts_all')
};
/// filter_genes(min_counts=1); normalize_total(key_added='n_counts_all'). In place.
Zheng17Preprocessed zheng17_preprocess(ShardSet& shards, const Zheng17Options& options, JobContext& ctx);
/// filter_genes_dispersion(flavor='cell_ranger', n_top_genes, log=False) as HvgOptions.
HvgOptions zheng17_hvg_options(const Zheng17Options& options);

/// recipe_zheng17 up to the HVG selection without a normalised copy of the matrix:
/// what filter_genes(min_counts=1) and normalize_total(key_added='n_counts_all')
/// decide, and the column statistics of the normalised values that
/// filter_genes_dispersion reads, taken on the raw counts scaled on the fly
/// (ColumnStatsRequest::row_scale gives the values scale_rows would store). The raw
/// shards are not changed; everything is bit-identical to zheng17_preprocess followed
/// by the column statistics of highly_variable_genes.
struct Zheng17Moments {
    FilterResult gene_filter;              ///< filter_genes(min_counts=1) on the raw genes
    NormalizeTotalResult normalization;    ///< normalize_total(key_added='n_counts_all'), with the factors
    ColumnStats normalized_stats;          ///< of the normalised (non-log) values, one entry per kept gene
};
/// One pass over the raw shards (column statistics), plus the passes for the gene and
/// cell totals unless `qc` holds them already: qc is the QC of these same shards
/// (compute_qc), valid for non-negative counts, where the genes filter_genes removes
/// hold only zeros and so add nothing to the cell totals.
Zheng17Moments zheng17_moments(const ShardSet& raw, const Zheng17Options& options, JobContext& ctx,
                               const QcResult* qc = nullptr);
/// filter_genes_dispersion on the moments (one entry per kept gene).
HvgResult zheng17_select(const Zheng17Moments& moments, std::int64_t num_cells, const Zheng17Options& options);
/// The normalised HVG block straight from the raw shards: only the genes kept by
/// moments.gene_filter and selected by dispersion.highly_variable (one flag per kept
/// gene) are copied, then scaled by the first normalisation's factors; bit-identical
/// to subsetting the normalised copy.
ShardSet zheng17_hvg_block(const ShardSet& raw, const Zheng17Moments& moments, const HvgResult& dispersion,
                           JobContext& ctx);
/// What the last part computed.
struct Zheng17Finished {
    NormalizeTotalResult normalization;    ///< normalize_total() on the HVG block
    ScaleResult scaling;                   ///< scale()
};
/// On the HVG block (in place): normalize_total(); log1p (if options.log); scale().
Zheng17Finished zheng17_finish(ShardSet& hvg_block, const Zheng17Options& options, JobContext& ctx);

/// Everything recipe_seurat computed (indices refer to the recipe's input).
struct SeuratRecipeResult {
    FilterResult cell_filter;              ///< filter_cells(min_genes)
    FilterResult gene_filter;              ///< filter_genes(min_cells), on the cells kept
    NormalizeTotalResult normalization;
    HvgResult dispersion;                  ///< on the genes kept by gene_filter
    std::vector<std::int64_t> hvg_genes;   ///< input gene index of every gene kept
    std::vector<std::int64_t> kept_cells;  ///< input cell index of every cell kept
    ScaleResult scaling;
    std::optional<PcaResult> pca;
};

/// Throws std::invalid_argument naming the field.
void validate(const Zheng17Options& options, const MatrixShape& shape);
void validate(const SeuratRecipeOptions& options, const MatrixShape& shape);

/// scanpy 1.9 recipe_zheng17 on raw counts: filter_genes(min_counts=1);
/// normalize_total(key_added='n_counts_all'); filter_genes_dispersion(
/// flavor='cell_ranger', n_top_genes, log=False); subset to those genes;
/// normalize_total(); log1p (if log); scale(); then pca if requested. (Its docstring
/// still lists normalize_per_cell, which would drop zero-count cells; the 1.9.6 code
/// and the reference outputs keep them.)
Zheng17Result recipe_zheng17(ShardSet& shards, const Zheng17Options& options, JobContext& ctx);

/// scanpy 1.9 recipe_seurat: filter_cells(min_genes=200); filter_genes(min_cells=3);
/// normalize_total(target_sum=1e4); filter_genes_dispersion(min_mean=0.0125,
/// max_mean=3, min_disp=0.5, log=False); subset; log1p; scale(max_value=10); then pca.
SeuratRecipeResult recipe_seurat(ShardSet& shards, const SeuratRecipeOptions& options, JobContext& ctx);

}  // namespace fathom
