// PipelineSettings::deterministic: the kNN graph (approximate IVF search above 8,192 cells)
// and UMAP are bit-for-bit the same for a seed at any thread count, as written to the
// h5ad (obsp['connectivities'], obsp['distances'], obsm['X_umap']), and the setting is
// recorded in uns. (Shard counts: the PCA's reductions over shards round differently
// for different shard counts; tests/algo/neighbors_test.cpp checks that the kNN graph
// and UMAP of one PCA do not depend on the number of query partitions.)
#include <tbb/global_control.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

/// What one run wrote.
struct RunOutput {
    Dataset written;
    std::vector<float> x_pca;
};

/// Runs the pipeline on `path` with `devices` shards and at most `threads` threads,
/// exports the h5ad (annotations only) and reads it back.
RunOutput run_and_export(const std::string& path, const std::string& devices, int threads,
                         const PipelineSettings& settings, const std::string& out) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    Engine engine(EngineConfig{devices});
    const auto wait = [](const JobHandle& handle) {
        EXPECT_TRUE(handle.wait_for(600s)) << "job did not finish in time";
        return handle.status();
    };
    auto status = wait(engine.open(path));
    EXPECT_EQ(status.state, JobState::Succeeded) << status.message;
    status = wait(engine.run(settings));
    EXPECT_EQ(status.state, JobState::Succeeded) << status.message;
    status = wait(engine.export_h5ad(out, false));
    EXPECT_EQ(status.state, JobState::Succeeded) << status.message;
    RunOutput output;
    output.x_pca = engine.snapshot()->obsm.at("X_pca")->values();
    output.written = io::open_dataset(out).meta;
    return output;
}

const UnsNode& child(const UnsNode& node, const std::string& key) {
    const UnsNode* found = node.find(key);
    if (!found) throw std::runtime_error("uns entry '" + key + "' missing");
    return *found;
}

TEST(EngineDeterministic, ThreadCountsGiveBitIdenticalGraphAndUmap) {
    const auto path = test::shared_data("scanpy_neurons10k_1000genes/neurons10k_1000genes.h5ad");
    FATHOM_REQUIRE_PATH(path);
    PipelineSettings settings;
    settings.num_top_genes = 500;  // of the file's 1000 genes
    settings.umap.num_epochs = 100;
    settings.run_leiden = false;
    settings.run_markers = false;
    settings.seed = 3;
    settings.deterministic = true;
    const auto folder = test::temp_dir("deterministic");

    const struct {
        const char* devices;
        int threads;
    } runs[] = {{"cpu:3", 1}, {"cpu:3", 2}, {"cpu:3", 2}};
    std::vector<RunOutput> outputs;
    for (const auto& run : runs)
        outputs.push_back(run_and_export(path.string(), run.devices, run.threads, settings,
                                         (folder / ("run" + std::to_string(outputs.size()) + ".h5ad")).string()));
    ASSERT_FALSE(HasFailure());

    const Dataset& first = outputs[0].written;
    ASSERT_EQ(first.shape.num_cells, 10000) << "the kNN search must be the approximate one (above 8,192 cells)";
    const auto& umap = first.obsm.at("X_umap");
    ASSERT_EQ(umap.rows(), 10000);
    for (const float value : umap.values()) ASSERT_TRUE(std::isfinite(value));
    const CsrShard& connectivities = first.obsp.at("connectivities");
    EXPECT_GT(connectivities.nnz(), 10000 * 14);

    // The setting is saved with the other parameters.
    for (const char* step : {"neighbors", "umap"}) {
        const UnsNode& params = child(child(first.uns, step), "params");
        EXPECT_EQ(std::get<bool>(child(params, "deterministic").value), true) << step;
        EXPECT_EQ(std::get<std::int64_t>(child(params, "random_state").value), 3) << step;
    }

    for (std::size_t index = 1; index < outputs.size(); ++index) {
        const Dataset& other = outputs[index].written;
        const std::string label = std::string(runs[index].devices) + ", " + std::to_string(runs[index].threads) + " threads";
        EXPECT_EQ(outputs[index].x_pca, outputs[0].x_pca) << label << ": X_pca";
        for (const char* graph : {"connectivities", "distances"}) {
            const CsrShard& expected = first.obsp.at(graph);
            const CsrShard& actual = other.obsp.at(graph);
            EXPECT_EQ(actual.row_offsets, expected.row_offsets) << label << ": " << graph;
            EXPECT_EQ(actual.gene_indices, expected.gene_indices) << label << ": " << graph;
            EXPECT_EQ(actual.values, expected.values) << label << ": " << graph;
        }
        EXPECT_EQ(other.obsm.at("X_umap").values(), umap.values()) << label << ": X_umap";
    }
}

TEST(EngineDeterministic, DefaultModeRecordsItInUns) {
    const auto path = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix.h5");
    FATHOM_REQUIRE_PATH(path);
    PipelineSettings settings;
    settings.num_top_genes = 500;
    settings.umap.num_epochs = 50;
    settings.run_leiden = false;
    settings.run_markers = false;
    const auto folder = test::temp_dir("deterministic-default");
    const RunOutput output = run_and_export(path.string(), "cpu:2", 2, settings, (folder / "out.h5ad").string());
    ASSERT_FALSE(HasFailure());
    const UnsNode& umap = child(child(output.written.uns, "umap"), "params");
    EXPECT_EQ(std::get<bool>(child(umap, "deterministic").value), false);
    // scanpy's uns['umap']['params'] a, b for min_dist 0.5, spread 1.
    EXPECT_NEAR(std::get<double>(child(umap, "a").value), 0.583, 1e-3);
    EXPECT_NEAR(std::get<double>(child(umap, "b").value), 1.334, 1e-3);
    EXPECT_EQ(std::get<bool>(child(child(child(output.written.uns, "neighbors"), "params"), "deterministic").value), false);
}

}  // namespace
}  // namespace fathom
