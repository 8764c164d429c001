// Engine::evaluate_filter and gene_set_score against a brute-force read of the matrix:
// masks on the first evaluation (columns read from the shards) and on later ones with
// changed thresholds (columns from the engine's cache), the breakdown by an obs column,
// and the gene-set mean / score; a streamed (out-of-core) dataset gives the same masks
// and values; unknown and ambiguous genes fail naming them; EngineConfig::read.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "tests/engine/engine_jobs.hpp"
#include "core/data/CsrShard.hpp"
#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/h5ad_writer.hpp"
#include "core/io/synth.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

io::SynthOptions filter_dataset_options() {
    io::SynthOptions options;
    options.num_cells = 1200;
    options.num_genes = 500;
    options.num_cell_types = 4;
    options.markers_per_type = 10;
    options.seed = 11;
    return options;
}

const std::string& filter_dataset() {
    static const std::string path = [] {
        const auto folder = test::temp_dir("engine-filters");
        const std::string file = (folder / "synthetic.h5ad").string();
        io::write_synthetic(file, filter_dataset_options());
        return file;
    }();
    return path;
}

/// The whole matrix, dense per gene on demand, read independently of the engine.
struct BruteForce {
    io::OpenedDataset opened = io::open_dataset(filter_dataset());
    CsrShard all = opened.source->read_rows(0, opened.meta.shape.num_cells);

    std::int64_t num_cells() const { return opened.meta.shape.num_cells; }
    std::int32_t gene_index(const std::string& name) const {
        const auto& names = opened.meta.var.index();
        return static_cast<std::int32_t>(std::find(names.begin(), names.end(), name) - names.begin());
    }
    /// The stored value of `gene` in every cell.
    std::vector<double> stored(std::int32_t gene) const {
        std::vector<double> values(static_cast<std::size_t>(num_cells()), 0.0);
        for (std::int64_t cell = 0; cell < num_cells(); ++cell)
            for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry)
                if (all.gene_indices[entry] == gene) values[static_cast<std::size_t>(cell)] = all.values[entry];
        return values;
    }
    /// LogNorm value of `gene` in every cell, in double.
    std::vector<double> lognorm(std::int32_t gene) const {
        std::vector<double> values(static_cast<std::size_t>(num_cells()), 0.0);
        for (std::int64_t cell = 0; cell < num_cells(); ++cell) {
            double total = 0.0, value = 0.0;
            for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry) {
                total += all.values[entry];
                if (all.gene_indices[entry] == gene) value = all.values[entry];
            }
            values[static_cast<std::size_t>(cell)] =
                total > 0.0 ? static_cast<float>(std::log1p(value * 1e4 / total)) : 0.0;
        }
        return values;
    }
};

