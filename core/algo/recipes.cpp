#include "core/algo/recipes.hpp"

#include <stdexcept>
#include <string>

namespace fathom {

namespace {

/// Indices (into `previous`) of the entries with keep = 1.
std::vector<std::int64_t> compose(const std::vector<std::int64_t>& previous, const std::vector<std::uint8_t>& keep) {
    std::vector<std::int64_t> out;
    for (std::size_t index = 0; index < keep.size(); ++index)
        if (keep[index]) out.push_back(previous[index]);
    return out;
}

std::vector<std::int64_t> identity(std::int64_t count) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(count));
    for (std::int64_t index = 0; index < count; ++index) out[static_cast<std::size_t>(index)] = index;
    return out;
}

}  // namespace

void validate(const Zheng17Options& options, const MatrixShape& shape) {
    if (options.num_top_genes < 1) throw std::invalid_argument("Zheng17Options::num_top_genes must be >= 1");
    if (shape.num_cells < 2)
        throw std::invalid_argument("recipe_zheng17: needs at least 2 cells; the matrix has " + std::to_string(shape.num_cells));
    if (shape.num_genes < 1) throw std::invalid_argument("recipe_zheng17: the matrix has no genes");
    if (options.pca && options.pca->num_components < 1)
        throw std::invalid_argument("Zheng17Options::pca.num_components must be >= 1");
}

void validate(const SeuratRecipeOptions& options, const MatrixShape& shape) {
    if (options.min_genes < 0) throw std::invalid_argument("SeuratRecipeOptions::min_genes must be >= 0");
    if (options.min_cells < 0) throw std::invalid_argument("SeuratRecipeOptions::min_cells must be >= 0");
    if (!(options.target_sum > 0.0)) throw std::invalid_argument("SeuratRecipeOptions::target_sum must be > 0");
    if (!(options.max_value > 0.0)) throw std::invalid_argument("SeuratRecipeOptions::max_value must be > 0");
    if (options.hvg.flavor == HvgFlavor::SeuratV3)
        throw std::invalid_argument("SeuratRecipeOptions::hvg.flavor must be seurat or cell_ranger");
    if (options.pca && options.pca->num_components < 1)
        throw std::invalid_argument("SeuratRecipeOptions::pca.num_components must be >= 1");
    if (shape.num_cells < 2)
        throw std::invalid_argument("recipe_seurat: needs at least 2 cells; the matrix has " + std::to_string(shape.num_cells));
}

Zheng17Preprocessed zheng17_preprocess(ShardSet& shards, const Zheng17Options& options, JobContext& ctx) {
    validate(options, shards.shape());
    Zheng17Preprocessed out;
    // pp.filter_genes(adata, min_counts=1): only genes with at least one count.
    FilterGenesOptions gene_filter;
    gene_filter.min_counts = 1.0;
    out.gene_filter = filter_genes(shards, gene_filter, ctx);
    apply_gene_filter(shards, out.gene_filter, ctx);
    // normalize_total(adata, key_added='n_counts_all'): scanpy 1.9.6's recipe (pre-1.5
    // releases called normalize_per_cell, which also drops cells without counts).
    // Zero-count cells stay (and stay zero); the target is the median of the non-zero
    // totals.
    NormalizeTotalOptions normalization;
    normalization.integer_dtype = options.integer_dtype;
    out.normalization = normalize_total(shards, normalization, ctx);
    return out;
}

HvgOptions zheng17_hvg_options(const Zheng17Options& options) {
    // filter_genes_dispersion(X, flavor='cell_ranger', n_top_genes, log=False) on the
    // normalised, non-log data: |d - median| / MAD, float32 cut-off, ties kept.
    HvgOptions hvg;
    hvg.flavor = HvgFlavor::CellRanger;
    hvg.api = HvgApi::FilterGenesDispersion;
    hvg.log = false;
    hvg.num_top_genes = options.num_top_genes;
    return hvg;
}

