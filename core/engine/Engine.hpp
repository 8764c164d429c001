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
#include <string>
#include <utility>
#include <vector>

#include "core/data/Dataset.hpp"
#include "core/data/Table.hpp"
#include "core/engine/Job.hpp"
#include "core/engine/Pending.hpp"
#include "core/engine/PipelineSettings.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

struct CsvExportOptions;  // core/engine/csv_export.hpp

/// Where the shards live and how many. Parsed from "cpu", "cpu:N" or "cuda:0,1,..."
/// (CUDA devices fall back to CPU shards, with a message, when no device is usable).
struct EngineConfig {
    std::string devices = "cpu:1";
    /// Largest raw matrix (CSR bytes: 8 per row + 8 per non-zero) loaded into memory;
    /// a larger one is streamed from its file in row blocks (out-of-core: Zheng17 only,
    /// no gene queries). 0 = half of the physical memory; -1 = always stream.
    std::int64_t memory_budget_bytes = 0;
    /// Called on the engine thread as each step of a job begins (after it is named),
    /// with that job's context: for logging and for tests that cancel at a given step.
    std::function<void(const std::string& step, JobContext& ctx)> step_observer;
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
    bool integer_counts = false;
    std::int64_t memory_bytes = 0;  ///< CSR shards in memory
    std::vector<ColumnSummary> obs_columns;
    std::vector<ColumnSummary> var_columns;
    std::vector<std::string> obsm_keys;
    std::vector<std::string> devices;  ///< one name per shard, e.g. "cpu:0"
    bool streamed = false;             ///< the matrix is streamed from the file (out-of-core)
};

/// Marker genes of one group (rank_genes_groups), best first.
struct MarkerGroup {
    std::string group;
    std::vector<std::string> genes;
    std::vector<double> scores, logfoldchanges, pvals, pvals_adj, pct_group, pct_rest;
};

/// Immutable state of the analysis after the last finished job.
struct AnalysisSnapshot {
    std::uint64_t version = 0;                       ///< increases with every change
    std::shared_ptr<const DatasetSummary> dataset;   ///< null before open()
    std::shared_ptr<const Table> obs;                ///< barcodes + QC, clusters, user annotations
    /// Row of the opened matrix behind every obs row (cells removed by filters are
    /// absent); empty before open().
    std::vector<std::int64_t> cells;
    std::shared_ptr<const Table> var;                ///< gene names + HVG flags, means
    std::map<std::string, std::shared_ptr<const DenseMatrix<float>>> obsm;  ///< X_pca, X_umap, ...
    std::map<std::string, std::vector<std::string>> colors;  ///< "<key>" -> "#rrggbb" per category
    std::vector<MarkerGroup> markers;                ///< empty until markers ran
    std::string markers_groupby;                     ///< obs column the markers compare
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
    Counts,    ///< as stored in X
    LogNorm,   ///< ln(1 + x * 10,000 / cell total)
};

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
    /// Matching cells per category of obs['leiden'] (category order) when the snapshot
    /// has Leiden clusters; empty otherwise.
    std::vector<std::pair<std::string, std::int64_t>> by_cluster;
};

/// The engine. Not copyable; destroying it cancels running jobs and joins its threads.
class Engine {
public:
    explicit Engine(EngineConfig config = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Opens a dataset (any readable format) and loads its rows as shards on the
    /// configured devices. Replaces any previous dataset and analysis.
    JobHandle open(std::string path);
    /// Runs the pipeline with these settings; steps whose settings and inputs did not
    /// change since the last run are reused (changing HVG settings recomputes HVG and
    /// everything after it, nothing before).
    JobHandle run(PipelineSettings settings);
    /// Values of one gene (by var name or gene id) for every cell, from the shards.
    Pending<GeneValues> gene_values(std::string gene, ValueLayer layer = ValueLayer::LogNorm);
    /// Evaluates a marker-gene filter such as "CD3E > 1 and not MS4A1 > 0" (grammar in
    /// core/algo/gene_filter.hpp) on the raw shards, reading only the genes it names.
    /// A syntax error or an unknown gene fails the job (FailureKind::Option) with a
    /// message that points at the mistake. Runs on the query queue (EngineFilters.cpp).
    Pending<CellMask> evaluate_filter(std::string expression, ValueLayer layer = ValueLayer::LogNorm);
    /// Mean LogNorm value of a gene set for every cell (genes by var name or gene id;
    /// genes not in the dataset are ignored, as scanpy's score_genes does, and named in
    /// GeneValues::gene; none found fails the job). gene_index is -1.
    Pending<GeneValues> gene_set_score(std::vector<std::string> genes);
    /// Writes the current analysis as h5ad (obs, var, obsm, uns; X optional) atomically.
    JobHandle export_h5ad(std::string path, bool include_matrix);
    /// Writes Loupe-style CSVs of the current analysis into `folder` (export_csv() in
    /// core/engine/csv_export.hpp, which defines the options) on the compute queue.
    JobHandle export_csv(std::string folder, const CsvExportOptions& options);

    /// The latest finished state (never null; empty before open()).
    std::shared_ptr<const AnalysisSnapshot> snapshot() const;
    /// The latest embedding frame published by a running (or finished) UMAP; null if none.
    std::shared_ptr<const EmbeddingFrame> embedding_frame() const;

    struct State;  ///< implementation detail (engine/Engine.cpp)

private:
    std::shared_ptr<State> m_state;
};

}  // namespace fathom
