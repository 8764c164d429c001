#pragma once
/// The engine facade used by the GUI and the CLI: open a dataset, run the pipeline,
/// query genes and filters, export. Everything runs on engine threads and returns a
/// handle at once; results are immutable snapshots (shared_ptr<const T>).
///
/// Two queues: "compute" (open, pipeline, export) and "query" (gene values, filters),
/// so colouring by a gene stays fast while a long pipeline job runs. Queries read the
/// loaded raw shards, which never change after open().
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/data/Dataset.hpp"
#include "core/data/Table.hpp"
#include "core/engine/matrix_content.hpp"
#include "core/engine/Job.hpp"
#include "core/engine/Pending.hpp"
#include "core/engine/PipelineSettings.hpp"
#include "core/types/Comm.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

class DeviceProvider;
struct CsvExportOptions;  // core/engine/csv_export.hpp

/// Which matrix of a file Engine::open reads: the fields of io::ReadOptions that users
/// choose (fathom-cli's --matrix / --layer, --genome, --feature-types,
/// --keep-duplicate-names), with the same defaults but for the var names.
struct DatasetReadOptions {
    std::string matrix = "X";                      ///< h5ad: "X", "raw" or "layers/<name>"
    std::string genome;                            ///< 10x: genome; empty = the only one (v2) / every one (v3)
    std::string feature_type = "Gene Expression";  ///< 10x: feature type kept; empty keeps every feature
    /// Repeated var names made unique as anndata's var_names_make_unique (and scanpy's
    /// read_10x_mtx) do: `LTB`, `LTB-1`; the gene ids stay in var['gene_ids'] where the
    /// file has them. false keeps the names as stored.
    bool make_var_names_unique = true;
    friend bool operator==(const DatasetReadOptions&, const DatasetReadOptions&) = default;
};

/// Where the shards live and how many. Parsed from "cpu", "cpu:N" or "cuda:0,1,..."
/// (CUDA devices fall back to CPU shards, with a message, when no device is usable).
struct EngineConfig {
    std::string devices = "cpu:1";
    /// Makes shards on CUDA devices (gpu::make_device_provider(); the applications set
    /// it). Null, or no usable device: "cuda..." runs on CPU shards and
    /// DatasetSummary::device_note says why.
    std::shared_ptr<DeviceProvider> device_provider;
    /// Largest raw matrix (CSR bytes: 8 per row + 8 per non-zero) loaded into memory;
    /// a larger one is streamed from its file in row blocks (out-of-core: Zheng17 only;
    /// filters and gene values, not gene-set scores). 0 = half of the physical memory;
    /// -1 = always stream.
    std::int64_t memory_budget_bytes = 0;
    /// Out-of-core: gene queries (filters, gene values) read the named genes' columns from
    /// the file in blocks of about this many non-zeros (>= 1; 12 bytes each in memory),
    /// then keep the columns in the query cache.
    std::int64_t stream_block_nnz = std::int64_t{1} << 25;
    /// Out-of-core: keep the rows packed by the first pass (when they fit the budget) for
    /// as long as the dataset is open, for the export of X and gene queries; false drops
    /// them once the pipeline's second pass has read them (fathom-cli run --no-matrix), so
    /// that the later steps' memory does not add to them. Either way the same bits.
    bool keep_packed_rows = true;
    /// How open() reads the file (and how the engine reads it again: streamed queries,
    /// export). The out-of-core pipeline reads it with the defaults only, so run() on a
    /// streamed dataset fails (FailureKind::Option) when these are not the defaults.
    DatasetReadOptions read;
    /// Called on the engine thread as each step of a job begins (after it is named),
    /// with that job's context: for logging and for tests that cancel at a given step.
    std::function<void(const std::string& step, JobContext& ctx)> step_observer;
    /// The ranks of a run over several processes (fathom-cli under mpirun / srun); null
    /// or one rank = this process holds every shard. With several ranks each holds its
    /// own run of the global shards (`devices` per rank) and reads only those rows;
    /// every job is collective (every rank submits the same jobs in the same order) and
    /// results are bit-identical to one process with the same total number of shards.
    std::shared_ptr<Comm> comm;
};