TEST(EngineFilters, MasksMatchBruteForceBeforeAndAfterTheColumnsAreCached) {
    Engine engine(EngineConfig{"cpu:3"});
    const JobHandle open = engine.open(filter_dataset());
    ASSERT_TRUE(open.wait_for(120s));
    ASSERT_EQ(open.status().state, JobState::Succeeded) << open.status().message;
    const BruteForce brute;
    const auto model = io::synthetic_model(filter_dataset_options());
    const std::string a = model.gene_names[static_cast<std::size_t>(model.markers[0].front())];
    const std::string b = model.gene_names[static_cast<std::size_t>(model.markers[1].front())];
    const std::string c = model.gene_names[static_cast<std::size_t>(model.markers[2].front())];
    const auto va = brute.lognorm(brute.gene_index(a));
    const auto vb = brute.lognorm(brute.gene_index(b));
    const auto vc = brute.lognorm(brute.gene_index(c));

    std::int64_t last_matching = -1;
    bool thresholds_matter = false;
    for (const double threshold : {0.5, 1.0, 1.5, 2.0, 2.5}) {
        char text[200];
        std::snprintf(text, sizeof text, "%s > %g and not %s > %g or %s between %g 4", a.c_str(), threshold, b.c_str(),
                      threshold, c.c_str(), threshold);
        const auto mask = engine.evaluate_filter(text, ValueLayer::LogNorm, "cell_type").wait();
        ASSERT_TRUE(mask) << text;
        ASSERT_EQ(mask->mask.size(), static_cast<std::size_t>(brute.num_cells()));
        std::int64_t expected_matching = 0;
        std::map<std::string, std::int64_t> expected_by_type;
        const auto& types = std::get<CategoricalColumn>(brute.opened.meta.obs.find("cell_type")->data);
        for (std::size_t cell = 0; cell < va.size(); ++cell) {
            const float x = static_cast<float>(va[cell]), y = static_cast<float>(vb[cell]), z = static_cast<float>(vc[cell]);
            const float t = static_cast<float>(threshold);
            const bool expected = (x > t && !(y > t)) || (z >= t && z <= 4.0f);
            ASSERT_EQ(mask->mask[cell], expected ? 1 : 0) << text << " cell " << cell;
            expected_matching += expected;
            if (expected) ++expected_by_type[types.categories[static_cast<std::size_t>(types.codes[cell])]];
        }
        EXPECT_EQ(mask->num_matching, expected_matching);
        EXPECT_EQ(mask->group_by, "cell_type");
        ASSERT_EQ(mask->by_cluster.size(), types.categories.size());
        for (const auto& [type, count] : mask->by_cluster) EXPECT_EQ(count, expected_by_type[type]) << type;
        thresholds_matter = thresholds_matter || (last_matching >= 0 && last_matching != expected_matching);
        last_matching = expected_matching;
    }
    EXPECT_TRUE(thresholds_matter) << "the thresholds never changed the mask: the test data is too easy";

    // Raw values: the cache keeps layers apart.
    const auto counts = engine.evaluate_filter(a + " >= 2", ValueLayer::Counts).wait();
    ASSERT_TRUE(counts);
    const auto raw = engine.gene_values(a, ValueLayer::Counts).wait();
    const auto lognorm = engine.gene_values(a, ValueLayer::LogNorm).wait();
    ASSERT_TRUE(raw && lognorm);
    for (std::size_t cell = 0; cell < va.size(); ++cell) {
        EXPECT_EQ(counts->mask[cell], raw->values[cell] >= 2.0f ? 1 : 0);
        EXPECT_FLOAT_EQ(lognorm->values[cell], static_cast<float>(va[cell]));
    }
    // No such obs column and no leiden: no breakdown.
    const auto ungrouped = engine.evaluate_filter(a + " > 1", ValueLayer::LogNorm, "no_such_column").wait();
    ASSERT_TRUE(ungrouped);
    EXPECT_TRUE(ungrouped->by_cluster.empty());
    EXPECT_EQ(ungrouped->group_by, "");
}

TEST(EngineFilters, GeneSetMeanAndScore) {
    Engine engine(EngineConfig{"cpu:2"});
    const JobHandle open = engine.open(filter_dataset());
    ASSERT_TRUE(open.wait_for(120s));
    ASSERT_EQ(open.status().state, JobState::Succeeded) << open.status().message;
    const BruteForce brute;
    const auto model = io::synthetic_model(filter_dataset_options());
    std::vector<std::string> set;
    for (int marker = 0; marker < 3; ++marker)
        set.push_back(model.gene_names[static_cast<std::size_t>(model.markers[0][static_cast<std::size_t>(marker)])]);
    set.push_back("NOT_A_GENE");
    const auto mean = engine.gene_set_score(set).wait();
    ASSERT_TRUE(mean);
    EXPECT_EQ(mean->gene.rfind("mean of 3 genes", 0), 0u) << mean->gene;
    EXPECT_NE(mean->gene.find("NOT_A_GENE"), std::string::npos) << mean->gene;
    std::vector<std::vector<double>> columns;
    for (int gene = 0; gene < 3; ++gene) columns.push_back(brute.lognorm(brute.gene_index(set[static_cast<std::size_t>(gene)])));
    for (std::size_t cell = 0; cell < mean->values.size(); ++cell)
        EXPECT_NEAR(mean->values[cell], (columns[0][cell] + columns[1][cell] + columns[2][cell]) / 3.0, 1e-5);
    const auto score = engine.gene_set_score(set, true).wait();
    ASSERT_TRUE(score);
    EXPECT_EQ(score->gene.rfind("score of 3 genes", 0), 0u) << score->gene;
    // score_genes subtracts a control mean: it differs from the plain mean.
    double difference = 0.0;
    for (std::size_t cell = 0; cell < mean->values.size(); ++cell)
        difference += std::abs(static_cast<double>(score->values[cell]) - mean->values[cell]);
    EXPECT_GT(difference, 0.0);
}

