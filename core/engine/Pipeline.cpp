// The staged analysis pipeline run by Engine::run, and the snapshot / export views of
// its results. Each stage is cached with a key made of every setting it depends on
// (its own and those upstream), so a run recomputes exactly the stages whose key
// changed and everything after them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/algo/leiden.hpp"
#include "core/algo/markers.hpp"
#include "core/algo/recipes.hpp"
#include "core/algo/umap.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/engine/palette.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::detail {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

std::string key_of(const std::string& upstream, const std::string& own) { return upstream + "|" + own; }

template <typename... Parts>
std::string join_key(const Parts&... parts) {
    std::ostringstream out;
    out.precision(17);
    ((out << parts << ';'), ...);
    return out.str();
}

/// Row indices of the kept flags, composed with the previous mapping.
std::vector<std::int64_t> compose(const std::vector<std::int64_t>& previous, const std::vector<std::uint8_t>& keep) {
    std::vector<std::int64_t> out;
    for (std::size_t row = 0; row < keep.size(); ++row)
        if (keep[row]) out.push_back(previous[row]);
    return out;
}

std::vector<std::int64_t> iota_rows(std::int64_t count) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    for (std::int64_t row = 0; row < count; ++row) rows[static_cast<std::size_t>(row)] = row;
    return rows;
}

CsrShard to_square(const CsrGraph& graph) {
    CsrShard shard;
    shard.num_genes = graph.num_cells;
    shard.row_offsets = graph.row_offsets;
    shard.gene_indices = graph.col_indices;
    shard.values = graph.values;
    return shard;
}

Zheng17Options zheng17_options(const PipelineSettings& settings, const LoadedData& data) {
    Zheng17Options options;
    // scanpy keeps an h5ad's integer X as integers, which changes normalize_total's
    // arithmetic (float64); its 10x and Matrix Market readers give float32.
    options.integer_dtype = data.meta.format == DatasetFormat::H5ad &&
                            (data.meta.stored_type == ValueType::Int32 || data.meta.stored_type == ValueType::Int64);
    options.num_top_genes = settings.num_top_genes;
    options.pca.reset();  // the engine runs PCA as its own stage
    return options;
}

// ---- stages ----

/// Cell pre-filter + the recipe up to HVG selection. Output: cache.normalized.
/// Out-of-core Zheng17 up to HVG selection, from the first pass's statistics:
/// filter_genes(min_counts=1), then the moments of normalize_total's output
/// (target = median of the non-zero totals) as target * sum(x / total) — the same
/// quantities the in-memory path computes, up to float32 rounding of the scaled values.
void run_streamed_preprocess(Engine::State& state, const LoadedData& data, const PipelineSettings& settings,
                             JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "preprocess");
    if (settings.recipe != "zheng17" || settings.min_counts_per_cell > 0.0)
        throw std::invalid_argument("PipelineSettings::recipe: datasets streamed from their file (larger than the "
                                    "memory budget) support recipe zheng17 without a cell pre-filter only");
    const auto& stats = data.streamed_stats;
    const auto num_cells = static_cast<double>(data.meta.shape.num_cells);
    // normalize_total's target: the median of the non-zero totals (float32 unless X is
    // an integer array, see Zheng17Options::integer_dtype).
    std::vector<double> nonzero_totals;
    for (double total : stats.qc.total_counts)
        if (total > 0.0) nonzero_totals.push_back(total);
    double target = 0.0;
    if (zheng17_options(settings, data).integer_dtype) {
        std::sort(nonzero_totals.begin(), nonzero_totals.end());
        const std::size_t middle = nonzero_totals.size() / 2;
        target = nonzero_totals.size() % 2 ? nonzero_totals[middle]
                                            : 0.5 * (nonzero_totals[middle - 1] + nonzero_totals[middle]);
    } else {
        target = median_float32(std::vector<float>(nonzero_totals.begin(), nonzero_totals.end()));
    }
    cache.streamed_target = target;
    cache.kept_cells = iota_rows(data.meta.shape.num_cells);
    cache.kept_genes.clear();
    std::vector<double> means, variances;
    for (std::size_t gene = 0; gene < stats.qc.gene_total_counts.size(); ++gene) {
        if (stats.qc.gene_total_counts[gene] < 1.0) continue;
        cache.kept_genes.push_back(static_cast<std::int64_t>(gene));
        const double sum = target * stats.sum_inverse_total[gene];
        const double sum_squares = target * target * stats.sum_squares_inverse_total[gene];
        means.push_back(sum / num_cells);
        variances.push_back(std::max(0.0, (sum_squares - sum * sum / num_cells) / (num_cells - 1.0)));
    }
    cache.n_counts_all = stats.qc.total_counts;
    cache.normalized.reset();
    cache.zheng17.reset();
    cache.streamed_means = std::move(means);
    cache.streamed_variances = std::move(variances);
}