/// One obs/var column as the UI lists it.
struct ColumnSummary {
    std::string name;
    std::string type;               ///< "int", "float", "bool", "string", "categorical"
    std::int64_t num_categories = 0;///< categorical only
};

/// What the dataset panel shows.
struct DatasetSummary {
    std::string path;
    std::string format;             ///< format_name()
    MatrixShape shape;
    std::int64_t nnz = 0;
    bool integer_counts = false;    ///< X holds raw counts (non-negative integers)
    /// What X holds and how that was decided (raw counts, log-normalised, scaled, ...).
    MatrixContentReport content;
    std::string matrix_name;        ///< the matrix analysed: "X", "raw/X", "layers/<name>", "/matrix", ...
    /// What opening the file chose that the user did not ask for (e.g. "X is absent
    /// (anndata X = None): analysing raw/X"); empty when nothing.
    std::string open_note;
    /// Repeated var names renamed at open (DatasetReadOptions::make_var_names_unique).
    std::int64_t num_var_names_made_unique = 0;
    /// The h5ad also holds raw/X (with its own raw/var genes) for the same cells, as
    /// anndata's `.raw`: what Scanpy's plots and rank_genes_groups read with use_raw.
    bool has_raw = false;
    std::int64_t raw_num_genes = 0; ///< genes of raw/X (0 without one)
    std::int64_t memory_bytes = 0;  ///< CSR shards in memory
    std::vector<ColumnSummary> obs_columns;
    std::vector<ColumnSummary> var_columns;
    std::vector<std::string> obsm_keys;
    std::vector<std::string> devices;  ///< one name per shard of this process, e.g. "cpu:0"
    /// Rows [begin, end) of the cells this process's shards hold (all of them unless a
    /// rank of a run over several) and the bytes of their CSR arrays in memory.
    std::int64_t local_rows_begin = 0;
    std::int64_t local_rows_end = 0;
    std::int64_t local_matrix_bytes = 0;
    bool streamed = false;             ///< the matrix is streamed from the file (out-of-core)
    /// Where this process's rows of the matrix are held, as the memory budget decided:
    /// "memory" (CSR shards, local_matrix_bytes), "packed" (out-of-core: read once from
    /// the file, then held packed in memory, packed_bytes) or "file" (out-of-core: read
    /// from the file at every pass).
    std::string matrix_storage;
    /// Bytes of the packed rows: held ("packed"), or reached when they passed the budget
    /// ("file"; 0 when the budget says always stream).
    std::int64_t packed_bytes = 0;
    std::int64_t memory_budget_bytes = 0;  ///< the budget decided with (bytes; -1: always stream)
    /// Why the requested devices were not used (CPU fallback: no CUDA build, no usable
    /// device, GPU out of memory); empty when the shards are where --devices asked.
    std::string device_note;
};

/// Marker genes of one group (rank_genes_groups), best first.
struct MarkerGroup {
    std::string group;
    std::vector<std::string> genes;
    std::vector<double> scores, logfoldchanges, pvals, pvals_adj, pct_group, pct_rest;
};

/// QC metrics of every cell of the opened matrix (scanpy's calculate_qc_metrics on the
/// raw counts, computed at open), in the matrix's row order, before any cell filter.
struct CellQcMetrics {
    std::vector<double> total_counts;
    std::vector<std::int64_t> n_genes_by_counts;
    std::vector<double> pct_counts_mt;   ///< NaN for a cell without counts
};

/// The Leiden run behind obs['leiden'].
struct LeidenSummary {
    std::string flavor;       ///< the settings' flavor that ran ("leidenalg", "igraph", "parallel")
    double modularity = 0.0;  ///< modularity (with the resolution) of the labels on the kNN graph
    int num_clusters = 0;
    int passes = 0;           ///< optimiser passes run
    double seconds = 0.0;     ///< Leiden's own wall time
    bool beside_umap = false; ///< ran on its own thread beside UMAP (Pipeline.cpp)
};

/// The kNN search behind the neighbours graph: the method that ran and its recall
/// (KnnResult::recall: 1 for the exact search; NaN when approximate and not measured).
struct KnnSummary {
    std::string method;      ///< knn_method_name of the method used ("exact", "ivf", ...)
    double recall = 1.0;     ///< mean fraction of the true k - 1 neighbours found
    int recall_queries = 0;  ///< random cells the recall was measured on (0 for exact)
};

