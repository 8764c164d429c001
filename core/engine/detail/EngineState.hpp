#pragma once
/// Engine internals shared by Engine.cpp (facade, open, queries, export) and
/// Pipeline.cpp (the staged analysis). Not part of the public API.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/algo/filter.hpp"
#include "core/algo/hvg.hpp"
#include "core/algo/leiden.hpp"
#include "core/algo/neighbors.hpp"
#include "core/algo/normalize.hpp"
#include "core/algo/pca.hpp"
#include "core/algo/qc.hpp"
#include "core/algo/recipes.hpp"
#include "core/algo/scale.hpp"
#include "core/algo/umap.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/data/Dataset.hpp"
#include "core/engine/matrix_content.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/JobQueue.hpp"
#include "core/engine/detail/GeneColumnCache.hpp"
#include "core/engine/detail/StepState.hpp"
#include "core/engine/detail/Streaming.hpp"

namespace fathom::detail {

/// The values marker genes are tested on, every gene of every raw row, as Scanpy's
/// rank_genes_groups reads them (markers_layer): raw/X as stored (use_raw), X's counts
/// log-normalised (normalize_total to 1e4, log1p), or an analysed file's X as stored.
struct MarkerValues {
    ShardSet values;                     ///< raw rows x genes
    std::vector<std::string> gene_names; ///< one per column
    ValueLayer layer = ValueLayer::LogNorm;
};

/// A dataset as opened: host metadata plus the raw shards, which never change after
/// loading (the pipeline works on copies). Queries lock `raw_mutex` (one call at a
/// time per backend).
struct LoadedData {
    Dataset meta;
    DeviceSpec devices;
    ShardSet raw;
    std::string device_note;          ///< DatasetSummary::device_note
    mutable std::mutex raw_mutex;
    /// The QC step (calculate_qc_metrics on the raw counts; streamed: from the first
    /// pass), run once at open: the dataset's first step, read by preprocessing.
    StepState<QcOptions, QcResult> qc_step;
    const QcResult& qc() const { return *qc_step.result(); }
    bool integer_counts = false;
    /// How the file was opened (EngineConfig::read, but raw/X where X is absent); every
    /// later read of the file (export, streamed queries) uses these.
    DatasetReadOptions read;
    std::string open_note;  ///< DatasetSummary::open_note
    /// What X holds (matrix_content.hpp), from the first cells' values and integer_counts.
    MatrixContentReport content;
    /// Out-of-core: `raw` is empty and the matrix is streamed from meta.path; the first
    /// pass's statistics are kept here.
    bool streamed = false;
    StreamedStats streamed_stats;
    std::vector<std::int64_t> row_offsets;  ///< global, for planning shards of the HVG block
    ShardLayout stream_layout;             ///< out-of-core: the shards, this process's run of them
    /// Out-of-core: this process's rows, packed in memory by the first pass when they fit
    /// the memory budget, so that the later passes (the HVG block, export, gene queries)
    /// decode them instead of reading the file again; null when they did not fit or the
    /// budget is "always stream" (< 0).
    /// Read through matrix_rows() (under packed_mutex); dropped after the second pass when
    /// EngineConfig::keep_packed_rows is off.
    mutable std::shared_ptr<const PackedMatrix> packed;
    mutable std::mutex packed_mutex;
    bool packed_at_open = false;           ///< the first pass kept the packed rows
    std::int64_t packed_bytes = 0;         ///< StreamedStats::packed_bytes of the first pass
    std::int64_t memory_budget = 0;        ///< the budget open() decided with (bytes; < 0: always stream)
    /// Gene columns read by queries (filters, gene values), per gene and layer.
    mutable GeneColumnCache gene_columns;
    /// The h5ad's raw/X (anndata `.raw`) when X was opened and the file has one for the
    /// same cells: its genes and row offsets. Queries of ValueLayer::Raw stream its
    /// columns from the file (stream_gene_columns), then keep them in `gene_columns`.
    struct RawMatrix {
        Table var;                            ///< raw/var: the genes of raw/X
        std::vector<std::int64_t> row_offsets;///< num_cells + 1
    };
    std::optional<RawMatrix> raw_matrix;
    /// AnalysisSnapshot::qc: the QC metrics of every cell when X holds raw counts in memory.
    std::shared_ptr<const CellQcMetrics> qc_metrics;
    /// Made by the first markers request (compute queue), then kept.
    mutable std::mutex marker_mutex;
    mutable std::shared_ptr<const MarkerValues> marker_values;
};

/// Rows of the opened matrix as `data.read` opens them: the packed rows when held,
/// else the file opened again (read_annotations off).
std::unique_ptr<io::RowSource> matrix_rows(const LoadedData& data);

/// Options of the preprocessing step (cell pre-filter + the recipe up to gene selection).
struct PreprocessOptions {
    Recipe recipe = Recipe::Zheng17;
    double min_counts_per_cell = 0.0;
    /// The other QC cell filters (PipelineSettings; cells_passing_qc on the QC metrics).
    double max_counts_per_cell = 0.0;
    std::int64_t min_genes_per_cell = 0;
    std::int64_t max_genes_per_cell = 0;
    double max_pct_counts_mt = 100.0;
    /// scanpy held X as integers (Zheng17Options::integer_dtype), from the dataset.
    bool integer_dtype = false;
    /// Every stored value of X is an integer (LoadedData::integer_counts): the fused
    /// Zheng17 path may take normalize_total's totals from the QC.
    bool integer_counts = true;
    friend bool operator==(const PreprocessOptions&, const PreprocessOptions&) = default;
};

/// Output of the preprocessing step.
struct PreprocessResult {
    std::optional<ShardSet> normalized;          ///< filtered + normalised (non-log) matrix
    /// zheng17 in memory without a cell pre-filter: no normalised copy; the HVG statistics
    /// and factors to copy the HVG block from the raw shards.
    std::optional<Zheng17Moments> zheng17;
    std::vector<std::int64_t> kept_cells;        ///< raw cell index of every row of `normalized`
    std::vector<std::int64_t> kept_genes;        ///< raw gene index of every column of `normalized`
    std::vector<double> n_counts_all;            ///< per kept cell: totals before normalising (zheng17)
    std::vector<double> streamed_means;          ///< out-of-core: normalised mean per kept gene
    double streamed_target = 0.0;                ///< out-of-core: normalize_total's target
    std::vector<double> streamed_variances;      ///< out-of-core: normalised variance (ddof=1) per kept gene
};

/// Options of the gene selection: the recipe's HvgOptions with n_top_genes (unset = every gene).
struct HvgStepOptions {
    std::optional<HvgOptions> hvg;
    friend bool operator==(const HvgStepOptions&, const HvgStepOptions&) = default;
};

struct HvgStepResult {
    HvgResult hvg;                                ///< on the columns of `normalized`
    std::vector<std::int64_t> hvg_genes;         ///< raw gene index of each HVG
};

/// Options of the scale step: what the recipe does to the selected genes.
struct ScaleStepOptions {
    Recipe recipe = Recipe::Zheng17;
    bool integer_dtype = false;
    friend bool operator==(const ScaleStepOptions&, const ScaleStepOptions&) = default;
};

/// The scaled HVG block (renormalised, log1p'd; scaling kept as mean/std).
struct ScaleStepResult {
    ShardSet hvg_block;
    std::vector<std::int64_t> block_cells;       ///< raw cell index of every row of hvg_block
    ScaleResult scaling;
};

/// The pipeline's steps, each with the Options it ran with, its inputs' versions and its
/// Result (StepState). Touched only on the compute thread.
struct StageCache {
    std::uint64_t clock = 0;  ///< versions handed out (StepState::update)
    /// The settings of the latest run (the uns params of an export).
    std::optional<PipelineSettings> settings;
    /// AnalysisSnapshot::warnings of the latest run.
    std::vector<std::string> warnings;
    StepState<PreprocessOptions, PreprocessResult> preprocess;
    StepState<HvgStepOptions, HvgStepResult> hvg;
    StepState<ScaleStepOptions, ScaleStepResult> scale;
    StepState<PcaOptions, PcaResult> pca;
    StepState<NeighborsOptions, NeighborsResult> neighbors;
    StepState<UmapOptions, UmapResult> umap;
    StepState<LeidenOptions, LeidenResult> leiden;
    StepState<RankGenesGroupsOptions, std::vector<MarkerGroup>> markers;
    /// Leiden's own wall seconds when it last ran, and whether it ran beside UMAP (then
    /// the pipeline's "leiden" step times only what it still needed after UMAP).
    double leiden_seconds = 0.0;
    bool leiden_beside_umap = false;

