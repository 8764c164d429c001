#include "core/engine/Engine.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <atomic>
#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "core/algo/recipes.hpp"
#include "core/engine/settings_schema.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/ShardedCsrSource.hpp"
#include "core/io/h5ad_writer.hpp"
#include "core/io/synth.hpp"
#include "tests/engine/engine_jobs.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/thread_comm.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

/// A small synthetic raw-count dataset shared by the tests of this file.
io::SynthOptions dataset_options() {
    io::SynthOptions options;
    options.num_cells = 900;
    options.num_genes = 700;
    options.num_cell_types = 4;
    options.markers_per_type = 20;
    options.seed = 5;
    return options;
}

const std::string& dataset_path() {
    static const std::string path = [] {
        const auto folder = test::temp_dir("engine");
        const std::string file = (folder / "synthetic.h5ad").string();
        io::write_synthetic(file, dataset_options());
        return file;
    }();
    return path;
}

PipelineSettings small_settings() {
    PipelineSettings settings;
    settings.num_top_genes = 200;
    settings.pca.num_components = 20;
    settings.run_umap = false;
    settings.run_leiden = false;
    settings.run_markers = false;
    return settings;
}

using test::steps_of;

using test::finish;

TEST(Engine, OpenPublishesTheDatasetAndQc) {
    Engine engine;
    const auto status = finish(engine.open(dataset_path()));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
    const auto snapshot = engine.snapshot();
    ASSERT_TRUE(snapshot->dataset);
    EXPECT_EQ(snapshot->dataset->shape, (MatrixShape{900, 700}));
    EXPECT_TRUE(snapshot->dataset->integer_counts);
    EXPECT_EQ(snapshot->obs->num_rows(), 900);
    ASSERT_NE(snapshot->obs->find("total_counts"), nullptr);
    ASSERT_NE(snapshot->obs->find("pct_counts_mt"), nullptr);
    EXPECT_EQ(snapshot->cells.size(), 900u);
}

TEST(Engine, PipelineMatchesTheRecipeCalledDirectly) {
    Engine engine(EngineConfig{"cpu:2"});
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    const PipelineSettings settings = small_settings();
    const auto status = finish(engine.run(settings));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;

    // The same recipe through core/algo directly, on shards read the same way.
    io::OpenedDataset opened = io::open_dataset(dataset_path());
    ShardSet shards = ShardSet::make_cpu(io::load_shards(*opened.source, plan_row_ranges(opened.source->row_offsets(), 2)));
    Zheng17Options options;
    options.num_top_genes = settings.num_top_genes;
    options.pca = PcaOptions{};
    options.pca->num_components = settings.pca.num_components;
    JobContext ctx;
    const Zheng17Result direct = recipe_zheng17(shards, options, ctx);

    const auto snapshot = engine.snapshot();
    const auto& scores = *snapshot->obsm.at("X_pca");
    ASSERT_EQ(scores.rows(), direct.pca->scores.rows());
    ASSERT_EQ(scores.cols(), direct.pca->scores.cols());
    EXPECT_EQ(scores.values(), direct.pca->scores.values()) << "engine and recipe_zheng17 must be bit-identical";
    const auto& hvg = std::get<BoolColumn>(snapshot->var->find("highly_variable")->data).values;
    std::vector<std::int64_t> selected;
    for (std::size_t gene = 0; gene < hvg.size(); ++gene)
        if (hvg[gene]) selected.push_back(static_cast<std::int64_t>(gene));
    EXPECT_EQ(selected, direct.hvg_genes);
}

TEST(Engine, ChangedSettingsRecomputeOnlyTheStagesDownstream) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    PipelineSettings settings = small_settings();
    const auto first = finish(engine.run(settings));
    ASSERT_EQ(first.state, JobState::Succeeded) << first.message;
    EXPECT_EQ(steps_of(first), (std::vector<std::string>{"preprocess", "hvg", "scale", "pca", "neighbors"}));
    const auto version = engine.snapshot()->version;

    // Same settings: nothing to recompute.
    const auto again = finish(engine.run(settings));
    EXPECT_TRUE(steps_of(again).empty());
    EXPECT_GT(engine.snapshot()->version, version);

    // New HVG settings: HVG and everything after it, nothing before.
    settings.num_top_genes = 150;
    const auto hvg_changed = finish(engine.run(settings));
    EXPECT_EQ(steps_of(hvg_changed), (std::vector<std::string>{"hvg", "scale", "pca", "neighbors"}));
    const auto& hvg = std::get<BoolColumn>(engine.snapshot()->var->find("highly_variable")->data).values;
    EXPECT_EQ(std::count(hvg.begin(), hvg.end(), 1), 150);

    // New PCA settings: PCA onwards.
    settings.pca.num_components = 10;
    const auto pca_changed = finish(engine.run(settings));
    EXPECT_EQ(steps_of(pca_changed), (std::vector<std::string>{"pca", "neighbors"}));
    EXPECT_EQ(engine.snapshot()->obsm.at("X_pca")->cols(), 10);
}