/// Immutable state of the analysis after the last finished job.
struct AnalysisSnapshot {
    std::uint64_t version = 0;                       ///< increases with every change
    std::shared_ptr<const DatasetSummary> dataset;   ///< null before open()
    std::shared_ptr<const Table> obs;                ///< barcodes + QC, clusters, user annotations
    /// Every opened cell's QC metrics (the QC view, the QC cell filters); null when X does
    /// not hold raw counts (the metrics would mean nothing) or is streamed.
    std::shared_ptr<const CellQcMetrics> qc;
    /// Row of the opened matrix behind every obs row (cells removed by filters are
    /// absent); empty before open().
    std::vector<std::int64_t> cells;
    std::shared_ptr<const Table> var;                ///< gene names + HVG flags, means
    std::map<std::string, std::shared_ptr<const DenseMatrix<float>>> obsm;  ///< X_pca, X_umap, ...
    std::map<std::string, std::vector<std::string>> colors;  ///< "<key>" -> "#rrggbb" per category
    std::vector<MarkerGroup> markers;                ///< empty until markers ran
    std::string markers_groupby;                     ///< obs column the markers compare
    std::vector<std::string> user_annotations;       ///< obs columns made by set_obs_annotation, by name
    std::optional<LeidenSummary> leiden;             ///< set when the snapshot holds Leiden clusters
    /// What the latest pipeline run found questionable but ran anyway, in the user's
    /// words (e.g. recipe none on raw counts); empty when nothing.
    std::vector<std::string> warnings;
    /// The latest pipeline run's kNN search; null when its graph is absent.
    std::shared_ptr<const KnnSummary> knn;
};

/// An intermediate or final embedding published while UMAP runs.
struct EmbeddingFrame {
    std::uint64_t sequence = 0;     ///< increases with every published frame
    int epoch = 0;
    int total_epochs = 0;
    bool final = false;
    DenseMatrix<float> coordinates; ///< cells x 2 (or 3)
};

/// Which values of a gene.
enum class ValueLayer {
    Counts,    ///< X as stored (raw counts, or whatever an analysed file holds: scaled, log...)
    LogNorm,   ///< ln(1 + x * 10,000 / cell total): meaningful when X holds raw counts
    Raw,       ///< raw/X as stored (h5ad `.raw`; genes named by raw/var), as Scanpy's use_raw
};

/// "X", "log-normalised counts", "raw/X": the layer's name as colour bars and menus show it.
const char* value_layer_label(ValueLayer layer) noexcept;
/// "counts", "lognorm", "raw": the layer's key in session files and on the command line.
const char* value_layer_key(ValueLayer layer) noexcept;
/// The layer named by value_layer_key(); false when `key` names none.
bool parse_value_layer(const std::string& key, ValueLayer& layer) noexcept;

/// The values a gene is shown in by default, as Scanpy's plots choose them: raw/X when
/// the file has one (use_raw), log-normalised counts when X holds counts, integer or not
/// (DatasetSummary::content), else X as stored (an analysed file's X: log-normalised or
/// scaled already, where ln(1 + x * 1e4 / total) would be meaningless).
ValueLayer default_value_layer(const DatasetSummary& dataset) noexcept;

/// One gene's value for every cell (cells in obs order).
struct GeneValues {
    std::string gene;
    std::int64_t gene_index = -1;
    ValueLayer layer = ValueLayer::LogNorm;
    std::vector<float> values;  ///< num_cells
    float min_value = 0.0f, max_value = 0.0f;
};

/// The cells where a marker-gene filter expression holds (cells in obs order).
struct CellMask {
    std::string expression;                 ///< the expression as given
    std::vector<std::uint8_t> mask;         ///< num_cells flags, 1 = the expression holds
    std::int64_t num_matching = 0;          ///< cells with mask 1
    /// Matching cells per category (category order) of the obs column named by
    /// `group_by`, else of obs['leiden'] when the snapshot has Leiden clusters; empty otherwise.
    std::vector<std::pair<std::string, std::int64_t>> by_cluster;
    /// The obs column behind by_cluster ("" when none).
    std::string group_by;
};