Zheng17Moments zheng17_moments(const ShardSet& raw, const Zheng17Options& options, JobContext& ctx, const QcResult* qc) {
    validate(options, raw.shape());
    const auto num_genes = static_cast<std::size_t>(raw.num_genes());
    const auto num_cells = static_cast<std::size_t>(raw.num_cells());
    Zheng17Moments out;
    // pp.filter_genes(adata, min_counts=1): only genes with at least one count.
    FilterGenesOptions gene_filter;
    gene_filter.min_counts = 1.0;
    std::vector<double> totals;
    if (qc) {
        if (qc->gene_total_counts.size() != num_genes || qc->n_cells_by_counts.size() != num_genes ||
            qc->total_counts.size() != num_cells)
            throw std::invalid_argument("zheng17_moments: the QC result does not match the " + std::to_string(num_cells) +
                                        " x " + std::to_string(num_genes) + " matrix");
        ctx.begin_stage("filter_genes");
        out.gene_filter = filter_genes(qc->gene_total_counts, qc->n_cells_by_counts, gene_filter);
        totals = qc->total_counts;
    } else {
        out.gene_filter = filter_genes(raw, gene_filter, ctx);
        ctx.begin_stage("normalize_total");
        // Totals over the kept genes, as normalize_total sees the filtered matrix (NumPy's
        // float32 sums for a float32 X, see numpy_float32_row_sums).
        if (!options.integer_dtype) {
            totals = numpy_float32_row_sums(
                raw, out.gene_filter.num_removed > 0 ? std::span<const std::uint8_t>(out.gene_filter.keep)
                                                     : std::span<const std::uint8_t>(),
                ctx);
        } else {
            RowStats rows =
                out.gene_filter.num_removed > 0 ? raw.row_stats(out.gene_filter.keep, ctx) : raw.row_stats({}, ctx);
            totals = out.gene_filter.num_removed > 0 ? std::move(rows.subset_total) : std::move(rows.total);
        }
    }
    // normalize_total(adata, key_added='n_counts_all'): scanpy 1.9.6's recipe (pre-1.5
    // releases called normalize_per_cell, which also drops cells without counts).
    // Zero-count cells stay (and stay zero); the target is the median of the non-zero
    // totals.
    NormalizeTotalOptions normalization;
    normalization.integer_dtype = options.integer_dtype;
    out.normalization = normalize_total_factors(std::move(totals), normalization);
    // The statistics filter_genes_dispersion takes of the normalised matrix.
    ctx.begin_stage("highly_variable_genes");
    ColumnStatsRequest request;
    request.row_scale = out.normalization.factors;
    ColumnStats stats = raw.column_stats(request, ctx);
    if (out.gene_filter.num_removed == 0) {
        out.normalized_stats = std::move(stats);
        return out;
    }
    out.normalized_stats.num_rows = stats.num_rows;
    for (std::size_t gene = 0; gene < num_genes; ++gene) {
        if (!out.gene_filter.keep[gene]) continue;
        out.normalized_stats.sum.push_back(stats.sum[gene]);
        out.normalized_stats.sum_squares.push_back(stats.sum_squares[gene]);
        out.normalized_stats.nnz.push_back(stats.nnz[gene]);
    }
    return out;
}

HvgResult zheng17_select(const Zheng17Moments& moments, std::int64_t num_cells, const Zheng17Options& options) {
    return highly_variable_genes(moments.normalized_stats, num_cells, zheng17_hvg_options(options));
}

ShardSet zheng17_hvg_block(const ShardSet& raw, const Zheng17Moments& moments, const HvgResult& dispersion,
                           JobContext& ctx) {
    const auto& kept = moments.gene_filter.keep;
    if (kept.size() != static_cast<std::size_t>(raw.num_genes()) ||
        dispersion.highly_variable.size() != static_cast<std::size_t>(moments.gene_filter.num_kept) ||
        moments.normalization.factors.size() != static_cast<std::size_t>(raw.num_cells()))
        throw std::invalid_argument("zheng17_hvg_block: the moments or the HVG selection do not match the raw matrix");
    std::vector<std::uint8_t> keep(kept.size(), 0);
    std::size_t column = 0;
    for (std::size_t gene = 0; gene < kept.size(); ++gene)
        if (kept[gene]) keep[gene] = dispersion.highly_variable[column++];
    ShardSet block = raw.clone_columns(keep, ctx);
    block.scale_rows(moments.normalization.factors, ctx);
    return block;
}