TEST(Engine, ShardCountDoesNotChangeResultsBeyondRounding) {
    std::vector<std::vector<float>> results;
    for (const char* devices : {"cpu:1", "cpu:3", "cpu:7"}) {
        Engine engine(EngineConfig{devices});
        ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
        PipelineSettings settings = small_settings();
        settings.run_neighbors = false;
        ASSERT_EQ(finish(engine.run(settings)).state, JobState::Succeeded);
        EXPECT_EQ(engine.snapshot()->dataset->devices.size(), static_cast<std::size_t>(devices[4] - '0'));
        results.push_back(engine.snapshot()->obsm.at("X_pca")->values());
    }
    for (std::size_t run = 1; run < results.size(); ++run) {
        ASSERT_EQ(results[run].size(), results[0].size());
        double worst = 0.0;
        for (std::size_t index = 0; index < results[0].size(); ++index)
            worst = std::max(worst, std::abs(double(results[run][index]) - results[0][index]) /
                                        std::max(1e-3, std::abs(double(results[0][index]))));
        EXPECT_LT(worst, 1e-4) << "run " << run;
    }
}

class EngineCancel : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineCancel, CancelAtAStepEndsCancelledAndKeepsEarlierResults) {
    const std::string target = GetParam();
    EngineConfig config;
    config.step_observer = [target](const std::string& step, JobContext& ctx) {
        if (step == target) ctx.cancel();
    };
    Engine engine(config);
    const bool cancels_open = target == "read" || target == "qc";
    const auto opened = finish(engine.open(dataset_path()));
    if (cancels_open) {
        EXPECT_EQ(opened.state, JobState::Cancelled);
        EXPECT_FALSE(engine.snapshot()->dataset) << "a cancelled open publishes nothing";
        return;
    }
    ASSERT_EQ(opened.state, JobState::Succeeded);
    const auto before = engine.snapshot();
    if (target == "gene") {
        const auto pending = engine.gene_values("GENE00001");
        EXPECT_EQ(finish(pending.handle()).state, JobState::Cancelled);
        EXPECT_EQ(pending.value(), nullptr);
        return;
    }
    if (target == "export") {
        const auto folder = test::temp_dir("engine-cancel");
        const auto path = (folder / "out.h5ad").string();
        EXPECT_EQ(finish(engine.export_h5ad(path, true)).state, JobState::Cancelled);
        EXPECT_FALSE(std::filesystem::exists(path));
        return;
    }
    PipelineSettings settings = small_settings();
    if (target == "umap") {
        // Leiden runs beside UMAP: cancelling UMAP cancels and joins it too.
        settings.run_umap = true;
        settings.run_leiden = true;
    }
    if (target == "leiden" || target == "markers") {
        settings.run_leiden = true;
        settings.run_markers = true;
        settings.markers.method = MarkerMethod::TTest;
    }
    const auto status = finish(engine.run(settings));
    EXPECT_EQ(status.state, JobState::Cancelled);
    EXPECT_EQ(engine.snapshot(), before) << "earlier results stay published";
}

INSTANTIATE_TEST_SUITE_P(EverySteps, EngineCancel,
                         ::testing::Values("read", "qc", "preprocess", "hvg", "scale", "pca", "neighbors", "umap",
                                           "leiden", "markers", "gene", "export"));