// The explorer's Values switch reaches gene sets: the mean in X as stored is the mean of
// the stored counts; score_genes (log-normalised by definition) refuses another layer.
TEST(EngineFilters, GeneSetMeanInTheStoredValues) {
    Engine engine(EngineConfig{"cpu:2"});
    const JobHandle open = engine.open(filter_dataset());
    ASSERT_TRUE(open.wait_for(120s));
    ASSERT_EQ(open.status().state, JobState::Succeeded) << open.status().message;
    const BruteForce brute;
    const auto model = io::synthetic_model(filter_dataset_options());
    std::vector<std::string> set;
    for (int marker = 0; marker < 3; ++marker)
        set.push_back(model.gene_names[static_cast<std::size_t>(model.markers[1][static_cast<std::size_t>(marker)])]);
    set.push_back(set.front());  // a repeat is scored once
    const auto mean = engine.gene_set_score(set, false, ValueLayer::Counts).wait();
    ASSERT_TRUE(mean);
    EXPECT_EQ(mean->layer, ValueLayer::Counts);
    EXPECT_EQ(mean->gene.rfind("mean of 3 genes", 0), 0u) << mean->gene;
    std::vector<std::vector<double>> columns;
    for (int gene = 0; gene < 3; ++gene) columns.push_back(brute.stored(brute.gene_index(set[static_cast<std::size_t>(gene)])));
    double largest = 0.0;
    for (std::size_t cell = 0; cell < mean->values.size(); ++cell) {
        const double expected = (columns[0][cell] + columns[1][cell] + columns[2][cell]) / 3.0;
        EXPECT_NEAR(mean->values[cell], expected, 1e-5 * std::max(1.0, expected));
        largest = std::max(largest, expected);
    }
    EXPECT_GT(largest, 1.0) << "counts, not log-normalised values";
    const JobHandle refused = engine.gene_set_score(set, true, ValueLayer::Counts).handle();
    ASSERT_TRUE(refused.wait_for(60s));
    EXPECT_EQ(refused.status().state, JobState::Failed);
    EXPECT_NE(refused.status().message.find("log-normalised"), std::string::npos) << refused.status().message;
}

using test::finish;

TEST(EngineFilters, AStreamedDatasetGivesTheSameMasksAndValuesAsInMemory) {
    Engine in_memory(EngineConfig{"cpu:2"});
    ASSERT_EQ(finish(in_memory.open(filter_dataset())).state, JobState::Succeeded);
    EngineConfig config{"cpu:1"};
    config.memory_budget_bytes = -1;  // always stream
    config.stream_block_nnz = 5000;   // many blocks on this small file
    Engine streamed(config);
    ASSERT_EQ(finish(streamed.open(filter_dataset())).state, JobState::Succeeded);
    ASSERT_TRUE(streamed.snapshot()->dataset->streamed);
    const auto model = io::synthetic_model(filter_dataset_options());
    const std::string a = model.gene_names[static_cast<std::size_t>(model.markers[0].front())];
    const std::string b = model.gene_names[static_cast<std::size_t>(model.markers[1].front())];
    const std::string c_id = model.gene_ids[static_cast<std::size_t>(model.markers[2].front())];
    for (const ValueLayer layer : {ValueLayer::LogNorm, ValueLayer::Counts}) {
        for (const std::string& expression :
             {a + " > 1 and not " + b + " > 0.5", "(" + a + " >= 2 or " + c_id + " between 1 3)"}) {
            SCOPED_TRACE(expression);
            const auto expected = in_memory.evaluate_filter(expression, layer).wait();
            const auto got = streamed.evaluate_filter(expression, layer).wait();
            ASSERT_TRUE(expected && got);
            EXPECT_EQ(got->mask, expected->mask);
            EXPECT_EQ(got->num_matching, expected->num_matching);
            EXPECT_GT(got->num_matching, 0);
        }
        const auto expected = in_memory.gene_values(a, layer).wait();
        const auto got = streamed.gene_values(a, layer).wait();
        ASSERT_TRUE(expected && got);
        EXPECT_EQ(got->values, expected->values);
    }
    // The barcodes of a streamed filter's cells.
    const auto mask = streamed.evaluate_filter(a + " > 1").wait();
    ASSERT_TRUE(mask);
    const auto folder = test::temp_dir("engine-filters-streamed");
    ASSERT_EQ(finish(streamed.export_barcodes((folder / "cells.txt").string(), mask->mask)).state, JobState::Succeeded);
    std::ifstream in(folder / "cells.txt");
    std::int64_t lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    EXPECT_EQ(lines, mask->num_matching);
}