/// A categorical obs column made by the user: a selection saved as a column, or a
/// column with renamed or merged categories (EngineSelection.cpp). The engine keeps it
/// per raw cell, so it stays in obs across pipeline runs; cells it was not given are
/// missing (code -1). It replaces any obs column of the same name (a re-run of Leiden
/// drops a user version of 'leiden'), and the h5ad export writes it as a categorical
/// with uns['<name>_colors'].
struct ObsAnnotation {
    std::string name;                     ///< obs column name, non-empty
    std::vector<std::string> categories;  ///< distinct, non-empty names
    std::vector<std::int32_t> codes;      ///< one per entry of `cells`: index into categories, or -1
    std::vector<std::string> colors;      ///< "#rrggbb" per category; empty = scanpy's default palette
    /// Raw row (AnalysisSnapshot::cells) of every code: the cells of the snapshot the codes
    /// were made on. Empty = the current snapshot's cells (then codes has one per obs row).
    std::vector<std::int64_t> cells;
};

/// Options of Engine::mask_markers.
struct MaskMarkersOptions {
    MarkerMethod method = MarkerMethod::TTest;  ///< the test (as PipelineSettings::markers)
    int num_genes = 100;            ///< top genes kept; 0 = every tested gene
};

/// The values Engine::mask_markers and Engine::obs_markers test, over every gene, as
/// Scanpy's rank_genes_groups reads them: raw/X when the file has one (use_raw), X's
/// counts log-normalised when X holds raw counts, else X as stored (an analysed file's
/// X, log-normalised already).
ValueLayer markers_layer(const DatasetSummary& dataset) noexcept;

/// Marker genes of a group of cells (a selection, a filter's cells) against the rest or
/// against a reference group: rank_genes_groups over every gene of markers_layer(), from
/// the file's data (no pipeline run needed). pct_group / pct_rest are fractions in [0, 1].
struct MaskMarkers {
    MarkerGroup markers;                  ///< group "selection", best first
    std::string reference;                ///< "rest" or "reference"
    MarkerMethod method = MarkerMethod::TTest;  ///< the test that ran
    ValueLayer layer = ValueLayer::LogNorm;     ///< the values tested (markers_layer)
    std::int64_t num_group_cells = 0;
    std::int64_t num_reference_cells = 0;
};

/// Marker genes of every category of an obs column against the rest (scanpy's
/// rank_genes_groups(groupby=column, reference='rest')) over every gene of markers_layer().
struct ObsMarkers {
    std::string groupby;                  ///< the obs column
    std::vector<MarkerGroup> groups;      ///< one per tested category, category order, best genes first
    /// Categories left out because they have fewer than 2 cells (scanpy refuses them).
    std::vector<std::string> skipped;
    MarkerMethod method = MarkerMethod::TTest;
    ValueLayer layer = ValueLayer::LogNorm;
};