void run_preprocess(Engine::State& state, const LoadedData& data, const PipelineSettings& settings,
                    JobContext& ctx) {
    if (data.streamed) return run_streamed_preprocess(state, data, settings, ctx);
    auto& cache = state.cache;
    state.begin_step(ctx, "preprocess");
    ShardSet shards;
    std::vector<std::int64_t> cells = iota_rows(data.raw.num_cells());
    std::vector<std::int64_t> genes = iota_rows(data.raw.num_genes());
    cache.n_counts_all.clear();
    cache.zheng17.reset();
    if (settings.recipe == "zheng17" && settings.min_counts_per_cell <= 0.0) {
        // recipe_zheng17 up to the dispersion statistics, on the raw shards and without a
        // normalised copy: filter_genes(min_counts=1) and the cell totals from the QC
        // (the recipe needs integer counts, see run_pipeline); the scale step copies
        // only the HVG columns.
        cache.normalized.reset();
        std::lock_guard lock(data.raw_mutex);
        Zheng17Moments moments = zheng17_moments(data.raw, zheng17_options(settings, data), ctx, &data.qc);
        cache.kept_cells = std::move(cells);
        cache.kept_genes = compose(genes, moments.gene_filter.keep);
        cache.n_counts_all = moments.normalization.counts_per_cell;
        cache.zheng17 = std::move(moments);
        return;
    }
    {
        std::lock_guard lock(data.raw_mutex);
        shards = data.raw.clone();
    }
    if (settings.min_counts_per_cell > 0.0) {
        FilterCellsOptions options;
        options.min_counts = settings.min_counts_per_cell;
        const FilterResult filter = filter_cells(shards, options, ctx);
        apply_cell_filter(shards, filter, ctx);
        cells = compose(cells, filter.keep);
    }
    if (settings.recipe == "zheng17") {
        // recipe_zheng17, first part: filter_genes(min_counts=1);
        // normalize_total(key_added='n_counts_all').
        const Zheng17Preprocessed pre = zheng17_preprocess(shards, zheng17_options(settings, data), ctx);
        genes = compose(genes, pre.gene_filter.keep);
        cache.n_counts_all = pre.normalization.counts_per_cell;
    } else if (settings.recipe == "seurat") {
        // scanpy 1.9 recipe_seurat, first half: filter_cells(min_genes=200);
        // filter_genes(min_cells=3); normalize_total(target_sum=1e4).
        const SeuratRecipeOptions defaults;
        FilterCellsOptions cell_options;
        cell_options.min_genes = defaults.min_genes;
        const FilterResult cell_filter = filter_cells(shards, cell_options, ctx);
        apply_cell_filter(shards, cell_filter, ctx);
        cells = compose(cells, cell_filter.keep);
        FilterGenesOptions gene_options;
        gene_options.min_cells = defaults.min_cells;
        const FilterResult gene_filter = filter_genes(shards, gene_options, ctx);
        apply_gene_filter(shards, gene_filter, ctx);
        genes = compose(genes, gene_filter.keep);
        NormalizeTotalOptions normalize_options;
        normalize_options.target_sum = defaults.target_sum;
        normalize_total(shards, normalize_options, ctx);
    }
    cache.normalized = std::move(shards);
    cache.kept_cells = std::move(cells);
    cache.kept_genes = std::move(genes);
}