    /// Marks every step inactive (before a run, which re-activates those it reaches).
    void deactivate() {
        preprocess.deactivate();
        hvg.deactivate();
        scale.deactivate();
        pca.deactivate();
        neighbors.deactivate();
        umap.deactivate();
        leiden.deactivate();
        markers.deactivate();
    }
    void clear() { *this = StageCache{}; }
};

/// A user annotation as stored: one code per raw cell (-1 = not annotated).
struct UserAnnotation {
    std::vector<std::string> categories;
    std::vector<std::int32_t> raw_codes;   ///< num raw cells
    std::vector<std::string> colors;       ///< one per category
};

/// `snapshot` with the user annotations put into obs (on top of `base_obs`, the obs
/// the engine built) and their colours into colors (EngineSelection.cpp).
void apply_annotations(AnalysisSnapshot& snapshot, const std::shared_ptr<const Table>& base_obs,
                       const std::map<std::string, std::vector<std::string>>& base_colors,
                       const std::map<std::string, UserAnnotation>& annotations);

}  // namespace fathom::detail

namespace fathom {

struct GroupMarkers;

struct Engine::State {
    EngineConfig config;
    mutable std::mutex mutex;                              ///< guards the three pointers below
    std::shared_ptr<const AnalysisSnapshot> snapshot = std::make_shared<AnalysisSnapshot>();
    std::shared_ptr<const EmbeddingFrame> frame;
    std::shared_ptr<const detail::LoadedData> data;        ///< replaced by open()
    std::uint64_t next_version = 1;
    std::uint64_t next_frame = 1;