Zheng17Finished zheng17_finish(ShardSet& hvg_block, const Zheng17Options& options, JobContext& ctx) {
    Zheng17Finished out;
    // normalize_total(adata): renormalise on the HVG block. X is float32 by now.
    out.normalization = normalize_total(hvg_block, {}, ctx);
    if (options.log) log1p(hvg_block, ctx);
    // pp.scale(adata): zero-centre, unit variance, no clipping.
    out.scaling = scale(hvg_block, {}, ctx);
    return out;
}

Zheng17Result recipe_zheng17(ShardSet& shards, const Zheng17Options& options, JobContext& ctx) {
    validate(options, shards.shape());
    Zheng17Result result;
    const std::vector<std::int64_t> genes = identity(shards.num_genes());
    result.kept_cells = identity(shards.num_cells());

    // The normalised matrix is never formed: its dispersion statistics come from the
    // raw counts scaled on the fly, and only the HVG columns are copied and scaled.
    Zheng17Moments moments = zheng17_moments(shards, options, ctx);
    const std::vector<std::int64_t> kept_genes = compose(genes, moments.gene_filter.keep);
    result.dispersion = zheng17_select(moments, shards.num_cells(), options);
    if (result.dispersion.num_selected < 1)
        throw std::invalid_argument("recipe_zheng17: no gene has a defined normalised dispersion");
    shards = zheng17_hvg_block(shards, moments, result.dispersion, ctx);
    result.gene_filter = std::move(moments.gene_filter);
    result.first_normalization = std::move(moments.normalization);
    result.hvg_genes = compose(kept_genes, result.dispersion.highly_variable);

    Zheng17Finished finished = zheng17_finish(shards, options, ctx);
    result.second_normalization = std::move(finished.normalization);
    result.scaling = std::move(finished.scaling);
    if (options.pca) result.pca = pca(shards, result.scaling, *options.pca, ctx);
    return result;
}

SeuratRecipeResult recipe_seurat(ShardSet& shards, const SeuratRecipeOptions& options, JobContext& ctx) {
    validate(options, shards.shape());
    SeuratRecipeResult result;
    std::vector<std::int64_t> genes = identity(shards.num_genes());
    std::vector<std::int64_t> cells = identity(shards.num_cells());

    // pp.filter_cells(adata, min_genes=200); pp.filter_genes(adata, min_cells=3).
    FilterCellsOptions cell_filter;
    cell_filter.min_genes = options.min_genes;
    result.cell_filter = filter_cells(shards, cell_filter, ctx);
    apply_cell_filter(shards, result.cell_filter, ctx);
    cells = compose(cells, result.cell_filter.keep);
    FilterGenesOptions gene_filter;
    gene_filter.min_cells = options.min_cells;
    result.gene_filter = filter_genes(shards, gene_filter, ctx);
    apply_gene_filter(shards, result.gene_filter, ctx);
    genes = compose(genes, result.gene_filter.keep);

    // normalize_total(adata, target_sum=1e4).
    NormalizeTotalOptions normalization;
    normalization.target_sum = options.target_sum;
    result.normalization = normalize_total(shards, normalization, ctx);

    // filter_genes_dispersion(X, min_mean=0.0125, max_mean=3, min_disp=0.5, log=not log)
    // on the normalised data; then subset to those genes.
    HvgOptions hvg = options.hvg;
    if (hvg.api == HvgApi::FilterGenesDispersion) hvg.log = !options.log;
    result.dispersion = highly_variable_genes(shards, hvg, ctx);
    if (result.dispersion.num_selected < 2)
        throw std::invalid_argument("recipe_seurat: only " + std::to_string(result.dispersion.num_selected) +
                                    " highly variable genes pass SeuratRecipeOptions::hvg's cut-offs");
    shards.subset_columns(result.dispersion.highly_variable, ctx);
    result.hvg_genes = compose(genes, result.dispersion.highly_variable);
    result.kept_cells = std::move(cells);

    if (options.log) log1p(shards, ctx);
    // pp.scale(adata, max_value=10): scanpy 1.9 clips above only.
    ScaleOptions scaling;
    scaling.max_value = options.max_value;
    result.scaling = scale(shards, scaling, ctx);
    if (options.pca) result.pca = pca(shards, result.scaling, *options.pca, ctx);
    return result;
}

}  // namespace fathom