TEST(EngineFilters, UnknownAndAmbiguousGenesFailNamingThem) {
    // The synthetic dataset with two genes renamed to one symbol, as 10x files read
    // without var_names_make_unique have.
    const auto folder = test::temp_dir("engine-filters-ambiguous");
    const std::string path = (folder / "duplicated.h5ad").string();
    {
        io::OpenedDataset opened = io::open_dataset(filter_dataset());
        opened.meta.var.index()[3] = "DUPLICATED";
        opened.meta.var.index()[7] = "DUPLICATED";
        io::write_h5ad(path, opened.meta, opened.source.get());
    }
    EngineConfig config{"cpu:1"};
    config.read.make_var_names_unique = false;  // --keep-duplicate-names
    Engine engine(config);
    ASSERT_EQ(finish(engine.open(path)).state, JobState::Succeeded);
    const auto model = io::synthetic_model(filter_dataset_options());

    const auto ambiguous = engine.evaluate_filter("DUPLICATED > 1");
    JobStatus status = finish(ambiguous.handle());
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("ambiguous gene 'DUPLICATED' at column 1 (it is the var name of 2 genes (gene ids " +
                                  model.gene_ids[3] + ", " + model.gene_ids[7] + "); name one by its gene id)"),
              std::string::npos)
        << status.message;
    status = finish(engine.gene_values("DUPLICATED").handle());
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("gene 'DUPLICATED' is ambiguous"), std::string::npos) << status.message;
    status = finish(engine.gene_set_score({"DUPLICATED", model.gene_names[0]}).handle());
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("gene 'DUPLICATED' is ambiguous"), std::string::npos) << status.message;
    // By gene id each one resolves.
    const auto by_id = engine.gene_values(model.gene_ids[7], ValueLayer::Counts).wait();
    ASSERT_TRUE(by_id);
    EXPECT_EQ(by_id->gene_index, 7);
    EXPECT_EQ(by_id->gene, "DUPLICATED");
    // Unknown: named with close matches.
    status = finish(engine.gene_values(model.gene_names[0] + "X").handle());
    EXPECT_EQ(status.failure, FailureKind::Option);
    EXPECT_NE(status.message.find("gene '" + model.gene_names[0] + "X' is not in var names or var['gene_ids'] (did you mean " +
                                  model.gene_names[0]),
              std::string::npos)
        << status.message;
}

TEST(EngineFilters, ReadOptionsApplyToOpenAndToTheStreamedReads) {
    // A 10x file keeps only "Gene Expression" features by default; an empty feature type
    // keeps every one. The synthetic 10x file has only that type, so both read the same
    // matrix here: what is checked is that the options reach every read.
    const auto folder = test::temp_dir("engine-filters-read");
    const std::string path = (folder / "synthetic.h5").string();
    io::write_synthetic(path, filter_dataset_options());
    EngineConfig config{"cpu:1"};
    config.read.feature_type = "";
    config.read.matrix = "X";
    config.memory_budget_bytes = -1;
    Engine engine(config);
    ASSERT_EQ(finish(engine.open(path)).state, JobState::Succeeded);
    const auto model = io::synthetic_model(filter_dataset_options());
    const std::string a = model.gene_names[static_cast<std::size_t>(model.markers[0].front())];
    Engine reference(EngineConfig{"cpu:1"});
    ASSERT_EQ(finish(reference.open(path)).state, JobState::Succeeded);
    const auto got = engine.evaluate_filter(a + " > 1").wait();
    const auto expected = reference.evaluate_filter(a + " > 1").wait();
    ASSERT_TRUE(got && expected);
    EXPECT_EQ(got->mask, expected->mask);
    // The out-of-core pipeline reads the file with the defaults only: it refuses others.
    const auto status = finish(engine.run(PipelineSettings{}));
    EXPECT_EQ(status.failure, FailureKind::Option) << status.message;
    EXPECT_NE(status.message.find("EngineConfig::read"), std::string::npos) << status.message;
    // A matrix that the file does not have fails the open naming it.
    EngineConfig wrong{"cpu:1"};
    wrong.read.matrix = "layers/no_such_layer";
    Engine no_layer(wrong);
    const auto opened = finish(no_layer.open(filter_dataset()));
    EXPECT_EQ(opened.failure, FailureKind::Input) << opened.message;
    EXPECT_NE(opened.message.find("no_such_layer"), std::string::npos) << opened.message;
}

}  // namespace
}  // namespace fathom