    detail::StageCache cache;  ///< touched only on the compute thread

    /// User annotations by obs column (guarded by `mutex`), applied to every snapshot
    /// published; base_obs / base_colors are the last published snapshot's own obs and
    /// colours, before the annotations.
    std::map<std::string, detail::UserAnnotation> annotations;
    std::shared_ptr<const Table> base_obs;
    std::map<std::string, std::vector<std::string>> base_colors;

    void publish(std::shared_ptr<AnalysisSnapshot> next) {
        std::lock_guard lock(mutex);
        base_obs = next->obs;
        base_colors = next->colors;
        detail::apply_annotations(*next, base_obs, base_colors, annotations);
        next->version = next_version++;
        snapshot = std::move(next);
    }
    void publish_frame(int epoch, int total_epochs, bool final, const DenseMatrix<float>& coordinates) {
        auto next = std::make_shared<EmbeddingFrame>();
        next->epoch = epoch;
        next->total_epochs = total_epochs;
        next->final = final;
        next->coordinates = coordinates;
        std::lock_guard lock(mutex);
        next->sequence = next_frame++;
        frame = std::move(next);
    }
    /// Names a top-level step of the running job and tells config.step_observer.
    void begin_step(JobContext& ctx, const std::string& step) const {
        ctx.begin_step(step);
        if (config.step_observer) {
            config.step_observer(step, ctx);
            ctx.checkpoint();
        }
    }
    std::shared_ptr<const detail::LoadedData> loaded() const {
        std::lock_guard lock(mutex);
        return data;
    }

    // Queues last: destroyed first, so no job outlives the state it uses.
    JobQueue query;
    JobQueue compute;
};

namespace detail {
/// Runs the pipeline (Pipeline.cpp) on the compute thread.
void run_pipeline(Engine::State& state, const PipelineSettings& settings, JobContext& ctx);
/// Builds the snapshot of the current data + cache (Pipeline.cpp).
/// The obsm key of a pipeline result: scanpy's `key` ("X_pca", "X_umap"), or
/// "<key>_fathom" when the file brought its own `key` (which stays as the file had it).
std::string pipeline_obsm_key(const std::string& key, const Dataset& meta);

std::shared_ptr<AnalysisSnapshot> build_snapshot(const Engine::State& state, const LoadedData& data);
/// The h5ad content of a snapshot: obs, var, obsm, varm, obsp and uns as scanpy lays
/// them out (Pipeline.cpp).
Dataset export_dataset(const Engine::State& state, const LoadedData& data, const AnalysisSnapshot& snapshot);
/// One group of a rank_genes_groups result on the HVG block as the snapshot lists it
/// (gene names from var through `hvg_genes`) (Pipeline.cpp).
MarkerGroup marker_group(const GroupMarkers& group, const std::vector<std::string>& gene_names,
                         const std::vector<std::int64_t>& hvg_genes);
/// Sets min_value / max_value from values (left at 0 when there are none).
inline void set_value_range(GeneValues& result) {
    if (result.values.empty()) return;
    const auto [low, high] = std::minmax_element(result.values.begin(), result.values.end());
    result.min_value = *low;
    result.max_value = *high;
}
}  // namespace detail

}  // namespace fathom