/// The engine. Not copyable; destroying it cancels running jobs and joins its threads.
class Engine {
public:
    explicit Engine(EngineConfig config = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Opens a dataset (any readable format, read as EngineConfig::read says) and loads
    /// its rows as shards on the configured devices, or streams it when it is larger than
    /// the memory budget. Replaces any previous dataset and analysis.
    JobHandle open(std::string path);
    /// Runs the pipeline with these settings; steps whose settings and inputs did not
    /// change since the last run are reused (changing HVG settings recomputes HVG and
    /// everything after it, nothing before).
    JobHandle run(PipelineSettings settings);
    /// Values of one gene (by var name or gene id, GeneLookup) for every cell, from the
    /// shards (a streamed dataset: from the file, once; then from the query cache). An
    /// unknown or ambiguous gene fails the job (FailureKind::Option) naming it.
    Pending<GeneValues> gene_values(std::string gene, ValueLayer layer = ValueLayer::LogNorm);
    /// Evaluates a marker-gene filter such as "CD3E > 1 and not MS4A1 > 0" (grammar in
    /// core/algo/gene_filter.hpp) on the raw shards, reading only the genes it names (a
    /// streamed dataset: read from the file in blocks, EngineConfig::stream_block_nnz).
    /// A syntax error or an unknown or ambiguous gene fails the job
    /// (FailureKind::Option) with a message that points at the mistake ("filter: unknown
    /// gene 'CD3F' at column 1 ..."). Runs on the query queue (EngineFilters.cpp).
    /// The genes' columns are cached per layer after the first read, so changing only the
    /// thresholds re-evaluates from memory. `group_by`: a categorical (or bool) obs
    /// column for CellMask::by_cluster ("" or not found: leiden).
    Pending<CellMask> evaluate_filter(std::string expression, ValueLayer layer = ValueLayer::LogNorm,
                                      std::string group_by = {});
    /// Mean value of a gene set in `layer` for every cell (genes by var name or gene id,
    /// by raw/var for ValueLayer::Raw; genes not in the dataset are ignored, as scanpy's
    /// score_genes does, and named in GeneValues::gene; none found fails the job, and so
    /// does a gene that names several (GeneLookup: a duplicated var name)).
    /// gene_index is -1. `subtract_control`:
    /// scanpy's tl.score_genes instead (the set's mean minus a control set's mean), on
    /// LogNorm only (another layer fails the job naming it). LogNorm needs the matrix in
    /// memory (not streamed); the mean of X as stored or raw/X reads the set's columns as
    /// gene_values does.
    Pending<GeneValues> gene_set_score(std::vector<std::string> genes, bool subtract_control = false,
                                       ValueLayer layer = ValueLayer::LogNorm);
    /// Writes the current analysis as h5ad (obs, var, obsm, uns; X optional) atomically.
    JobHandle export_h5ad(std::string path, bool include_matrix);
    /// Writes Loupe-style CSVs of the current analysis into `folder` (export_csv() in
    /// core/engine/csv_export.hpp, which defines the options) on the compute queue.
    JobHandle export_csv(std::string folder, const CsvExportOptions& options);

    // ---- selections and user annotations (EngineSelection.cpp) ------------------------
    /// Adds or replaces a user annotation column (see ObsAnnotation) and publishes a new
    /// snapshot (version bumped) with it in obs and its colours. Runs on the query queue;
    /// a bad annotation fails the job (FailureKind::Option) naming the column.
    JobHandle set_obs_annotation(ObsAnnotation annotation);
    /// Removes a user annotation column (the file's column of that name, if any, shows again).
    JobHandle remove_obs_annotation(std::string name);
    /// Marker genes of the cells with group[cell] = 1 (cells in obs order) against the
    /// cells with reference[cell] = 1, or against every other cell when `reference` is
    /// empty, over every gene of markers_layer() (no pipeline run needed). Each side needs
    /// at least 2 cells and the two must not overlap. Needs the matrix in memory (not
    /// streamed). Runs on the compute queue, on the shards.
    Pending<MaskMarkers> mask_markers(std::vector<std::uint8_t> group, std::vector<std::uint8_t> reference = {},
                                      MaskMarkersOptions options = {});
    /// Marker genes of every category of the categorical (or bool) obs column `column`
    /// against the rest, as mask_markers computes them. An unknown column, or fewer than 2
    /// categories with 2 cells or more, fails the job (FailureKind::Option) naming it.
    Pending<ObsMarkers> obs_markers(std::string column, MaskMarkersOptions options = {});
    /// Writes the barcodes (obs names) of the cells with mask[cell] = 1, one per line,
    /// atomically (temporary file, then rename).
    JobHandle export_barcodes(std::string path, std::vector<std::uint8_t> mask);
    /// Writes a marker table as CSV (gene,score,logfc,pval,pval_adj,pct_in,pct_out; numbers
    /// in their shortest exact form), atomically.
    JobHandle export_markers_csv(std::string path, MarkerGroup markers);

    /// The latest finished state (never null; empty before open()).
    std::shared_ptr<const AnalysisSnapshot> snapshot() const;
    /// The latest embedding frame published by a running (or finished) UMAP; null if none.
    std::shared_ptr<const EmbeddingFrame> embedding_frame() const;

    struct State;  ///< implementation detail (engine/Engine.cpp)

private:
    std::shared_ptr<State> m_state;
};

}  // namespace fathom
