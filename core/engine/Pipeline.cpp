// The staged analysis pipeline run by Engine::run, and the snapshot / export views of
// its results. Each step is a StepState (detail/StepState.hpp) holding the Options it
// ran with and the versions of the steps it read, so a run recomputes exactly the steps
// whose Options changed and everything after them.
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "core/algo/knn.hpp"
#include "core/algo/leiden.hpp"
#include "core/algo/neighbors.hpp"
#include "core/algo/markers.hpp"
#include "core/algo/recipes.hpp"
#include "core/algo/umap.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/engine/detail/EngineState.hpp"
#include "core/engine/palette.hpp"
#include "core/engine/qc_thresholds.hpp"
#include "core/engine/settings_schema.hpp"
#include "core/io/RowSource.hpp"
#include "core/types/errors.hpp"

namespace fathom::detail {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

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

Zheng17Options zheng17_options(const PreprocessOptions& preprocess, std::int64_t num_top_genes) {
    Zheng17Options options;
    options.integer_dtype = preprocess.integer_dtype;
    options.num_top_genes = num_top_genes;
    options.pca.reset();  // the engine runs PCA as its own step
    return options;
}

// ---- the Options of each step, from the settings ----

PreprocessOptions preprocess_options(const PipelineSettings& settings, const LoadedData& data) {
    PreprocessOptions options;
    options.recipe = settings.recipe;
    options.min_counts_per_cell = settings.min_counts_per_cell;
    options.max_counts_per_cell = settings.max_counts_per_cell;
    options.min_genes_per_cell = settings.min_genes_per_cell;
    options.max_genes_per_cell = settings.max_genes_per_cell;
    options.max_pct_counts_mt = settings.max_pct_counts_mt;
    // scanpy keeps an h5ad's integer X as integers, which changes normalize_total's
    // arithmetic (float64); its 10x and Matrix Market readers give float32.
    options.integer_dtype = data.meta.format == DatasetFormat::H5ad &&
                            (data.meta.stored_type == ValueType::Int32 || data.meta.stored_type == ValueType::Int64);
    options.integer_counts = data.integer_counts;
    return options;
}

HvgStepOptions hvg_options(const PipelineSettings& settings) {
    HvgStepOptions options;
    const RecipeDefinition& recipe = recipe_definition(settings.recipe);
    options.hvg = recipe.hvg;
    if (options.hvg && recipe.top_genes) options.hvg->num_top_genes = settings.num_top_genes;
    return options;
}

PcaOptions pca_options(const PipelineSettings& settings) {
    PcaOptions options = settings.pca;
    options.seed = settings.seed;
    return options;
}

NeighborsOptions neighbors_options(const PipelineSettings& settings, int num_shards) {
    NeighborsOptions options;
    options.knn = settings.neighbors;
    options.knn.seed = settings.seed;
    options.knn.num_partitions = std::max(1, num_shards);
    // Parallel HNSW insertion makes the graph depend on thread timing.
    options.knn.hnsw_parallel_build = !settings.deterministic;
    return options;
}

UmapOptions umap_options(const PipelineSettings& settings, bool accelerated) {
    UmapOptions options = settings.umap;
    options.seed = settings.seed;
    // On GPUs: the deterministic SGD, run by the device (same epochs as the CPU's).
    if (settings.deterministic || accelerated) options.parallelism = UmapParallelism::Deterministic;
    return options;
}

LeidenOptions leiden_options(const PipelineSettings& settings) {
    LeidenOptions options = settings.leiden;
    options.seed = settings.seed;
    return options;
}

// ---- steps run by rank 0 of a run over several ranks ----

/// `compute()` on rank 0 only when the run spans several ranks: the result goes to the
/// others as bytes (`write` / `read`), so they skip the work and hold the same bits.
/// One process: compute().
template <typename Result, typename Compute, typename Write, typename Read>
Result on_rank_zero(const std::shared_ptr<Comm>& comm, Compute&& compute, Write write, Read read) {
    if (!comm || comm->size() == 1) return compute();
    if (comm->rank() == 0) {
        Result result = compute();
        ByteWriter out;
        write(out, result);
        comm->broadcast(out.bytes(), 0);
        return result;
    }
    const Bytes bytes = comm->broadcast({}, 0);
    ByteReader in(bytes);
    return read(in);
}

void put_umap(ByteWriter& out, const UmapResult& result) {
    out.put(result.embedding.rows());
    out.put(result.embedding.cols());
    out.put_vector(std::span<const float>(result.embedding.values()));
    out.put(result.curve.a);
    out.put(result.curve.b);
    out.put(result.num_epochs);
    out.put(result.num_edges);
    out.put(result.init_used);
    out.put(result.num_graph_components);
    out.put(result.spectral_converged);
    out.put(result.parallelism);
}

UmapResult get_umap(ByteReader& in) {
    UmapResult result;
    const auto rows = in.get<std::int64_t>();
    const auto cols = in.get<std::int64_t>();
    const std::vector<float> values = in.get_vector<float>();
    result.embedding = DenseMatrix<float>(rows, cols);
    std::copy(values.begin(), values.end(), result.embedding.values().begin());
    result.curve.a = in.get<double>();
    result.curve.b = in.get<double>();
    result.num_epochs = in.get<int>();
    result.num_edges = in.get<std::int64_t>();
    result.init_used = in.get<UmapInit>();
    result.num_graph_components = in.get<int>();
    result.spectral_converged = in.get<bool>();
    result.parallelism = in.get<UmapParallelism>();
    return result;
}

void put_leiden(ByteWriter& out, const LeidenResult& result) {
    out.put_vector(std::span<const std::int32_t>(result.labels));
    out.put(result.num_clusters);
    out.put_vector(std::span<const std::int64_t>(result.cluster_sizes));
    out.put(result.modularity);
    out.put(result.passes);
}

LeidenResult get_leiden(ByteReader& in) {
    LeidenResult result;
    result.labels = in.get_vector<std::int32_t>();
    result.num_clusters = in.get<int>();
    result.cluster_sizes = in.get_vector<std::int64_t>();
    result.modularity = in.get<double>();
    result.passes = in.get<int>();
    return result;
}

// ---- steps ----

/// The QC thresholds of `options` other than min_counts (filter_cells runs that one).
PipelineSettings other_qc_thresholds(const PreprocessOptions& options) {
    PipelineSettings thresholds;
    thresholds.min_counts_per_cell = 0.0;
    thresholds.max_counts_per_cell = options.max_counts_per_cell;
    thresholds.min_genes_per_cell = options.min_genes_per_cell;
    thresholds.max_genes_per_cell = options.max_genes_per_cell;
    thresholds.max_pct_counts_mt = options.max_pct_counts_mt;
    return thresholds;
}

/// Out-of-core Zheng17 on a non-integer X, as zheng17_moments computes it in memory:
/// filter_genes(min_counts=1) also drops genes with counts whose total is below 1, so
/// normalize_total's totals are over the kept genes only (NumPy's float32 row sums of
/// the filtered matrix), which pass 1 cannot know. Two more passes over this process's
/// rows (the packed rows when held, else the file): the totals over the kept genes, then
/// the normalised moments with normalize_total's per-cell factors — the in-memory path's
/// numbers, reduced per shard in global shard order.
PreprocessResult run_streamed_zheng17_noninteger(const LoadedData& data, const PreprocessOptions& options,
                                                 JobContext& ctx) {
    const auto& stats = data.streamed_stats;
    Zheng17Moments moments;
    ctx.begin_stage("filter_genes");
    FilterGenesOptions gene_filter;
    gene_filter.min_counts = 1.0;
    moments.gene_filter = filter_genes(stats.qc.gene_total_counts, stats.qc.n_cells_by_counts, gene_filter);
    ctx.begin_stage("normalize_total");
    // A non-integer X is a float X (an integer-typed X with negative values is refused
    // before as scaled), whose totals scanpy sums in float32.
    std::vector<double> totals =
        stream_row_sums(*matrix_rows(data), moments.gene_filter.keep, data.stream_layout, ctx);
    NormalizeTotalOptions normalization;
    normalization.integer_dtype = options.integer_dtype;
    moments.normalization = normalize_total_factors(std::move(totals), normalization);
    ctx.begin_stage("highly_variable_genes");
    ColumnStats column =
        stream_column_stats(*matrix_rows(data), moments.normalization.factors, data.stream_layout, ctx);
    moments.normalized_stats.num_rows = column.num_rows;
    for (std::size_t gene = 0; gene < column.sum.size(); ++gene) {
        if (!moments.gene_filter.keep[gene]) continue;
        moments.normalized_stats.sum.push_back(column.sum[gene]);
        moments.normalized_stats.sum_squares.push_back(column.sum_squares[gene]);
        moments.normalized_stats.nnz.push_back(column.nnz[gene]);
    }
    PreprocessResult out;
    out.kept_cells = iota_rows(data.meta.shape.num_cells);
    out.kept_genes = compose(iota_rows(data.meta.shape.num_genes), moments.gene_filter.keep);
    out.n_counts_all = moments.normalization.counts_per_cell;
    out.zheng17 = std::move(moments);
    return out;
}

/// Out-of-core Zheng17 up to HVG selection, from the first pass's statistics:
/// filter_genes(min_counts=1), then the moments of normalize_total's output
/// (target = median of the non-zero totals) as target * sum(x / total) — the same
/// quantities the in-memory path computes, up to float32 rounding of the scaled values.
/// On integer counts filter_genes(min_counts=1) removes only genes without counts, so
/// the first pass's totals (over every gene) are normalize_total's; on a non-integer X
/// they are not (run_streamed_zheng17_noninteger).
PreprocessResult run_streamed_preprocess(const LoadedData& data, const PreprocessOptions& options, JobContext& ctx) {
    if (options.recipe != Recipe::Zheng17 || options.min_counts_per_cell > 0.0 ||
        has_qc_thresholds(other_qc_thresholds(options)))
        throw std::invalid_argument("recipe: datasets streamed from their file (larger than the memory budget) "
                                    "support recipe zheng17 without QC cell filters (min/max counts, min/max genes, "
                                    "max_pct_counts_mt) only: raise the memory budget (--memory-budget) to load it");
    if (!options.integer_counts) return run_streamed_zheng17_noninteger(data, options, ctx);
    PreprocessResult out;
    const auto& stats = data.streamed_stats;
    const auto num_cells = static_cast<double>(data.meta.shape.num_cells);
    // normalize_total's target: the median of the non-zero totals (float32 unless X is
    // an integer array, see Zheng17Options::integer_dtype).
    std::vector<double> nonzero_totals;
    for (double total : stats.qc.total_counts)
        if (total > 0.0) nonzero_totals.push_back(total);
    double target = 0.0;
    if (options.integer_dtype) {
        std::sort(nonzero_totals.begin(), nonzero_totals.end());
        const std::size_t middle = nonzero_totals.size() / 2;
        target = nonzero_totals.size() % 2 ? nonzero_totals[middle]
                                            : 0.5 * (nonzero_totals[middle - 1] + nonzero_totals[middle]);
    } else {
        target = median_float32(std::vector<float>(nonzero_totals.begin(), nonzero_totals.end()));
    }
    out.streamed_target = target;
    out.kept_cells = iota_rows(data.meta.shape.num_cells);
    for (std::size_t gene = 0; gene < stats.qc.gene_total_counts.size(); ++gene) {
        if (stats.qc.gene_total_counts[gene] < 1.0) continue;
        out.kept_genes.push_back(static_cast<std::int64_t>(gene));
        const double sum = target * stats.sum_inverse_total[gene];
        const double sum_squares = target * target * stats.sum_squares_inverse_total[gene];
        out.streamed_means.push_back(sum / num_cells);
        out.streamed_variances.push_back(std::max(0.0, (sum_squares - sum * sum / num_cells) / (num_cells - 1.0)));
    }
    out.n_counts_all = stats.qc.total_counts;
    return out;
}

/// Cell pre-filter + the recipe up to gene selection (recipe_definition's filters and
/// normalisation).
PreprocessResult run_preprocess(const LoadedData& data, const PreprocessOptions& options, std::int64_t num_top_genes,
                                JobContext& ctx) {
    if (data.streamed) return run_streamed_preprocess(data, options, ctx);
    PreprocessResult out;
    ShardSet shards;
    std::vector<std::int64_t> cells = iota_rows(data.raw.num_cells());
    std::vector<std::int64_t> genes = iota_rows(data.raw.num_genes());
    const PipelineSettings other_thresholds = other_qc_thresholds(options);
    const bool qc_filters = has_qc_thresholds(other_thresholds);
    if (options.recipe == Recipe::Zheng17 && options.min_counts_per_cell <= 0.0 && !qc_filters) {
        // recipe_zheng17 up to the dispersion statistics, on the raw shards and without a
        // normalised copy: filter_genes(min_counts=1) and the cell totals from the QC
        // (integer counts) or the shards; the scale step copies
        // only the HVG columns.
        // The QC's totals are normalize_total's only when filter_genes(min_counts=1)
        // removes genes without counts alone, i.e. for integer counts; otherwise the
        // totals over the kept genes are taken from the shards.
        std::lock_guard lock(data.raw_mutex);
        Zheng17Moments moments = zheng17_moments(data.raw, zheng17_options(options, num_top_genes), ctx,
                                                 options.integer_counts ? &data.qc() : nullptr);
        out.kept_cells = std::move(cells);
        out.kept_genes = compose(genes, moments.gene_filter.keep);
        out.n_counts_all = moments.normalization.counts_per_cell;
        out.zheng17 = std::move(moments);
        return out;
    }
    {
        std::lock_guard lock(data.raw_mutex);
        shards = data.raw.clone();
    }
    if (options.min_counts_per_cell > 0.0) {
        FilterCellsOptions filter_options;
        filter_options.min_counts = options.min_counts_per_cell;
        const FilterResult filter = filter_cells(shards, filter_options, ctx);
        apply_cell_filter(shards, filter, ctx);
        cells = compose(cells, filter.keep);
    }
    if (qc_filters) {
        // The QC view's thresholds, on the QC metrics of the raw counts (computed at open).
        const QcResult& qc = data.qc();
        const std::vector<std::uint8_t> passing =
            cells_passing_qc(qc.total_counts, qc.n_genes_by_counts, qc.pct_counts_mt, other_thresholds);
        FilterResult filter;
        filter.keep.reserve(cells.size());
        for (const std::int64_t cell : cells) filter.keep.push_back(passing[static_cast<std::size_t>(cell)]);
        for (const std::uint8_t kept : filter.keep) (kept ? filter.num_kept : filter.num_removed) += 1;
        apply_cell_filter(shards, filter, ctx);
        cells = compose(cells, filter.keep);
    }
    const RecipeDefinition& recipe = recipe_definition(options.recipe);
    if (options.recipe == Recipe::Zheng17) {
        // recipe_zheng17, first part: filter_genes(min_counts=1);
        // normalize_total(key_added='n_counts_all').
        const Zheng17Preprocessed pre = zheng17_preprocess(shards, zheng17_options(options, num_top_genes), ctx);
        genes = compose(genes, pre.gene_filter.keep);
        out.n_counts_all = pre.normalization.counts_per_cell;
    } else {
        if (recipe.filter_cells) {
            const FilterResult cell_filter = filter_cells(shards, *recipe.filter_cells, ctx);
            apply_cell_filter(shards, cell_filter, ctx);
            cells = compose(cells, cell_filter.keep);
        }
        if (recipe.filter_genes) {
            const FilterResult gene_filter = filter_genes(shards, *recipe.filter_genes, ctx);
            apply_gene_filter(shards, gene_filter, ctx);
            genes = compose(genes, gene_filter.keep);
        }
        if (recipe.normalize) {
            // scanpy normalises an integer X in float64 (NormalizeTotalOptions::integer_dtype).
            NormalizeTotalOptions normalize = *recipe.normalize;
            normalize.integer_dtype = options.integer_dtype;
            normalize_total(shards, normalize, ctx);
        }
    }
    out.normalized = std::move(shards);
    out.kept_cells = std::move(cells);
    out.kept_genes = std::move(genes);
    return out;
}

/// Gene selection on the preprocessed matrix.
HvgStepResult run_hvg(const PreprocessResult& pre, const HvgStepOptions& options, JobContext& ctx) {
    HvgStepResult out;
    if (!options.hvg) {
        out.hvg_genes = pre.kept_genes;
        return out;
    }
    const HvgOptions& hvg = *options.hvg;
    if (pre.zheng17) {
        ctx.begin_stage("highly_variable_genes");
        out.hvg = highly_variable_genes(pre.zheng17->normalized_stats, static_cast<std::int64_t>(pre.kept_cells.size()), hvg);
    } else if (pre.normalized) {
        validate(hvg, pre.normalized->shape());
        out.hvg = highly_variable_genes(*pre.normalized, hvg, ctx);
    } else {
        // Streamed: the moments came from the first pass.
        validate(hvg, MatrixShape{static_cast<std::int64_t>(pre.kept_cells.size()),
                                  static_cast<std::int64_t>(pre.kept_genes.size())});
        out.hvg = select_by_dispersion(pre.streamed_means, pre.streamed_variances, hvg);
    }
    for (std::size_t gene = 0; gene < out.hvg.highly_variable.size(); ++gene)
        if (out.hvg.highly_variable[gene]) out.hvg_genes.push_back(pre.kept_genes[gene]);
    if (out.hvg_genes.size() < 2 && !hvg.num_top_genes)
        throw std::invalid_argument("recipe: " + std::to_string(out.hvg_genes.size()) + " of " +
                                    std::to_string(pre.kept_genes.size()) +
                                    " genes pass the highly-variable cut-offs (mean in (" + std::to_string(hvg.min_mean) +
                                    ", " + std::to_string(hvg.max_mean) + "), normalised dispersion > " +
                                    std::to_string(hvg.min_disp) + "); PCA needs at least 2");
    return out;
}

/// Subset to the HVGs, then the rest of the recipe (renormalise, log1p, scale).
ScaleStepResult run_scale(const LoadedData& data, const PreprocessResult& pre, const HvgStepResult& selected,
                          const ScaleStepOptions& options, JobContext& ctx) {
    ScaleStepResult out;
    const RecipeDefinition& recipe = recipe_definition(options.recipe);
    Zheng17Options zheng17;
    zheng17.integer_dtype = options.integer_dtype;
    if (data.streamed) {
        // Second pass: normalise every row as the in-memory path does, keep the HVG
        // columns as shards, then the last part of the recipe on them.
        std::vector<std::uint8_t> keep(static_cast<std::size_t>(data.meta.shape.num_genes), 0);
        for (auto gene : selected.hvg_genes) keep[static_cast<std::size_t>(gene)] = 1;
        // The packed rows of the first pass when held, else the file again.
        const std::unique_ptr<io::RowSource> source = matrix_rows(data);
        ShardSet block;
        if (pre.zheng17) {
            // Non-integer X: normalize_total's factors from the totals over the kept genes.
            block = stream_gene_block(*source, pre.zheng17->normalization.factors, keep, data.stream_layout, ctx);
        } else {
            NormalizeTotalOptions normalization;
            normalization.target_sum = pre.streamed_target;
            normalization.integer_dtype = options.integer_dtype;
            block = stream_gene_block(*source, normalization, keep, data.stream_layout, ctx);
        }
        out.scaling = zheng17_finish(block, zheng17, ctx).scaling;
        out.hvg_block = std::move(block);
        out.block_cells = pre.kept_cells;
        return out;
    }
    // The HVG columns only: the other genes are never copied.
    ShardSet block;
    if (pre.zheng17) {
        std::lock_guard lock(data.raw_mutex);
        block = zheng17_hvg_block(data.raw, *pre.zheng17, selected.hvg, ctx);
    } else {
        block = recipe.hvg ? pre.normalized->clone_columns(selected.hvg.highly_variable, ctx) : pre.normalized->clone();
    }
    if (options.recipe == Recipe::Zheng17) {
        // Last part of recipe_zheng17: normalize_total(); log1p; scale().
        out.scaling = zheng17_finish(block, zheng17, ctx).scaling;
    } else if (recipe.scale) {
        if (recipe.log1p) log1p(block, ctx);
        out.scaling = scale(block, *recipe.scale, ctx);
    } else {
        // Data already processed: PCA centres X without scaling (pp.pca zero_center).
        out.scaling = scale(block, ScaleOptions{}, ctx);
        std::fill(out.scaling.std.begin(), out.scaling.std.end(), 1.0);
        std::fill(out.scaling.inv_std.begin(), out.scaling.inv_std.end(), 1.0);
    }
    out.hvg_block = std::move(block);
    out.block_cells = pre.kept_cells;
    return out;
}

UmapResult run_umap(Engine::State& state, const NeighborsResult& graph, const PcaResult& pca,
                    const UmapOptions& options, const Accelerator* accelerator, JobContext& ctx) {
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
    validate(options);
    const std::int64_t num_cells = pca.scores.rows();
    total_epochs = options.num_epochs > 0 ? options.num_epochs : (num_cells <= kUmapDeterministicMaxCells ? 500 : 200);
    UmapResult result = umap(graph.connectivities, pca.scores, options, ctx, accelerator, &frames);
    state.publish_frame(result.num_epochs, result.num_epochs, true, result.embedding);
    return result;
}

/// Marker genes of the Leiden clusters on the HVG block (reference 'rest'). The values
/// tested are the block's log-normalised values, not their scaled form: Welch's t and
/// the Wilcoxon ranks do not change under the per-gene scaling, so the scores are
/// scanpy's on the recipe's output, while the fold changes are real log2 fold changes
/// (scanpy's formula applied to scaled means gives NaN wherever the rest's mean is
/// negative, i.e. for most top markers).
std::vector<MarkerGroup> run_markers(const LoadedData& data, const ScaleStepResult& scaled, const HvgStepResult& selected,
                                     const LeidenResult& clusters, const RankGenesGroupsOptions& options,
                                     JobContext& ctx) {
    validate(options);
    std::int32_t num_groups = 0;
    for (const auto label : clusters.labels) num_groups = std::max(num_groups, label + 1);
    std::vector<std::string> names;
    for (std::int32_t group = 0; group < num_groups; ++group) names.push_back(std::to_string(group));
    const RankGenesGroupsResult result = rank_genes_groups(scaled.hvg_block, clusters.labels, names, options, ctx);
    const auto& gene_names = data.meta.var.index();
    std::vector<MarkerGroup> out;
    for (const auto& group : result.groups) out.push_back(marker_group(group, gene_names, selected.hvg_genes));
    return out;
}

/// A computation beside the pipeline's (Leiden beside UMAP): a task in the pipeline's own
/// TBB arena, so the two share its threads rather than oversubscribing the cores (the
/// SGD's epochs end in a barrier that a descheduled thread would hold up). It has its own
/// JobContext: finish() forwards the pipeline's cancellation to it while waiting, and an
/// unfinished task is cancelled and waited for when the pipeline leaves early.
template <typename Result>
class BesideTask {
public:
    BesideTask() = default;
    BesideTask(const BesideTask&) = delete;
    BesideTask& operator=(const BesideTask&) = delete;
    ~BesideTask() {
        if (!m_started) return;
        m_side.cancel();
        m_group.wait();
    }