TEST(Engine, LeidenBesideUmapGivesTheLabelsOfLeidenAlone) {
    // Both due on one rank: Leiden runs on its own thread beside UMAP, and its labels,
    // modularity and passes are those of Leiden run on its own (every flavor).
    for (const auto flavor : {LeidenImplementation::Leidenalg, LeidenImplementation::Parallel}) {
        PipelineSettings settings = small_settings();
        settings.run_leiden = true;
        settings.leiden.implementation = flavor;
        settings.umap.num_epochs = 50;
        Engine alone;
        ASSERT_EQ(finish(alone.open(dataset_path())).state, JobState::Succeeded);
        ASSERT_EQ(finish(alone.run(settings)).state, JobState::Succeeded);
        Engine beside;
        ASSERT_EQ(finish(beside.open(dataset_path())).state, JobState::Succeeded);
        settings.run_umap = true;
        const auto status = finish(beside.run(settings));
        ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
        EXPECT_EQ(steps_of(status), (std::vector<std::string>{"preprocess", "hvg", "scale", "pca", "neighbors", "umap", "leiden"}));
        const auto first = alone.snapshot();
        const auto second = beside.snapshot();
        ASSERT_TRUE(first->leiden && second->leiden);
        EXPECT_FALSE(first->leiden->beside_umap);
        EXPECT_TRUE(second->leiden->beside_umap);
        EXPECT_GT(second->leiden->seconds, 0.0);
        EXPECT_EQ(std::get<CategoricalColumn>(first->obs->find("leiden")->data).codes,
                  std::get<CategoricalColumn>(second->obs->find("leiden")->data).codes);
        EXPECT_EQ(first->leiden->modularity, second->leiden->modularity);
        EXPECT_EQ(first->leiden->passes, second->leiden->passes);
        EXPECT_GT(first->leiden->num_clusters, 1);
        // A new resolution re-runs Leiden alone (UMAP is current).
        settings.leiden.resolution = 0.5;
        const auto again = finish(beside.run(settings));
        ASSERT_EQ(again.state, JobState::Succeeded) << again.message;
        EXPECT_EQ(steps_of(again), (std::vector<std::string>{"leiden"}));
        EXPECT_FALSE(beside.snapshot()->leiden->beside_umap);
    }
}

TEST(Engine, LeidenClustersAndTheirMarkersFollowTheSyntheticCellTypes) {
    Engine engine(EngineConfig{"cpu:3"});
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    PipelineSettings settings = small_settings();
    settings.run_leiden = true;
    settings.run_markers = true;
    settings.markers.method = MarkerMethod::TTest;
    const auto status = finish(engine.run(settings));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
    EXPECT_EQ(steps_of(status),
              (std::vector<std::string>{"preprocess", "hvg", "scale", "pca", "neighbors", "leiden", "markers"}));
    const auto snapshot = engine.snapshot();
    const auto* leiden = std::get_if<CategoricalColumn>(&snapshot->obs->find("leiden")->data);
    ASSERT_NE(leiden, nullptr);
    const auto* truth = std::get_if<CategoricalColumn>(&snapshot->obs->find("cell_type")->data);
    ASSERT_NE(truth, nullptr);
    const auto num_clusters = leiden->categories.size();
    ASSERT_GE(num_clusters, 4u);
    EXPECT_EQ(snapshot->colors.at("leiden").size(), num_clusters);

    // Each cluster is (almost) one cell type; its top markers are that type's markers.
    const io::SynthModel model = io::synthetic_model(dataset_options());
    std::vector<std::vector<std::int64_t>> counts(num_clusters, std::vector<std::int64_t>(truth->categories.size(), 0));
    for (std::size_t cell = 0; cell < leiden->codes.size(); ++cell)
        ++counts[static_cast<std::size_t>(leiden->codes[cell])][static_cast<std::size_t>(truth->codes[cell])];
    ASSERT_EQ(snapshot->markers.size(), num_clusters);
    const auto& highly_variable = std::get<BoolColumn>(snapshot->var->find("highly_variable")->data).values;
    ASSERT_EQ(model.gene_names.size(), highly_variable.size());
    int clusters_with_eight_hvg_markers = 0;
    EXPECT_EQ(snapshot->markers_groupby, "leiden");
    for (std::size_t cluster = 0; cluster < num_clusters; ++cluster) {
        const auto& row = counts[cluster];
        const auto majority = static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin());
        std::int64_t total = 0;
        for (auto count : row) total += count;
        EXPECT_GE(static_cast<double>(row[majority]) / static_cast<double>(total), 0.9) << "cluster " << cluster;
        const auto& markers = snapshot->markers[cluster];
        EXPECT_EQ(markers.group, leiden->categories[cluster]);
        ASSERT_GE(markers.genes.size(), 10u);
        // The model's type order follows cell_type's categories ("type01", ...).
        const auto type = static_cast<std::size_t>(
            std::find(model.cell_type_names.begin(), model.cell_type_names.end(), truth->categories[majority]) -
            model.cell_type_names.begin());
        ASSERT_LT(type, model.markers.size());
        // Markers are tested on the HVG block (as scanpy on the recipe's output); the
        // largest type's markers are the least over-dispersed, so only some are HVGs.
        std::set<std::string> true_markers;
        for (const auto gene : model.markers[type])
            if (highly_variable[static_cast<std::size_t>(gene)]) true_markers.insert(model.gene_names[static_cast<std::size_t>(gene)]);
        clusters_with_eight_hvg_markers += true_markers.size() >= 8 ? 1 : 0;
        int hits = 0;
        for (std::size_t rank = 0; rank < 10; ++rank) {
            hits += true_markers.count(markers.genes[rank]) ? 1 : 0;
            if (rank > 0) {
                EXPECT_LE(markers.scores[rank], markers.scores[rank - 1]);
            }
            EXPECT_GE(markers.pvals_adj[rank], 0.0);
            EXPECT_LE(markers.pvals_adj[rank], 1.0);
        }
        std::string top;
        for (std::size_t rank = 0; rank < 10; ++rank) top += " " + markers.genes[rank] + "=" + std::to_string(markers.scores[rank]);
        EXPECT_GE(hits, std::min<int>(8, static_cast<int>(true_markers.size())))
            << "cluster " << cluster << " (" << truth->categories[majority] << ", " << true_markers.size()
            << " markers among the HVGs):" << top;
    }
    EXPECT_GE(clusters_with_eight_hvg_markers, 2) << "the check above must bite on most clusters";

    // A new resolution recomputes Leiden and the markers, nothing before them.
    settings.leiden.resolution = 0.5;
    const auto again = finish(engine.run(settings));
    ASSERT_EQ(again.state, JobState::Succeeded) << again.message;
    EXPECT_EQ(steps_of(again), (std::vector<std::string>{"leiden", "markers"}));
    // Switching the test recomputes only the markers.
    settings.run_markers = true;
    settings.markers.method = MarkerMethod::Wilcoxon;
    const auto wilcoxon = finish(engine.run(settings));
    ASSERT_EQ(wilcoxon.state, JobState::Succeeded) << wilcoxon.message;
    EXPECT_EQ(steps_of(wilcoxon), (std::vector<std::string>{"markers"}));
}