/// HVG selection on cache.normalized.
void run_hvg(Engine::State& state, const LoadedData& data, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "hvg");
    cache.hvg_genes.clear();
    if (settings.recipe == "none") {
        cache.hvg = HvgResult{};
        cache.hvg_genes = cache.kept_genes;
        return;
    }
    HvgOptions options;
    if (settings.recipe == "zheng17") {
        options = zheng17_hvg_options(zheng17_options(settings, data));
    } else {
        options = SeuratRecipeOptions{}.hvg;
    }
    options.num_top_genes = settings.num_top_genes;
    if (cache.zheng17) {
        ctx.begin_stage("highly_variable_genes");
        cache.hvg = highly_variable_genes(cache.zheng17->normalized_stats, static_cast<std::int64_t>(cache.kept_cells.size()),
                                          options);
    } else if (cache.normalized) {
        validate(options, cache.normalized->shape());
        cache.hvg = highly_variable_genes(*cache.normalized, options, ctx);
    } else {
        // Streamed: the moments came from the first pass.
        validate(options, MatrixShape{static_cast<std::int64_t>(cache.kept_cells.size()),
                                      static_cast<std::int64_t>(cache.kept_genes.size())});
        cache.hvg = select_by_dispersion(cache.streamed_means, cache.streamed_variances, options);
    }
    for (std::size_t gene = 0; gene < cache.hvg.highly_variable.size(); ++gene)
        if (cache.hvg.highly_variable[gene]) cache.hvg_genes.push_back(cache.kept_genes[gene]);
}

/// Subset to the HVGs, renormalise (zheng17), log1p, scale. Output: cache.hvg_block.
void run_scale(Engine::State& state, const LoadedData& data, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "scale");
    if (data.streamed) {
        // Second pass: normalise every row as the in-memory path does, keep the HVG
        // columns as shards, then the last part of the recipe on them.
        std::vector<std::uint8_t> keep(static_cast<std::size_t>(data.meta.shape.num_genes), 0);
        for (auto gene : cache.hvg_genes) keep[static_cast<std::size_t>(gene)] = 1;
        io::OpenedDataset reopened = io::open_dataset(data.meta.path);
        const auto ranges = plan_row_ranges(data.row_offsets, std::max(1, data.devices.num_shards()), data.devices.balance);
        NormalizeTotalOptions normalization;
        normalization.target_sum = cache.streamed_target;
        normalization.integer_dtype = zheng17_options(settings, data).integer_dtype;
        ShardSet block = stream_gene_block(*reopened.source, normalization, keep, ranges, ctx);
        cache.scaling = zheng17_finish(block, zheng17_options(settings, data), ctx).scaling;
        cache.hvg_block = std::move(block);
        cache.block_cells = cache.kept_cells;
        return;
    }
    // The HVG columns only: the other genes are never copied.
    ShardSet block;
    if (cache.zheng17) {
        std::lock_guard lock(data.raw_mutex);
        block = zheng17_hvg_block(data.raw, *cache.zheng17, cache.hvg, ctx);
    } else {
        block = settings.recipe != "none" ? cache.normalized->clone_columns(cache.hvg.highly_variable, ctx)
                                          : cache.normalized->clone();
    }
    std::vector<std::int64_t> cells = cache.kept_cells;
    ScaleOptions scale_options;
    if (settings.recipe != "none") {
        if (settings.recipe == "zheng17") {
            // Last part of recipe_zheng17: normalize_total(); log1p; scale().
            cache.scaling = zheng17_finish(block, zheng17_options(settings, data), ctx).scaling;
        } else {
            scale_options.max_value = SeuratRecipeOptions{}.max_value;
            log1p(block, ctx);
            cache.scaling = scale(block, scale_options, ctx);
        }
    } else {
        // Data already processed: PCA centres X without scaling (pp.pca zero_center).
        cache.scaling = scale(block, scale_options, ctx);
        std::fill(cache.scaling.std.begin(), cache.scaling.std.end(), 1.0);
        std::fill(cache.scaling.inv_std.begin(), cache.scaling.inv_std.end(), 1.0);
    }
    cache.hvg_block = std::move(block);
    cache.block_cells = std::move(cells);
}

void run_pca(Engine::State& state, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "pca");
    PcaOptions options;
    options.num_components = settings.num_pcs;
    options.seed = settings.seed;
    validate(options, cache.hvg_block->shape());
    const std::unique_ptr<Accelerator> accelerator = device_accelerator(state.config.device_provider.get(), *cache.hvg_block);
    cache.pca = pca(*cache.hvg_block, cache.scaling, options, ctx, accelerator.get());
}