    template <typename Compute>
    void start(Compute compute) {
        m_started = true;
        m_group.run([this, compute = std::move(compute)] {
            const auto started = std::chrono::steady_clock::now();
            try {
                m_result = compute(m_side);
            } catch (...) {
                m_error = std::current_exception();
            }
            m_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        });
    }
    bool started() const { return m_started; }

    /// Waits for the result, helping with the task's own parallel work (cancelling the
    /// task when `ctx` is cancelled), and returns it, or rethrows what the task threw.
    Result finish(JobContext& ctx) {
        std::atomic<bool> waiting{true};
        std::thread watcher([&] {
            while (waiting.load(std::memory_order_relaxed)) {
                if (ctx.cancelled()) {
                    m_side.cancel();
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
        m_group.wait();
        waiting.store(false, std::memory_order_relaxed);
        watcher.join();
        m_started = false;
        ctx.checkpoint();
        if (m_error) std::rethrow_exception(m_error);
        return std::move(*m_result);
    }
    /// The task's own wall time (after finish()).
    double seconds() const { return m_seconds; }

private:
    JobContext m_side;
    tbb::task_group m_group;
    bool m_started = false;
    std::optional<Result> m_result;
    std::exception_ptr m_error;
    double m_seconds = 0.0;
};

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
    // An input with nothing to analyse is a problem of the file, not of the options:
    // the readers refuse empty matrices; an all-zero one has no variance to decompose.
    const MatrixShape& shape = data->meta.shape;
    const std::string matrix = data->meta.matrix_name.empty() ? std::string("matrix") : data->meta.matrix_name;
    if (shape.num_cells == 0 || shape.num_genes == 0)
        throw FormatError(data->meta.path, matrix, "empty matrix: " + std::to_string(shape.num_cells) + " cells x " +
                                                       std::to_string(shape.num_genes) + " genes, nothing to analyse");
    if (data->meta.nnz == 0)
        throw FormatError(data->meta.path, matrix, "every value is zero (" + std::to_string(shape.num_cells) + " cells x " +
                                                       std::to_string(shape.num_genes) + " genes): nothing to analyse");
    auto& cache = state.cache;
    if (has_qc_thresholds(settings) && !data->integer_counts)
        throw std::invalid_argument("QC cell filters (min/max counts, min/max genes, max_pct_counts_mt) need raw "
                                    "counts, but X holds non-integer values (already processed data)");

    // Each step re-runs when its Options or the version of a step it reads changed;
    // steps this run does not reach stay cached but are not shown.
    cache.deactivate();
    cache.settings = settings;
    cache.warnings.clear();
    // Negative values: the recipes' log1p gives NaN (Scanpy's PCA then fails on them).
    if (settings.recipe != Recipe::None &&
        (data->content.content == MatrixContent::Scaled || data->content.content == MatrixContent::Other))
        throw std::invalid_argument(std::string("recipe ") + recipe_definition(settings.recipe).name +
                                    " needs non-negative counts, and X holds negative values (X looks " +
                                    matrix_content_name(data->content.content) + ": " + data->content.evidence +
                                    "): its log1p would give NaN; choose recipe none for processed data");
    // Otherwise Scanpy runs its recipes on any X; so does the engine, and says when the
    // recipe contradicts what X holds (matrix_content.hpp).
    if (std::string warning = recipe_content_warning(settings.recipe, data->content); !warning.empty())
        cache.warnings.push_back(std::move(warning));
    auto& clock = cache.clock;
    const auto step = [&](PipelineStep which) { state.begin_step(ctx, step_name(which)); };
    const PreprocessOptions preprocess = preprocess_options(settings, *data);
    cache.preprocess.update(preprocess, {data->qc_step.version()}, clock, [&] {
        step(PipelineStep::Preprocess);
        return run_preprocess(*data, preprocess, settings.num_top_genes, ctx);
    });
    const auto& pre = *cache.preprocess.result();
    const HvgStepOptions selection = hvg_options(settings);
    cache.hvg.update(selection, {cache.preprocess.version()}, clock, [&] {
        step(PipelineStep::Hvg);
        return run_hvg(pre, selection, ctx);
    });
    const auto& selected = *cache.hvg.result();
    cache.scale.update(ScaleStepOptions{settings.recipe, preprocess.integer_dtype},
                       {cache.preprocess.version(), cache.hvg.version()}, clock, [&] {
                           step(PipelineStep::Scale);
                           return run_scale(*data, pre, selected, ScaleStepOptions{settings.recipe, preprocess.integer_dtype},
                                            ctx);
                       });
    const auto& scaled = *cache.scale.result();
    if (data->streamed && !state.config.keep_packed_rows) {
        // The second pass has read the packed rows; nothing after it needs them.
        std::lock_guard lock(data->packed_mutex);
        data->packed.reset();
    }
    const DeviceProvider* provider = state.config.device_provider.get();
    const PcaOptions pca = pca_options(settings);
    cache.pca.update(pca, {cache.scale.version()}, clock, [&] {
        step(PipelineStep::Pca);
        validate(pca, scaled.hvg_block.shape());
        const std::unique_ptr<Accelerator> accelerator = device_accelerator(provider, scaled.hvg_block);
        return fathom::pca(scaled.hvg_block, scaled.scaling, pca, ctx, accelerator.get());
    });
    if (settings.run_neighbors) {
        const NeighborsOptions options = neighbors_options(settings, scaled.hvg_block.num_shards());
        cache.neighbors.update(options, {cache.pca.version()}, clock, [&] {
            step(PipelineStep::Neighbors);
            const auto& scores = cache.pca.result()->scores;
            validate(options, scores.rows(), scores.cols());
            // Over several ranks the search is shared (each rank holds the replicated
            // X_pca: the exact search splits the queries, the IVF search its phases) and
            // rank 0 gets the graph; the graph steps run there, and the other ranks hold
            // no graph and receive the Leiden labels and the embedding.
            const auto& comm = state.config.comm;
            if (comm && comm->size() > 1) {
                KnnResult knn = nearest_neighbors(scores, options.knn, *comm, ctx);
                if (comm->rank() != 0) return NeighborsResult{};
                return neighbors_from_knn(std::move(knn), options, ctx);
            }
            const std::unique_ptr<Accelerator> accelerator = device_accelerator(provider, scaled.hvg_block);
            return fathom::neighbors(scores, options, ctx, accelerator.get());
        });
    }
    // UMAP and Leiden both read only the graph (and UMAP the PCA): when both are due on a
    // single rank, Leiden runs as a task beside UMAP in the same arena (BesideTask).
    // Leiden is sequential for the most part (leidenalg's visiting order), so it would
    // leave a core idle on its own; beside UMAP's parallel SGD the two share the cores. Neither result depends on
    // the other or on the scheduling (the Hogwild SGD is racy either way; the
    // deterministic one and every Leiden flavor give the same results on any threads).
    const bool single_rank = !state.config.comm || state.config.comm->size() == 1;
    const LeidenOptions leiden_settings = leiden_options(settings);
    const std::vector<std::uint64_t> leiden_inputs{cache.neighbors.version()};
    BesideTask<LeidenResult> leiden_beside;
    if (settings.run_umap) {
        const std::unique_ptr<Accelerator> accelerator = device_accelerator(provider, scaled.hvg_block);
        const UmapOptions options = umap_options(settings, accelerator != nullptr);
        const std::vector<std::uint64_t> umap_inputs{cache.neighbors.version(), cache.pca.version()};
        if (single_rank && settings.run_leiden && !cache.umap.current_for(options, umap_inputs) &&
            !cache.leiden.current_for(leiden_settings, leiden_inputs) && tbb::this_task_arena::max_concurrency() > 1) {
            validate(leiden_settings);
            const CsrGraph* graph = &cache.neighbors.result()->connectivities;
            leiden_beside.start([graph, leiden_settings](JobContext& side) { return leiden(*graph, leiden_settings, side); });
        }
        cache.umap.update(options, umap_inputs, clock, [&] {
            step(PipelineStep::Umap);
            // Over several ranks rank 0 runs it and the others receive the embedding.
            const auto compute = [&] {
                return on_rank_zero<UmapResult>(
                    state.config.comm,
                    [&] { return run_umap(state, *cache.neighbors.result(), *cache.pca.result(), options, accelerator.get(), ctx); },
                    put_umap, get_umap);
            };
            // Isolated beside Leiden: this thread never picks up the Leiden task in the
            // middle of an epoch (a free thread takes it; UMAP's threads join it when free).
            return leiden_beside.started() ? tbb::this_task_arena::isolate(compute) : compute();
        });
    }
    if (settings.run_leiden) {
        const LeidenOptions& options = leiden_settings;
        const bool ran = cache.leiden.update(options, leiden_inputs, clock, [&] {
            step(PipelineStep::Leiden);
            if (leiden_beside.started()) {
                LeidenResult result = leiden_beside.finish(ctx);
                cache.leiden_seconds = leiden_beside.seconds();
                cache.leiden_beside_umap = true;
                return result;
            }
            validate(options);
            const auto started = std::chrono::steady_clock::now();
            LeidenResult result = on_rank_zero<LeidenResult>(
                state.config.comm, [&] { return leiden(cache.neighbors.result()->connectivities, options, ctx); },
                put_leiden, get_leiden);
            cache.leiden_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            cache.leiden_beside_umap = false;
            return result;
        });
        if (ran) {
            // A user's edit of the previous clusters (renamed categories) no longer applies.
            std::lock_guard lock(state.mutex);
            state.annotations.erase("leiden");
        }
        if (settings.run_markers)
            cache.markers.update(settings.markers, {cache.leiden.version(), cache.scale.version(), cache.hvg.version()},
                                 clock, [&] {
                                     step(PipelineStep::Markers);
                                     return run_markers(*data, scaled, selected, *cache.leiden.result(),
                                                        settings.markers, ctx);
                                 });
    }

    state.publish(build_snapshot(state, *data));
}

std::string pipeline_obsm_key(const std::string& key, const Dataset& meta) {
    return meta.obsm.count(key) ? key + "_fathom" : key;
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
    summary->content = data.content;
    summary->matrix_name = data.meta.matrix_name;
    summary->open_note = data.open_note;
    summary->num_var_names_made_unique = data.meta.num_var_names_made_unique;
    summary->has_raw = data.raw_matrix.has_value();
    summary->raw_num_genes = data.raw_matrix ? data.raw_matrix->var.num_rows() : 0;
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
    const ScaleStepResult* scaled = cache.scale.current();
    const ShardSet& placed = data.streamed && scaled ? scaled->hvg_block : data.raw;
    // This process's shards (a rank of a run over several lists its own).
    summary->local_rows_end = data.meta.shape.num_cells;
    if (data.streamed) {
        const RowRange rows = data.stream_layout.local_rows();
        summary->local_rows_begin = rows.begin;
        summary->local_rows_end = rows.end;
        const auto& offsets = data.row_offsets;
        summary->local_matrix_bytes =
            rows.size() ? 8 * (rows.size() + 1) + 8 * (offsets[static_cast<std::size_t>(rows.end)] -
                                                        offsets[static_cast<std::size_t>(rows.begin)])
                        : 0;
    } else {
        const ShardSet& raw = data.raw;
        const int first = raw.first_local_shard(), count = raw.num_local_shards();
        summary->local_rows_begin = count ? raw.shard(first).row_begin() : 0;
        summary->local_rows_end = count ? raw.shard(first + count - 1).row_begin() + raw.shard(first + count - 1).num_rows() : 0;
        summary->local_matrix_bytes = 0;
        for (int shard = first; shard < first + count; ++shard)
            summary->local_matrix_bytes += 8 * (raw.shard(shard).num_rows() + 1) + 8 * raw.shard(shard).nnz();
    }
    for (int shard = placed.first_local_shard(); shard < placed.first_local_shard() + placed.num_local_shards(); ++shard)
        summary->devices.push_back(placed.shard(shard).name());
    summary->streamed = data.streamed;
    summary->matrix_storage = !data.streamed ? "memory" : data.packed_at_open ? "packed" : "file";
    summary->packed_bytes = data.packed_bytes;
    summary->memory_budget_bytes = data.memory_budget;
    summary->device_note = data.device_note;
    // Shards that left their device during the run (out of memory in an in-place step).
    const PreprocessResult* pre = cache.preprocess.current();
    const ShardSet* working = scaled ? &scaled->hvg_block : pre && pre->normalized ? &*pre->normalized : nullptr;
    if (working)
        for (const auto& note : working->device_notes())
            summary->device_note += (summary->device_note.empty() ? "" : "; ") + note;
    snapshot->dataset = summary;

    // Cells of the analysis: those that reached PCA, else every cell.
    // Only the steps of the latest run are shown (a switched-off UMAP is not).
    const PcaResult* pca = cache.pca.current();
    const HvgStepResult* selected = cache.hvg.current();
    const bool analysed = pca != nullptr;
    snapshot->cells = analysed ? scaled->block_cells : iota_rows(data.meta.shape.num_cells);
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
    // QC metrics describe counts: on an analysed file's X (scaled, log-normalised) they
    // would be numbers without meaning (a percentage of 100.5 or -7.1), so they are not shown.
    snapshot->qc = data.qc_metrics;
    if (data.integer_counts) {
        obs->set("n_genes_by_counts", IntColumn{per_cell(data.qc().n_genes_by_counts), {}});
        obs->set("total_counts", FloatColumn{per_cell(data.qc().total_counts)});
        obs->set("total_counts_mt", FloatColumn{per_cell(data.qc().total_counts_mt)});
        obs->set("pct_counts_mt", FloatColumn{per_cell(data.qc().pct_counts_mt)});
    }
    if (analysed && !pre->n_counts_all.empty()) {
        // n_counts_all is per row of `normalized`; map to the final cells.
        std::vector<double> values;
        std::size_t cursor = 0;
        for (auto cell : cells) {
            while (pre->kept_cells[cursor] != cell) ++cursor;
            values.push_back(pre->n_counts_all[cursor]);
        }
        obs->set("n_counts_all", FloatColumn{std::move(values)});
    }
    snapshot->obs = obs;

    // var: the file's columns, QC, HVG statistics (NaN for genes the recipe dropped).
    auto var = std::make_shared<Table>(data.meta.var);
    if (data.integer_counts) {
        var->set("n_cells_by_counts", IntColumn{data.qc().n_cells_by_counts, {}});
        var->set("mean_counts", FloatColumn{data.qc().mean_counts});
        var->set("total_counts", FloatColumn{data.qc().gene_total_counts});
    }
    var->set("mt", BoolColumn{data.qc().mito_genes, {}});
    const auto num_genes = static_cast<std::size_t>(data.meta.shape.num_genes);
    if (analysed && !selected->hvg.highly_variable.empty()) {
        const HvgResult& hvg = selected->hvg;
        std::vector<std::uint8_t> highly_variable(num_genes, 0);
        std::vector<double> means(num_genes, k_nan), dispersions(num_genes, k_nan), norms(num_genes, k_nan);
        for (std::size_t column = 0; column < pre->kept_genes.size(); ++column) {
            const auto gene = static_cast<std::size_t>(pre->kept_genes[column]);
            highly_variable[gene] = hvg.highly_variable[column];
            means[gene] = hvg.means[column];
            if (!hvg.dispersions.empty()) dispersions[gene] = hvg.dispersions[column];
            if (!hvg.dispersions_norm.empty()) norms[gene] = hvg.dispersions_norm[column];
        }
        var->set("highly_variable", BoolColumn{std::move(highly_variable), {}});
        var->set("means", FloatColumn{std::move(means)});
        var->set("dispersions", FloatColumn{std::move(dispersions)});
        var->set("dispersions_norm", FloatColumn{std::move(norms)});
    }
    if (analysed) {
        std::vector<double> mean(num_genes, k_nan), std_dev(num_genes, k_nan);
        for (std::size_t column = 0; column < selected->hvg_genes.size(); ++column) {
            const auto gene = static_cast<std::size_t>(selected->hvg_genes[column]);
            mean[gene] = scaled->scaling.mean[column];
            std_dev[gene] = scaled->scaling.std[column];
        }
        var->set("mean", FloatColumn{std::move(mean)});
        var->set("std", FloatColumn{std::move(std_dev)});
    }
    snapshot->var = var;

    // The file's own embeddings stay as they are (on the analysed cells); the pipeline's
    // take the scanpy keys only where the file has none (pipeline_obsm_key).
    for (const auto& [key, matrix] : data.meta.obsm) {
        if (matrix.rows() != data.meta.shape.num_cells) continue;
        if (!analysed || cells.size() == static_cast<std::size_t>(matrix.rows())) {
            snapshot->obsm[key] = std::make_shared<DenseMatrix<float>>(matrix);
            continue;
        }
        auto rows = std::make_shared<DenseMatrix<float>>(static_cast<std::int64_t>(cells.size()), matrix.cols());
        for (std::size_t row = 0; row < cells.size(); ++row)
            for (std::int64_t column = 0; column < matrix.cols(); ++column)
                (*rows)(static_cast<std::int64_t>(row), column) = matrix(cells[row], column);
        snapshot->obsm[key] = std::move(rows);
    }
    if (analysed) snapshot->obsm[pipeline_obsm_key("X_pca", data.meta)] = std::make_shared<DenseMatrix<float>>(pca->scores);
    if (const UmapResult* umap = cache.umap.current())
        snapshot->obsm[pipeline_obsm_key("X_umap", data.meta)] = std::make_shared<DenseMatrix<float>>(umap->embedding);
    if (const LeidenResult* clusters = cache.leiden.current()) {
        CategoricalColumn leiden;
        std::int32_t num_clusters = 0;
        for (auto label : clusters->labels) num_clusters = std::max(num_clusters, label + 1);
        for (std::int32_t cluster = 0; cluster < num_clusters; ++cluster) leiden.categories.push_back(std::to_string(cluster));
        leiden.codes = clusters->labels;
        obs->set("leiden", std::move(leiden));
        snapshot->colors["leiden"] = default_category_colors(static_cast<std::size_t>(num_clusters));
        PipelineSettings ran;  // the flavor's name as the settings spell it
        ran.leiden = *cache.leiden.options();
        snapshot->leiden = LeidenSummary{std::get<std::string>(find_setting("flavor")->get(ran)), clusters->modularity,
                                         clusters->num_clusters, clusters->passes, cache.leiden_seconds,
                                         cache.leiden_beside_umap};
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
    snapshot->warnings = cache.warnings;
    if (const NeighborsResult* graph = cache.neighbors.current())
        snapshot->knn = std::make_shared<const KnnSummary>(
            KnnSummary{knn_method_name(graph->knn.method_used), graph->knn.recall, graph->knn.recall_queries});
    if (const auto* markers = cache.markers.current()) {
        snapshot->markers = *markers;
        snapshot->markers_groupby = "leiden";
    }
    return snapshot;
}

/// uns['rank_genes_groups'] in scanpy's layout: params, and record arrays (one field
/// per group, n_genes rows) of names, scores, logfoldchanges (float32), pvals and
/// pvals_adj (float64).
static UnsNode rank_genes_groups_uns(const AnalysisSnapshot& snapshot, const std::string& method) {
    UnsNode node;
    auto& params = node["params"];
    params["groupby"] = UnsNode::leaf(snapshot.markers_groupby);
    params["reference"] = UnsNode::leaf(std::string("rest"));
    params["method"] = UnsNode::leaf(method);
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

/// uns[...]['params'] of `step`: every setting the step depends on, by its schema name,
/// as the latest run set it (step switches left out).
static void write_step_params(UnsNode& params, PipelineStep step, const PipelineSettings& settings) {
    for (const auto& spec : pipeline_settings_schema()) {
        if (spec.step_switch || std::find(spec.steps.begin(), spec.steps.end(), step) == spec.steps.end()) continue;
        params[spec.name] = std::visit([](const auto& value) { return UnsNode::leaf(value); }, spec.get(settings));
    }
}

Dataset export_dataset(const Engine::State& state, const LoadedData& data, const AnalysisSnapshot& snapshot) {
    const auto& cache = state.cache;
    const PipelineSettings settings = cache.settings.value_or(PipelineSettings{});
    Dataset out;
    out.path = data.meta.path;
    out.format = DatasetFormat::H5ad;
    out.shape = MatrixShape{static_cast<std::int64_t>(snapshot.cells.size()), data.meta.shape.num_genes};
    out.obs = *snapshot.obs;
    out.var = *snapshot.var;
    for (const auto& [key, matrix] : snapshot.obsm) out.obsm[key] = *matrix;
    out.uns = data.meta.uns;
    for (const auto& [key, colors] : snapshot.colors) out.uns[key + "_colors"] = UnsNode::leaf(colors);
    if (const PcaResult* pca = cache.pca.current()) {
        // varm['PCs']: genes x components, zero rows for genes outside the HVG block
        // (scanpy's use_highly_variable layout).
        const auto& hvg_genes = cache.hvg.current()->hvg_genes;
        const auto& loadings = pca->loadings;
        DenseMatrix<float> full(data.meta.shape.num_genes, loadings.cols(), 0.0f);
        for (std::size_t column = 0; column < hvg_genes.size(); ++column)
            for (std::int64_t component = 0; component < loadings.cols(); ++component)
                full(hvg_genes[column], component) = loadings(static_cast<std::int64_t>(column), component);
        out.varm["PCs"] = std::move(full);
        write_step_params(out.uns["recipe"]["params"], PipelineStep::Preprocess, settings);
        write_step_params(out.uns["hvg"]["params"], PipelineStep::Hvg, settings);
        auto& node = out.uns["pca"];
        node["variance"] = UnsNode::leaf(pca->variance);
        node["variance_ratio"] = UnsNode::leaf(pca->variance_ratio);
        write_step_params(node["params"], PipelineStep::Pca, settings);
    }
    if (const NeighborsResult* graph = cache.neighbors.current()) {
        out.obsp["distances"] = to_square(graph->distances);
        out.obsp["connectivities"] = to_square(graph->connectivities);
        auto& neighbors = out.uns["neighbors"];
        neighbors["connectivities_key"] = UnsNode::leaf(std::string("connectivities"));
        neighbors["distances_key"] = UnsNode::leaf(std::string("distances"));
        auto& params = neighbors["params"];
        write_step_params(params, PipelineStep::Neighbors, settings);
        // k as used (smaller than asked on tiny data sets, as scanpy).
        params["n_neighbors"] = UnsNode::leaf(static_cast<std::int64_t>(graph->knn.graph.num_neighbors));
        params["method"] = UnsNode::leaf(std::string("umap"));
        params["metric"] = UnsNode::leaf(std::string("euclidean"));
        // The search's measured recall beside params (an approximate search measured on
        // recall_queries random cells; 1 and 0 cells for the exact search).
        if (std::isfinite(graph->knn.recall)) {
            neighbors["recall"] = UnsNode::leaf(graph->knn.recall);
            neighbors["recall_queries"] = UnsNode::leaf(static_cast<std::int64_t>(graph->knn.recall_queries));
        }
    }
    if (cache.umap.current()) {
        // scanpy's uns['umap']['params'] (a, b), plus the settings and the SGD that ran.
        auto& params = out.uns["umap"]["params"];
        write_step_params(params, PipelineStep::Umap, settings);
        params["a"] = UnsNode::leaf(cache.umap.result()->curve.a);
        params["b"] = UnsNode::leaf(cache.umap.result()->curve.b);
        params["deterministic"] = UnsNode::leaf(cache.umap.options()->parallelism == UmapParallelism::Deterministic);
    }
    if (const LeidenResult* clusters = cache.leiden.current()) {
        // scanpy's uns['leiden']['params'], plus the modularity of the labels.
        auto& leiden = out.uns["leiden"];
        auto& params = leiden["params"];
        write_step_params(params, PipelineStep::Leiden, settings);
        params["n_iterations"] = UnsNode::leaf(static_cast<std::int64_t>(cache.leiden.options()->num_iterations));
        leiden["modularity"] = UnsNode::leaf(clusters->modularity);
    }
    if (cache.markers.current() && !snapshot.markers.empty()) {
        out.uns["rank_genes_groups"] = rank_genes_groups_uns(snapshot, std::get<std::string>(find_setting("markers")->get(settings)));
        write_step_params(out.uns["rank_genes_groups"]["params"], PipelineStep::Markers, settings);
    }
    return out;
}

}  // namespace fathom::detail