TEST(Engine, CancelledRunLeavesTheEngineUsable) {
    bool cancel_once = true;
    EngineConfig config;
    config.step_observer = [&cancel_once](const std::string& step, JobContext& ctx) {
        if (step == "pca" && cancel_once) {
            cancel_once = false;
            ctx.cancel();
        }
    };
    Engine engine(config);
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    EXPECT_EQ(finish(engine.run(small_settings())).state, JobState::Cancelled);
    const auto status = finish(engine.run(small_settings()));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
    // preprocess/hvg/scale finished before the cancel and are reused.
    EXPECT_EQ(steps_of(status), (std::vector<std::string>{"pca", "neighbors"}));
    EXPECT_TRUE(engine.snapshot()->obsm.count("X_pca"));
}

TEST(Engine, DestroyingItCancelsARunningJobAndJoinsItsWorkersThenAndThere) {
    // The job holds the engine's state; before ~Engine stopped the queues, the job kept
    // running and released the last reference on its own worker, whose queue then joined
    // itself (std::terminate: "Resource deadlock avoided", seen in the GUI tests).
    std::promise<void> running;
    std::atomic<bool> saw_cancel{false};
    EngineConfig config;
    config.step_observer = [&](const std::string&, JobContext& ctx) {
        running.set_value();
        while (!ctx.cancelled()) std::this_thread::yield();
        saw_cancel = true;
    };
    JobHandle handle, queued;
    {
        Engine engine(config);
        handle = engine.open(dataset_path());
        queued = engine.open(dataset_path());
        ASSERT_EQ(running.get_future().wait_for(120s), std::future_status::ready);
    }
    // ~Engine returned only after the job ended: nothing of it runs on.
    EXPECT_TRUE(saw_cancel);
    EXPECT_EQ(handle.status().state, JobState::Cancelled);
    EXPECT_EQ(queued.status().state, JobState::Cancelled);
}

TEST(Engine, StreamedOutOfCoreRunAgreesWithTheInMemoryRun) {
    PipelineSettings settings = small_settings();
    settings.run_neighbors = false;
    Engine in_memory(EngineConfig{"cpu:2"});
    ASSERT_EQ(finish(in_memory.open(dataset_path())).state, JobState::Succeeded);
    ASSERT_EQ(finish(in_memory.run(settings)).state, JobState::Succeeded);
    EngineConfig config{"cpu:2"};
    config.memory_budget_bytes = -1;  // always stream
    Engine streamed(config);
    ASSERT_EQ(finish(streamed.open(dataset_path())).state, JobState::Succeeded);
    const auto status = finish(streamed.run(settings));
    ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
    const auto a = in_memory.snapshot();
    const auto b = streamed.snapshot();
    EXPECT_TRUE(b->dataset->streamed);
    EXPECT_EQ(std::get<BoolColumn>(a->var->find("highly_variable")->data).values,
              std::get<BoolColumn>(b->var->find("highly_variable")->data).values);
    EXPECT_EQ(std::get<FloatColumn>(a->obs->find("total_counts")->data).values,
              std::get<FloatColumn>(b->obs->find("total_counts")->data).values);
    const auto& pa = *a->obsm.at("X_pca");
    const auto& pb = *b->obsm.at("X_pca");
    ASSERT_EQ(pa.cols(), pb.cols());
    for (std::int64_t component = 0; component < 10; ++component) {
        double dot = 0, na = 0, nb = 0;
        for (std::int64_t cell = 0; cell < pa.rows(); ++cell) {
            dot += double(pa(cell, component)) * pb(cell, component);
            na += double(pa(cell, component)) * pa(cell, component);
            nb += double(pb(cell, component)) * pb(cell, component);
        }
        EXPECT_GT(std::abs(dot) / std::sqrt(na * nb), 0.9999) << "component " << component;
    }
    // Gene queries read the named columns from the file: the same values as in memory.
    const auto gene = streamed.gene_values("GENE00001").wait();
    const auto in_memory_gene = in_memory.gene_values("GENE00001").wait();
    ASSERT_TRUE(gene && in_memory_gene);
    EXPECT_EQ(gene->values, in_memory_gene->values);
    // A gene-set score reads the shards themselves: it needs the matrix in memory.
    const auto set = streamed.gene_set_score({"GENE00001", "GENE00002"});
    const auto set_status = finish(set.handle());
    EXPECT_EQ(set_status.failure, FailureKind::Option) << set_status.message;
    EXPECT_NE(set_status.message.find("streamed"), std::string::npos) << set_status.message;
}