void run_neighbors(Engine::State& state, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "neighbors");
    NeighborsOptions options;
    options.knn.num_neighbors = settings.num_neighbors;
    options.knn.method = parse_knn_method(settings.knn_method, "PipelineSettings::knn_method");
    options.knn.seed = settings.seed;
    options.knn.num_partitions = std::max(1, cache.hvg_block->num_shards());
    // Parallel HNSW insertion makes the graph depend on thread timing.
    options.knn.hnsw_parallel_build = !settings.deterministic;
    const std::unique_ptr<Accelerator> accelerator = device_accelerator(state.config.device_provider.get(), *cache.hvg_block);
    validate(options, cache.pca.scores.rows(), cache.pca.scores.cols());
    cache.neighbors = neighbors(cache.pca.scores, options, ctx, accelerator.get());
    cache.neighbors_seed = settings.seed;
    cache.neighbors_deterministic = settings.deterministic;
}

void run_umap(Engine::State& state, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "umap");
    UmapOptions options;
    options.min_dist = settings.min_dist;
    options.spread = settings.spread;
    options.num_epochs = settings.umap_epochs;
    options.num_components = settings.umap_components;
    options.seed = settings.seed;
    if (settings.deterministic) options.parallelism = UmapParallelism::Deterministic;
    // Intermediate embeddings go to the plot while the SGD runs.
    int total_epochs = 0;
    struct PlotFrames final : EmbeddingObserver {
        Engine::State& state;
        const int& total_epochs;
        PlotFrames(Engine::State& frame_state, const int& epochs) : state(frame_state), total_epochs(epochs) {}
        void on_epoch(int epoch, const DenseMatrix<float>& embedding) override {
            state.publish_frame(epoch, total_epochs, false, embedding);
        }
    } frames(state, total_epochs);
    // On GPUs: the deterministic SGD, run by the device (same epochs as the CPU's).
    const std::unique_ptr<Accelerator> accelerator = device_accelerator(state.config.device_provider.get(), *cache.hvg_block);
    if (accelerator) options.parallelism = UmapParallelism::Deterministic;
    validate(options);
    const std::int64_t num_cells = cache.pca.scores.rows();
    total_epochs = options.num_epochs > 0 ? options.num_epochs : (num_cells <= 10000 ? 500 : 200);
    UmapResult result = umap(cache.neighbors.connectivities, cache.pca.scores, options, ctx, accelerator.get(), &frames);
    state.publish_frame(result.num_epochs, result.num_epochs, true, result.embedding);
    cache.umap = std::move(result.embedding);
    cache.umap_curve = result.curve;
    cache.umap_deterministic = options.parallelism == UmapParallelism::Deterministic;
    cache.umap_seed = settings.seed;
}

void run_leiden(Engine::State& state, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "leiden");
    LeidenOptions options;
    options.resolution = settings.resolution;
    options.seed = settings.seed;
    validate(options);
    LeidenResult result = leiden(cache.neighbors.connectivities, options, ctx);
    cache.leiden = std::move(result.labels);
    cache.modularity = result.modularity;
    cache.leiden_resolution = options.resolution;
    cache.leiden_seed = options.seed;
}

/// Marker genes of the Leiden clusters on the HVG block (reference 'rest'). The values
/// tested are the block's log-normalised values, not their scaled form: Welch's t and
/// the Wilcoxon ranks do not change under the per-gene scaling, so the scores are
/// scanpy's on the recipe's output, while the fold changes are real log2 fold changes
/// (scanpy's formula applied to scaled means gives NaN wherever the rest's mean is
/// negative, i.e. for most top markers).
void run_markers(Engine::State& state, const LoadedData& data, const PipelineSettings& settings, JobContext& ctx) {
    auto& cache = state.cache;
    state.begin_step(ctx, "markers");
    RankGenesGroupsOptions options;
    options.method = settings.markers == "wilcoxon" ? MarkerMethod::Wilcoxon : MarkerMethod::TTest;
    validate(options);
    std::int32_t num_groups = 0;
    for (const auto label : cache.leiden) num_groups = std::max(num_groups, label + 1);
    std::vector<std::string> names;
    for (std::int32_t group = 0; group < num_groups; ++group) names.push_back(std::to_string(group));
    const RankGenesGroupsResult result = rank_genes_groups(*cache.hvg_block, cache.leiden, names, options, ctx);
    const auto& gene_names = data.meta.var.index();
    cache.markers.clear();
    for (const auto& group : result.groups) cache.markers.push_back(marker_group(group, gene_names, cache.hvg_genes));
    cache.markers_method = settings.markers;
}

}  // namespace

