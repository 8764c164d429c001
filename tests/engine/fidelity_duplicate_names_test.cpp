// A dataset with repeated gene symbols (neurons10k: Rp1 twice, ...) opens with its var
// names made unique as anndata's var_names_make_unique does, and recipe zheng17 then
// gives Scanpy 1.9.6's HVG names and PCA variance ratios
// (../shared/reference/scanpy_neurons10k_1000genes, run after var_names_make_unique).
#include <gtest/gtest.h>

#include <set>

#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
#include "tests/engine/engine_jobs.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/reference.hpp"

namespace fathom {
namespace {

TEST(DuplicateGeneNames, MadeUniqueAndZheng17MatchesScanpy) {
    const std::string name = "scanpy_neurons10k_1000genes";
    if (!test::reference_available(name)) GTEST_SKIP() << "no reference " << name << " in ../shared/reference";
    const auto meta = test::load_reference(name);
    ASSERT_TRUE(meta["params"].value("var_names_make_unique", false));
    const auto input = test::reference_input_path(meta);
    FATHOM_REQUIRE_PATH(input);
    // The file's symbols repeat.
    const auto stored = io::open_dataset(input.string()).meta.var.index();
    ASSERT_LT(std::set<std::string>(stored.begin(), stored.end()).size(), stored.size());

    Engine engine(EngineConfig{"cpu:3"});
    const auto opened = test::finish(engine.open(input.string()));
    ASSERT_EQ(opened.state, JobState::Succeeded) << opened.message;
    const auto summary = engine.snapshot()->dataset;
    const std::vector<std::string> names = engine.snapshot()->var->index();
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    EXPECT_GT(summary->num_var_names_made_unique, 0);
    std::int64_t renamed = 0;
    for (std::size_t gene = 0; gene < names.size(); ++gene) renamed += names[gene] != stored[gene];
    EXPECT_EQ(summary->num_var_names_made_unique, renamed);
    ASSERT_NE(engine.snapshot()->var->find("gene_ids"), nullptr);

    PipelineSettings settings;
    settings.recipe = Recipe::Zheng17;
    settings.num_top_genes = meta["params"]["recipe_zheng17"]["n_top_genes"].get<std::int64_t>();
    settings.run_neighbors = settings.run_umap = settings.run_leiden = settings.run_markers = false;
    const auto ran = test::finish(engine.run(settings), std::chrono::seconds(300));
    ASSERT_EQ(ran.state, JobState::Succeeded) << ran.message;
    const auto snapshot = engine.snapshot();
    const auto* flags = std::get_if<BoolColumn>(&snapshot->var->find("highly_variable")->data);
    ASSERT_NE(flags, nullptr);
    std::vector<std::string> hvg;
    for (std::size_t gene = 0; gene < flags->values.size(); ++gene)
        if (flags->values[gene]) hvg.push_back(snapshot->var->index()[gene]);
    EXPECT_EQ(hvg, test::read_reference_json(name, "zheng17.json")["hvg_names"].get<std::vector<std::string>>());

    const auto folder = test::temp_dir("duplicate-names-zheng17");
    ASSERT_EQ(test::finish(engine.export_h5ad((folder / "out.h5ad").string(), false)).state, JobState::Succeeded);
    const Dataset written = io::open_dataset((folder / "out.h5ad").string()).meta;
    EXPECT_EQ(written.var.index(), names);
    const auto& ours = std::get<std::vector<double>>(written.uns.find("pca")->find("variance_ratio")->value);
    const auto ratios = test::read_reference_json(name, "pca.json")["variance_ratio"].get<std::vector<double>>();
    ASSERT_EQ(ours.size(), ratios.size());
    for (std::size_t component = 0; component < ratios.size(); ++component)
        EXPECT_NEAR(ours[component], ratios[component], 1e-4 * ratios[component]) << "component " << component;
}

}  // namespace
}  // namespace fathom