TEST(Engine, PackedOutOfCoreRunGivesThePlainStreamedResultsBitForBit) {
    // The same out-of-core run three times: rows read from the file at every pass
    // (budget -1), kept packed in memory after the first pass (a budget below the CSR
    // but above the packed rows), and a budget the packed rows outgrow (back to the file).
    PipelineSettings settings = small_settings();
    settings.run_neighbors = true;
    settings.run_leiden = true;
    const io::OpenedDataset opened = io::open_dataset(dataset_path());
    const std::int64_t csr_bytes = 8 * (opened.meta.shape.num_cells + 1) + 8 * opened.meta.nnz;
    const auto folder = test::temp_dir("engine_packed");
    struct Run {
        std::int64_t budget;
        const char* storage;
    };
    std::vector<std::shared_ptr<const AnalysisSnapshot>> snapshots;
    std::vector<std::vector<float>> genes;
    std::vector<CsrShard> exported;
    for (const Run run : {Run{-1, "file"}, Run{csr_bytes - 1, "packed"}, Run{4096, "file"}}) {
        EngineConfig config{"cpu:3"};
        config.memory_budget_bytes = run.budget;
        Engine engine(config);
        ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
        const auto status = finish(engine.run(settings));
        ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
        const auto snapshot = engine.snapshot();
        // The budget decision, as the run report gives it.
        EXPECT_TRUE(snapshot->dataset->streamed);
        EXPECT_EQ(snapshot->dataset->matrix_storage, run.storage) << run.budget;
        EXPECT_EQ(snapshot->dataset->memory_budget_bytes, run.budget);
        if (run.budget < 0) {
            EXPECT_EQ(snapshot->dataset->packed_bytes, 0);
        } else {
            EXPECT_GT(snapshot->dataset->packed_bytes, run.storage == std::string("packed") ? 0 : run.budget);
            EXPECT_LT(snapshot->dataset->packed_bytes, csr_bytes / 2) << "packed rows take under half the CSR";
        }
        snapshots.push_back(snapshot);
        const auto gene = engine.gene_values("GENE00007", ValueLayer::Counts).wait();
        ASSERT_TRUE(gene);
        genes.push_back(gene->values);
        const std::string path = (folder / (std::string(run.storage) + std::to_string(run.budget) + ".h5ad")).string();
        ASSERT_EQ(finish(engine.export_h5ad(path, true)).state, JobState::Succeeded);
        io::OpenedDataset written = io::open_dataset(path);
        exported.push_back(written.source->read_rows(0, written.meta.shape.num_cells));
    }
    const auto bits = [](const DenseMatrix<float>& matrix) {
        return std::vector<float>(matrix.data(), matrix.data() + matrix.rows() * matrix.cols());
    };
    for (std::size_t index = 1; index < snapshots.size(); ++index) {
        const auto& a = *snapshots[0];
        const auto& b = *snapshots[index];
        EXPECT_EQ(std::get<BoolColumn>(a.var->find("highly_variable")->data).values,
                  std::get<BoolColumn>(b.var->find("highly_variable")->data).values);
        EXPECT_EQ(bits(*a.obsm.at("X_pca")), bits(*b.obsm.at("X_pca"))) << index;
        EXPECT_EQ(std::get<CategoricalColumn>(a.obs->find("leiden")->data).codes,
                  std::get<CategoricalColumn>(b.obs->find("leiden")->data).codes);
        EXPECT_EQ(genes[0], genes[index]);
        EXPECT_EQ(exported[0].row_offsets, exported[index].row_offsets);
        EXPECT_EQ(exported[0].gene_indices, exported[index].gene_indices);
        EXPECT_EQ(exported[0].values, exported[index].values);
    }
    // X as exported is the file's matrix.
    const CsrShard original = io::open_dataset(dataset_path()).source->read_rows(0, opened.meta.shape.num_cells);
    EXPECT_EQ(exported[1].gene_indices, original.gene_indices);
    EXPECT_EQ(exported[1].values, original.values);
}