MarkerGroup marker_group(const GroupMarkers& group, const std::vector<std::string>& gene_names,
                         const std::vector<std::int64_t>& hvg_genes) {
    MarkerGroup out;
    out.group = group.name;
    for (const auto& gene : group.genes) {
        out.genes.push_back(gene_names[static_cast<std::size_t>(hvg_genes[static_cast<std::size_t>(gene.gene)])]);
        out.scores.push_back(gene.score);
        out.logfoldchanges.push_back(gene.logfoldchange);
        out.pvals.push_back(gene.pval);
        out.pvals_adj.push_back(gene.pval_adj);
        out.pct_group.push_back(gene.pct_group);
        out.pct_rest.push_back(gene.pct_rest);
    }
    return out;
}

void run_pipeline(Engine::State& state, const PipelineSettings& settings, JobContext& ctx) {
    const auto data = state.loaded();
    if (!data) throw std::invalid_argument("run: no dataset is open");
    auto& cache = state.cache;
    if (settings.recipe != "none" && !data->integer_counts)
        throw std::invalid_argument("PipelineSettings::recipe '" + settings.recipe +
                                    "' expects raw integer counts, but X holds non-integer values "
                                    "(already processed data: use recipe 'none')");

    // Keys: a stage's key holds its upstream key, so a change invalidates downstream.
    const std::string preprocess_key = join_key(settings.recipe, settings.min_counts_per_cell);
    const std::string hvg_key = key_of(preprocess_key, join_key(settings.num_top_genes));
    const std::string scale_key = key_of(hvg_key, "scale");
    const std::string pca_key = key_of(scale_key, join_key(settings.num_pcs));
    const std::string neighbors_key = key_of(pca_key, join_key(settings.num_neighbors, settings.knn_method, settings.seed,
                                                                         settings.deterministic));
    const std::string umap_key = key_of(neighbors_key, join_key(settings.min_dist, settings.spread, settings.umap_epochs,
                                                                settings.umap_components, settings.seed,
                                                                settings.deterministic));
    const std::string leiden_key = key_of(neighbors_key, join_key(settings.resolution, settings.seed));

    bool changed = false;
    const auto stage = [&](std::optional<std::string>& cached, const std::string& key, auto&& body) {
        if (!changed && cached && *cached == key) return;
        changed = true;
        cached.reset();
        body();
        cached = key;
    };
    stage(cache.preprocess_key, preprocess_key, [&] { run_preprocess(state, *data, settings, ctx); });
    stage(cache.hvg_key, hvg_key, [&] { run_hvg(state, *data, settings, ctx); });
    stage(cache.scale_key, scale_key, [&] { run_scale(state, *data, settings, ctx); });
    stage(cache.pca_key, pca_key, [&] { run_pca(state, settings, ctx); });
    if (settings.run_neighbors)
        stage(cache.neighbors_key, neighbors_key, [&] { run_neighbors(state, settings, ctx); });
    // Stages after neighbors depend on it but not on each other: each has its own
    // change flag starting from the neighbors stage's.
    const bool after_neighbors = changed;
    if (settings.run_umap) {
        changed = after_neighbors;
        stage(cache.umap_key, umap_key, [&] { run_umap(state, settings, ctx); });
    }
    if (settings.run_leiden) {
        changed = after_neighbors;
        stage(cache.leiden_key, leiden_key, [&] {
            run_leiden(state, settings, ctx);
            // A user's edit of the previous clusters (renamed categories) no longer applies.
            std::lock_guard lock(state.mutex);
            state.annotations.erase("leiden");
        });
        if (!settings.markers.empty())
            stage(cache.markers_key, key_of(leiden_key, settings.markers),
                  [&] { run_markers(state, *data, settings, ctx); });
        else
            cache.markers_key.reset();
    }

    state.publish(build_snapshot(state, *data));
}

