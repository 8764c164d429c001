// Engine::evaluate_filter and gene_set_score against a brute-force read of the matrix:
// masks on the first evaluation (columns read from the shards) and on later ones with
// changed thresholds (columns from the engine's cache), the breakdown by an obs column,
// and the gene-set mean / score.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>

#include "core/data/CsrShard.hpp"
#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
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

}  // namespace
}  // namespace fathom