/// Genes of the non-integer dataset whose counts are scaled to a total of 0.5: they have
/// counts, and filter_genes(min_counts=1) drops them.
bool scaled_below_one(std::int32_t gene) { return gene % 50 == 3; }

/// dataset_path()'s counts times random factors in [0.3, 1.7) (as ambient-corrected
/// counts), with the genes of scaled_below_one() totalling 0.5: a non-integer X.
const std::string& noninteger_dataset_path() {
    static const std::string path = [] {
        const std::string file = (test::temp_dir("engine-noninteger") / "noninteger.h5ad").string();
        io::OpenedDataset opened = io::open_dataset(dataset_path());
        CsrShard rows = opened.source->read_rows(0, opened.meta.shape.num_cells);
        std::uint64_t state = 12345;
        std::vector<double> gene_totals(static_cast<std::size_t>(opened.meta.shape.num_genes), 0.0);
        for (std::size_t entry = 0; entry < rows.values.size(); ++entry) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            rows.values[entry] *= 0.3f + 1.4f * static_cast<float>(state >> 40) / static_cast<float>(1ULL << 24);
            gene_totals[static_cast<std::size_t>(rows.gene_indices[entry])] += rows.values[entry];
        }
        for (std::size_t entry = 0; entry < rows.values.size(); ++entry)
            if (scaled_below_one(rows.gene_indices[entry]))
                rows.values[entry] = static_cast<float>(rows.values[entry] * 0.5 /
                                                        gene_totals[static_cast<std::size_t>(rows.gene_indices[entry])]);
        std::vector<CsrShard> shards;
        shards.push_back(std::move(rows));
        const ShardedCsr matrix(opened.meta.shape, std::move(shards));
        io::ShardedCsrSource source(matrix);
        io::write_h5ad(file, opened.meta, &source);
        return file;
    }();
    return path;
}

/// The same bits (NaN included).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