std::shared_ptr<AnalysisSnapshot> build_snapshot(const Engine::State& state, const LoadedData& data) {
    const auto& cache = state.cache;
    auto snapshot = std::make_shared<AnalysisSnapshot>();
    auto summary = std::make_shared<DatasetSummary>();
    summary->path = data.meta.path;
    summary->format = format_name(data.meta.format);
    summary->shape = data.meta.shape;
    summary->nnz = data.meta.nnz;
    summary->integer_counts = data.integer_counts;
    summary->memory_bytes = 8 * (data.meta.shape.num_cells + 1) + 8 * data.meta.nnz;
    const auto columns = [](const Table& table) {
        std::vector<ColumnSummary> out;
        for (const auto& column : table.columns()) {
            ColumnSummary entry{column.name, column.type_name(), 0};
            if (const auto* categorical = std::get_if<CategoricalColumn>(&column.data))
                entry.num_categories = static_cast<std::int64_t>(categorical->categories.size());
            out.push_back(entry);
        }
        return out;
    };
    summary->obs_columns = columns(data.meta.obs);
    summary->var_columns = columns(data.meta.var);
    for (const auto& [key, matrix] : data.meta.obsm) summary->obsm_keys.push_back(key);
    const ShardSet& placed = data.streamed && cache.hvg_block ? *cache.hvg_block : data.raw;
    for (int shard = 0; shard < placed.num_shards(); ++shard) summary->devices.push_back(placed.shard(shard).name());
    summary->streamed = data.streamed;
    summary->device_note = data.device_note;
    // Shards that left their device during the run (out of memory in an in-place step).
    const auto& working = cache.hvg_block ? cache.hvg_block : cache.normalized;
    if (working)
        for (const auto& note : working->device_notes())
            summary->device_note += (summary->device_note.empty() ? "" : "; ") + note;
    snapshot->dataset = summary;

    // Cells of the analysis: those that reached PCA, else every cell.
    const bool analysed = cache.pca_key.has_value();
    snapshot->cells = analysed ? cache.block_cells : iota_rows(data.meta.shape.num_cells);
    const auto& cells = snapshot->cells;

    // obs: the file's columns, then QC, then the pipeline's.
    auto obs = std::make_shared<Table>(data.meta.obs.take_rows(cells));
    const auto per_cell = [&](const auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        std::vector<T> out;
        out.reserve(cells.size());
        for (auto cell : cells) out.push_back(values[static_cast<std::size_t>(cell)]);
        return out;
    };
    obs->set("n_genes_by_counts", IntColumn{per_cell(data.qc.n_genes_by_counts), {}});
    obs->set("total_counts", FloatColumn{per_cell(data.qc.total_counts)});
    obs->set("total_counts_mt", FloatColumn{per_cell(data.qc.total_counts_mt)});
    obs->set("pct_counts_mt", FloatColumn{per_cell(data.qc.pct_counts_mt)});
    if (analysed && !cache.n_counts_all.empty()) {
        // n_counts_all is per row of `normalized`; map to the final cells.
        std::vector<double> values;
        std::size_t cursor = 0;
        for (auto cell : cells) {
            while (cache.kept_cells[cursor] != cell) ++cursor;
            values.push_back(cache.n_counts_all[cursor]);
        }
        obs->set("n_counts_all", FloatColumn{std::move(values)});
    }
    snapshot->obs = obs;

    // var: the file's columns, QC, HVG statistics (NaN for genes the recipe dropped).
    auto var = std::make_shared<Table>(data.meta.var);
    var->set("n_cells_by_counts", IntColumn{data.qc.n_cells_by_counts, {}});
    var->set("mean_counts", FloatColumn{data.qc.mean_counts});
    var->set("total_counts", FloatColumn{data.qc.gene_total_counts});
    var->set("mt", BoolColumn{data.qc.mito_genes, {}});
    const auto num_genes = static_cast<std::size_t>(data.meta.shape.num_genes);
    if (analysed && !cache.hvg.highly_variable.empty()) {
        std::vector<std::uint8_t> highly_variable(num_genes, 0);
        std::vector<double> means(num_genes, k_nan), dispersions(num_genes, k_nan), norms(num_genes, k_nan);
        for (std::size_t column = 0; column < cache.kept_genes.size(); ++column) {
            const auto gene = static_cast<std::size_t>(cache.kept_genes[column]);
            highly_variable[gene] = cache.hvg.highly_variable[column];
            means[gene] = cache.hvg.means[column];
            if (!cache.hvg.dispersions.empty()) dispersions[gene] = cache.hvg.dispersions[column];
            if (!cache.hvg.dispersions_norm.empty()) norms[gene] = cache.hvg.dispersions_norm[column];
        }
        var->set("highly_variable", BoolColumn{std::move(highly_variable), {}});
        var->set("means", FloatColumn{std::move(means)});
        var->set("dispersions", FloatColumn{std::move(dispersions)});
        var->set("dispersions_norm", FloatColumn{std::move(norms)});
    }
    if (analysed) {
        std::vector<double> mean(num_genes, k_nan), std_dev(num_genes, k_nan);
        for (std::size_t column = 0; column < cache.hvg_genes.size(); ++column) {
            const auto gene = static_cast<std::size_t>(cache.hvg_genes[column]);
            mean[gene] = cache.scaling.mean[column];
            std_dev[gene] = cache.scaling.std[column];
        }
        var->set("mean", FloatColumn{std::move(mean)});
        var->set("std", FloatColumn{std::move(std_dev)});
    }
    snapshot->var = var;

    for (const auto& [key, matrix] : data.meta.obsm) {
        if (analysed && matrix.rows() != static_cast<std::int64_t>(cells.size())) continue;
        snapshot->obsm[key] = std::make_shared<DenseMatrix<float>>(matrix);
    }
    if (analysed) snapshot->obsm["X_pca"] = std::make_shared<DenseMatrix<float>>(cache.pca.scores);
    if (cache.umap_key) snapshot->obsm["X_umap"] = std::make_shared<DenseMatrix<float>>(cache.umap);
    if (cache.leiden_key) {
        CategoricalColumn leiden;
        std::int32_t num_clusters = 0;
        for (auto label : cache.leiden) num_clusters = std::max(num_clusters, label + 1);
        for (std::int32_t cluster = 0; cluster < num_clusters; ++cluster) leiden.categories.push_back(std::to_string(cluster));
        leiden.codes = cache.leiden;
        obs->set("leiden", std::move(leiden));
        snapshot->colors["leiden"] = default_category_colors(static_cast<std::size_t>(num_clusters));
    }
    for (const auto& column : obs->columns()) {
        const auto* categorical = std::get_if<CategoricalColumn>(&column.data);
        if (!categorical || snapshot->colors.count(column.name)) continue;
        // uns['<key>_colors'] from the file when present and complete.
        const UnsNode* stored = data.meta.uns.find(column.name + "_colors");
        const auto* strings = stored ? std::get_if<std::vector<std::string>>(&stored->value) : nullptr;
        snapshot->colors[column.name] = strings && strings->size() == categorical->categories.size()
                                            ? *strings
                                            : default_category_colors(categorical->categories.size());
    }
    if (cache.markers_key) {
        snapshot->markers = cache.markers;
        snapshot->markers_groupby = "leiden";
    }
    return snapshot;
}