TEST(Engine, StreamedZheng17OnNonIntegerXGivesTheInMemoryResults) {
    // Zheng17 on a non-integer X drops genes that have counts (total below 1), so
    // normalize_total's totals are over the kept genes only (NumPy float32 sums): the
    // streamed run takes them, and the moments, in passes of their own after the first.
    // In memory, streamed from the file (budget -1) and from the packed rows, the same
    // results; over 2 ranks (threads) the same bits as one process with as many shards.
    PipelineSettings settings = small_settings();
    settings.run_neighbors = false;
    const std::string& path = noninteger_dataset_path();
    const io::OpenedDataset opened = io::open_dataset(path);
    const std::int64_t csr_bytes = 8 * (opened.meta.shape.num_cells + 1) + 8 * opened.meta.nnz;
    const auto run_engine = [&](EngineConfig config, const char* storage) {
        Engine engine(config);
        const auto status = finish(engine.open(path));
        EXPECT_EQ(status.state, JobState::Succeeded) << status.message;
        const auto ran = finish(engine.run(settings));
        EXPECT_EQ(ran.state, JobState::Succeeded) << storage << ": " << ran.message;
        const auto snapshot = engine.snapshot();
        EXPECT_EQ(snapshot->dataset->matrix_storage, storage);
        EXPECT_FALSE(snapshot->dataset->integer_counts);
        EXPECT_EQ(snapshot->warnings.size(), 1u) << storage;
        if (!snapshot->warnings.empty()) {
            EXPECT_EQ(snapshot->warnings[0].rfind("X holds non-integer values: Zheng17 expects raw counts", 0), 0u)
                << snapshot->warnings[0];
        }
        return snapshot;
    };
    struct Run {
        std::int64_t budget;
        const char* storage;
    };
    std::vector<std::shared_ptr<const AnalysisSnapshot>> snapshots;
    for (const Run run : {Run{0, "memory"}, Run{-1, "file"}, Run{csr_bytes - 1, "packed"}}) {
        EngineConfig config{"cpu:2"};
        config.memory_budget_bytes = run.budget;
        snapshots.push_back(run_engine(config, run.storage));
        ASSERT_TRUE(snapshots.back()->obsm.count("X_pca")) << run.storage;
    }
    const auto column = [](const AnalysisSnapshot& snapshot, const char* name, auto type) {
        return std::get<decltype(type)>(snapshot.var->find(name)->data).values;
    };
    const auto obs_column = [](const AnalysisSnapshot& snapshot, const char* name) {
        return std::get<FloatColumn>(snapshot.obs->find(name)->data).values;
    };
    const auto bits = [](const DenseMatrix<float>& matrix) {
        return std::vector<float>(matrix.data(), matrix.data() + matrix.rows() * matrix.cols());
    };
    const auto& loaded = *snapshots[0];
    // The genes scaled below 1 (those with counts) were dropped before normalising: no
    // HVG statistics, and the cells' totals leave out their values.
    const CsrShard all = opened.source->read_rows(0, opened.meta.shape.num_cells);
    std::vector<double> gene_totals(static_cast<std::size_t>(all.num_genes), 0.0);
    for (std::size_t entry = 0; entry < all.values.size(); ++entry)
        gene_totals[static_cast<std::size_t>(all.gene_indices[entry])] += all.values[entry];
    const auto means = column(loaded, "means", FloatColumn{});
    int dropped_with_counts = 0;
    for (std::int32_t gene = 0; gene < static_cast<std::int32_t>(means.size()); ++gene)
        if (scaled_below_one(gene) && gene_totals[static_cast<std::size_t>(gene)] > 0.0) {
            EXPECT_LT(gene_totals[static_cast<std::size_t>(gene)], 1.0) << gene;
            EXPECT_TRUE(std::isnan(means[static_cast<std::size_t>(gene)])) << gene;
            ++dropped_with_counts;
        }
    EXPECT_GT(dropped_with_counts, 5);
    const auto n_counts_all = obs_column(loaded, "n_counts_all");
    int cells_below = 0;
    for (std::int64_t cell = 0; cell < all.num_rows(); ++cell) {
        double row_total = 0.0;
        for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry) row_total += all.values[entry];
        cells_below += n_counts_all[static_cast<std::size_t>(cell)] < row_total - 1e-3;
    }
    EXPECT_GT(cells_below, 100);
    for (std::size_t index = 1; index < snapshots.size(); ++index) {
        const auto& streamed = *snapshots[index];
        EXPECT_TRUE(streamed.dataset->streamed);
        EXPECT_EQ(column(streamed, "highly_variable", BoolColumn{}), column(loaded, "highly_variable", BoolColumn{}));
        EXPECT_TRUE(same_bits(column(streamed, "means", FloatColumn{}), means)) << index;
        EXPECT_TRUE(same_bits(column(streamed, "dispersions", FloatColumn{}), column(loaded, "dispersions", FloatColumn{})))
            << index;
        EXPECT_TRUE(same_bits(obs_column(streamed, "n_counts_all"), n_counts_all)) << index;
        // One block per shard: the in-memory shards' arithmetic, so X_pca's bits too.
        EXPECT_EQ(bits(*streamed.obsm.at("X_pca")), bits(*loaded.obsm.at("X_pca"))) << index;
    }

    // What streaming still cannot run is refused in the user's words.
    {
        EngineConfig config{"cpu:2"};
        config.memory_budget_bytes = -1;
        Engine engine(config);
        ASSERT_EQ(finish(engine.open(path)).state, JobState::Succeeded);
        PipelineSettings seurat = settings;
        seurat.recipe = Recipe::Seurat;
        const auto refused = finish(engine.run(seurat));
        EXPECT_EQ(refused.failure, FailureKind::Option) << refused.message;
        EXPECT_NE(refused.message.find("support recipe zheng17"), std::string::npos) << refused.message;
        EXPECT_NE(refused.message.find("--memory-budget"), std::string::npos) << refused.message;
    }

    // Two ranks with two shards each, streaming their own rows: one process's four shards.
    EngineConfig one{"cpu:4"};
    one.memory_budget_bytes = -1;
    const auto whole = run_engine(one, "file");
    std::vector<std::shared_ptr<const AnalysisSnapshot>> ranks(2);
    test::run_ranks(2, [&](Comm& comm) {
        EngineConfig config{"cpu:2"};
        config.memory_budget_bytes = -1;
        config.comm = std::shared_ptr<Comm>(std::shared_ptr<Comm>{}, &comm);
        ranks[static_cast<std::size_t>(comm.rank())] = run_engine(config, "file");
    });
    for (const auto& rank : ranks) {
        ASSERT_TRUE(rank && rank->obsm.count("X_pca"));
        EXPECT_EQ(column(*rank, "highly_variable", BoolColumn{}), column(*whole, "highly_variable", BoolColumn{}));
        EXPECT_TRUE(same_bits(column(*rank, "dispersions", FloatColumn{}), column(*whole, "dispersions", FloatColumn{})));
        EXPECT_TRUE(same_bits(obs_column(*rank, "n_counts_all"), obs_column(*whole, "n_counts_all")));
        EXPECT_EQ(bits(*rank->obsm.at("X_pca")), bits(*whole->obsm.at("X_pca")));
    }
}