/// uns['rank_genes_groups'] in scanpy's layout: params, and record arrays (one field
/// per group, n_genes rows) of names, scores, logfoldchanges (float32), pvals and
/// pvals_adj (float64).
static UnsNode rank_genes_groups_uns(const AnalysisSnapshot& snapshot, const StageCache& cache) {
    UnsNode node;
    auto& params = node["params"];
    params["groupby"] = UnsNode::leaf(snapshot.markers_groupby);
    params["reference"] = UnsNode::leaf(std::string("rest"));
    params["method"] = UnsNode::leaf(cache.markers_method);
    params["use_raw"] = UnsNode::leaf(false);
    params["corr_method"] = UnsNode::leaf(std::string("benjamini-hochberg"));
    std::size_t rows = snapshot.markers.front().genes.size();
    for (const auto& group : snapshot.markers) rows = std::min(rows, group.genes.size());
    UnsRecords names, scores, logfoldchanges, pvals, pvals_adj;
    scores.single_precision = logfoldchanges.single_precision = true;
    for (const auto& group : snapshot.markers) {
        for (UnsRecords* records : {&names, &scores, &logfoldchanges, &pvals, &pvals_adj}) records->fields.push_back(group.group);
        const auto head = [rows](const auto& values) { return std::vector(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rows)); };
        names.strings.push_back(head(group.genes));
        scores.numbers.push_back(head(group.scores));
        logfoldchanges.numbers.push_back(head(group.logfoldchanges));
        pvals.numbers.push_back(head(group.pvals));
        pvals_adj.numbers.push_back(head(group.pvals_adj));
    }
    node["names"] = UnsNode::leaf(std::move(names));
    node["scores"] = UnsNode::leaf(std::move(scores));
    node["logfoldchanges"] = UnsNode::leaf(std::move(logfoldchanges));
    node["pvals"] = UnsNode::leaf(std::move(pvals));
    node["pvals_adj"] = UnsNode::leaf(std::move(pvals_adj));
    return node;
}