TEST(Engine, GeneValuesMatchABruteForceRead) {
    Engine engine(EngineConfig{"cpu:3"});
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    io::OpenedDataset opened = io::open_dataset(dataset_path());
    const CsrShard all = opened.source->read_rows(0, opened.meta.shape.num_cells);
    const std::string gene = opened.meta.var.index()[42];
    const auto counts = engine.gene_values(gene, ValueLayer::Counts).wait();
    const auto lognorm = engine.gene_values(gene, ValueLayer::LogNorm).wait();
    ASSERT_TRUE(counts && lognorm);
    ASSERT_EQ(counts->values.size(), 900u);
    for (std::int64_t cell = 0; cell < 900; ++cell) {
        double value = 0.0, total = 0.0;
        for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry) {
            total += all.values[entry];
            if (all.gene_indices[entry] == 42) value = all.values[entry];
        }
        EXPECT_EQ(counts->values[cell], static_cast<float>(value));
        EXPECT_NEAR(lognorm->values[cell], std::log1p(value * 1e4 / total), 1e-5);
    }
    const auto missing = engine.gene_values("NO_SUCH_GENE");
    const auto status = finish(missing.handle());
    EXPECT_EQ(status.state, JobState::Failed);
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("NO_SUCH_GENE"), std::string::npos);
}

TEST(Engine, UnreadableInputFailsWithTheFileNamed) {
    Engine engine;
    const auto status = finish(engine.open("/nonexistent/data.h5ad"));
    EXPECT_EQ(status.state, JobState::Failed);
    EXPECT_EQ(status.failure, FailureKind::Input);
    EXPECT_NE(status.message.find("/nonexistent/data.h5ad"), std::string::npos);
    // A run without a dataset fails cleanly too.
    const auto run = finish(engine.run(small_settings()));
    EXPECT_EQ(run.state, JobState::Failed);
}

TEST(Engine, UmapComponentsRerunsOnlyUmapAndPublishesAThreeColumnXUmap) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset_path())).state, JobState::Succeeded);
    PipelineSettings settings = small_settings();
    settings.run_umap = true;
    settings.umap.num_epochs = 50;
    const auto flat = finish(engine.run(settings));
    ASSERT_EQ(flat.state, JobState::Succeeded) << flat.message;
    EXPECT_EQ(engine.snapshot()->obsm.at("X_umap")->cols(), 2);
    settings.umap.num_components = 3;
    const auto solid = finish(engine.run(settings));
    ASSERT_EQ(solid.state, JobState::Succeeded) << solid.message;
    EXPECT_EQ(steps_of(solid), (std::vector<std::string>{"umap"}));
    const auto umap = engine.snapshot()->obsm.at("X_umap");
    ASSERT_EQ(umap->cols(), 3);
    EXPECT_EQ(umap->rows(), dataset_options().num_cells);
    // The published frame (what the GUI animates) has the same three columns.
    const auto frame = engine.embedding_frame();
    ASSERT_NE(frame, nullptr);
    EXPECT_EQ(frame->coordinates.cols(), 3);
    for (const float value : umap->values()) ASSERT_TRUE(std::isfinite(value));

    settings.umap.num_components = 0;
    try {
        settings.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("n_components must be in [2, 3] (got 0)"), std::string::npos)
            << error.what();
    }
}

TEST(Engine, InvalidSettingsAreRejectedNamingTheField) {
    PipelineSettings settings;
    settings.pca.num_components = 0;
    try {
        settings.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("n_pcs must be in [1, 500] (got 0)"), std::string::npos) << error.what();
    }
    settings = {};
    const SettingSpec& knn_method = *find_setting("knn_method");
    try {
        set_setting(settings, knn_method, std::string("annoy"));
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("knn_method must be one of auto, exact, ivf, nndescent, hnsw (got 'annoy')"),
                  std::string::npos)
            << error.what();
    }
    for (const char* method : {"auto", "exact", "ivf", "nndescent", "hnsw"}) {
        EXPECT_NO_THROW(set_setting(settings, knn_method, std::string(method))) << method;
        EXPECT_NO_THROW(settings.validate()) << method;
    }
    settings = {};
    settings.run_neighbors = false;
    try {
        settings.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("run_umap needs run_neighbors"), std::string::npos) << error.what();
    }
    EXPECT_THROW(Engine(EngineConfig{"tpu:1"}), std::invalid_argument);
}

}  // namespace
}  // namespace fathom