Dataset export_dataset(const Engine::State& state, const LoadedData& data, const AnalysisSnapshot& snapshot) {
    const auto& cache = state.cache;
    Dataset out;
    out.path = data.meta.path;
    out.format = DatasetFormat::H5ad;
    out.shape = MatrixShape{static_cast<std::int64_t>(snapshot.cells.size()), data.meta.shape.num_genes};
    out.obs = *snapshot.obs;
    out.var = *snapshot.var;
    for (const auto& [key, matrix] : snapshot.obsm) out.obsm[key] = *matrix;
    out.uns = data.meta.uns;
    for (const auto& [key, colors] : snapshot.colors) out.uns[key + "_colors"] = UnsNode::leaf(colors);
    if (cache.pca_key) {
        // varm['PCs']: genes x components, zero rows for genes outside the HVG block
        // (scanpy's use_highly_variable layout).
        const auto& loadings = cache.pca.loadings;
        DenseMatrix<float> full(data.meta.shape.num_genes, loadings.cols(), 0.0f);
        for (std::size_t column = 0; column < cache.hvg_genes.size(); ++column)
            for (std::int64_t component = 0; component < loadings.cols(); ++component)
                full(cache.hvg_genes[column], component) = loadings(static_cast<std::int64_t>(column), component);
        out.varm["PCs"] = std::move(full);
        auto& pca = out.uns["pca"];
        pca["variance"] = UnsNode::leaf(cache.pca.variance);
        pca["variance_ratio"] = UnsNode::leaf(cache.pca.variance_ratio);
    }
    if (cache.neighbors_key) {
        out.obsp["distances"] = to_square(cache.neighbors.distances);
        out.obsp["connectivities"] = to_square(cache.neighbors.connectivities);
        auto& neighbors = out.uns["neighbors"];
        neighbors["connectivities_key"] = UnsNode::leaf(std::string("connectivities"));
        neighbors["distances_key"] = UnsNode::leaf(std::string("distances"));
        auto& params = neighbors["params"];
        params["n_neighbors"] = UnsNode::leaf(static_cast<std::int64_t>(cache.neighbors.knn.graph.num_neighbors));
        params["method"] = UnsNode::leaf(std::string("umap"));
        params["metric"] = UnsNode::leaf(std::string("euclidean"));
        params["random_state"] = UnsNode::leaf(static_cast<std::int64_t>(cache.neighbors_seed));
        params["deterministic"] = UnsNode::leaf(cache.neighbors_deterministic);
    }
    if (cache.umap_key) {
        // scanpy's uns['umap']['params'] (a, b), plus the seed and the SGD mode.
        auto& params = out.uns["umap"]["params"];
        params["a"] = UnsNode::leaf(cache.umap_curve.a);
        params["b"] = UnsNode::leaf(cache.umap_curve.b);
        params["random_state"] = UnsNode::leaf(static_cast<std::int64_t>(cache.umap_seed));
        params["deterministic"] = UnsNode::leaf(cache.umap_deterministic);
    }
    if (cache.leiden_key) {
        // scanpy's uns['leiden']['params'], plus the modularity of the labels.
        auto& leiden = out.uns["leiden"];
        auto& params = leiden["params"];
        params["resolution"] = UnsNode::leaf(cache.leiden_resolution);
        params["random_state"] = UnsNode::leaf(static_cast<std::int64_t>(cache.leiden_seed));
        params["n_iterations"] = UnsNode::leaf(static_cast<std::int64_t>(-1));
        leiden["modularity"] = UnsNode::leaf(cache.modularity);
    }
    if (cache.markers_key && !snapshot.markers.empty()) out.uns["rank_genes_groups"] = rank_genes_groups_uns(snapshot, cache);
    return out;
}

}  // namespace fathom::detail
