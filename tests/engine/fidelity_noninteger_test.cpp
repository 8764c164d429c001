// Recipes zheng17 and seurat on an X that is not integer (ambient-corrected or
// down-sampled counts) run as Scanpy runs them, with a warning that says what was found.
// Scanpy is not installed here: tests/support/scanpy_recipes.py computes Scanpy 1.9.6's
// recipe_zheng17 / recipe_seurat / pca step for step in NumPy (its arithmetic checked
// first against Scanpy's own outputs on yeast), on a fixture made at test time from the
// real yeast counts with every value multiplied by a random factor in [0.3, 1.7).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "core/engine/Engine.hpp"
#include "core/io/RowSource.hpp"
#include "tests/engine/engine_jobs.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"
#include "tests/support/reference.hpp"

namespace fathom {
namespace {

const std::string k_script = std::string(FATHOM_SOURCE_DIR) + "/tests/support/scanpy_recipes.py";

std::filesystem::path yeast_input() { return test::shared_data("yeast_844cells/yeast_844cells.h5ad"); }

/// Runs the mirror; with `fixture`, on yeast's counts times random factors written there.
nlohmann::json scanpy_mirror(const std::filesystem::path& folder, const std::string& fixture) {
    const auto out = folder / "scanpy.json";
    std::string command = "/usr/bin/python3 " + test::shell_quote(k_script) + " " + test::shell_quote(yeast_input().string()) +
                          " " + test::shell_quote(out.string());
    if (!fixture.empty()) command += " --perturb 7 " + test::shell_quote(fixture);
    const auto result = test::run_command(command + " 2>&1");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(out);
    return nlohmann::json::parse(in);
}

std::vector<std::string> hvg_names(const AnalysisSnapshot& snapshot) {
    const auto* flags = std::get_if<BoolColumn>(&snapshot.var->find("highly_variable")->data);
    EXPECT_NE(flags, nullptr);
    std::vector<std::string> names;
    if (!flags) return names;
    for (std::size_t gene = 0; gene < flags->values.size(); ++gene)
        if (flags->values[gene]) names.push_back(snapshot.var->index()[gene]);
    return names;
}

std::vector<double> exported_variance_ratio(Engine& engine, const std::filesystem::path& path) {
    EXPECT_EQ(test::finish(engine.export_h5ad(path.string(), false)).state, JobState::Succeeded);
    const Dataset written = io::open_dataset(path.string()).meta;
    return std::get<std::vector<double>>(written.uns.find("pca")->find("variance_ratio")->value);
}

// The mirror is Scanpy: on the integer yeast counts it gives Scanpy 1.9.6's HVG sets and
// variance ratios (../shared/reference/yeast_844cells{,_seurat}).
TEST(NonIntegerRecipes, ScanpyMirrorMatchesScanpysOwnOutputs) {
    FATHOM_REQUIRE_PYTHON("anndata", "pandas", "scipy");
    FATHOM_REQUIRE_PATH(yeast_input());
    if (!test::reference_available("yeast_844cells") || !test::reference_available("yeast_844cells_seurat"))
        GTEST_SKIP() << "no yeast reference in ../shared/reference";
    const auto mirror = scanpy_mirror(test::temp_dir("scanpy-mirror"), "");
    for (const auto& [name, recipe, file] :
         {std::tuple{"yeast_844cells", "zheng17", "zheng17.json"}, {"yeast_844cells_seurat", "seurat", "seurat.json"}}) {
        const auto expected = test::read_reference_json(name, file);
        EXPECT_EQ(mirror[recipe]["hvg_names"], expected["hvg_names"]) << recipe;
        const auto ratios = test::read_reference_json(name, "pca.json")["variance_ratio"].get<std::vector<double>>();
        const auto ours = mirror[recipe]["variance_ratio"].get<std::vector<double>>();
        ASSERT_EQ(ours.size(), ratios.size()) << recipe;
        for (std::size_t component = 0; component < ratios.size(); ++component)
            EXPECT_NEAR(ours[component], ratios[component], 1e-5 * ratios[component]) << recipe << " " << component;
    }
}

TEST(NonIntegerRecipes, RunAsScanpyWithAWarning) {
    FATHOM_REQUIRE_PYTHON("anndata", "pandas", "scipy");
    FATHOM_REQUIRE_PATH(yeast_input());
    const auto folder = test::temp_dir("noninteger-recipes");
    const auto fixture = folder / "yeast_noninteger.h5ad";
    const auto expected = scanpy_mirror(folder, fixture.string());

    Engine engine(EngineConfig{"cpu:3"});
    const auto opened = test::finish(engine.open(fixture.string()));
    ASSERT_EQ(opened.state, JobState::Succeeded) << opened.message;
    EXPECT_FALSE(engine.snapshot()->dataset->integer_counts);
    for (const auto& [recipe, label] : {std::pair{Recipe::Zheng17, "zheng17"}, {Recipe::Seurat, "seurat"}}) {
        PipelineSettings settings;
        settings.recipe = recipe;
        settings.num_top_genes = 1000;
        settings.run_neighbors = settings.run_umap = settings.run_leiden = settings.run_markers = false;
        const auto ran = test::finish(engine.run(settings), std::chrono::seconds(300));
        ASSERT_EQ(ran.state, JobState::Succeeded) << label << ": " << ran.message;
        const auto snapshot = engine.snapshot();
        ASSERT_EQ(snapshot->warnings.size(), 1u) << label;
        EXPECT_EQ(snapshot->warnings[0].rfind(std::string("X holds non-integer values: ") +
                                                  (recipe == Recipe::Zheng17 ? "Zheng17" : "Seurat") + " expects raw counts",
                                              0),
                  0u)
            << snapshot->warnings[0];
        const auto& theirs = expected[label];
        if (recipe == Recipe::Seurat) {
            EXPECT_EQ(static_cast<std::int64_t>(snapshot->cells.size()), theirs["n_cells_kept"].get<std::int64_t>());
        }
        const auto ours_hvg = hvg_names(*snapshot);
        const auto theirs_hvg = theirs["hvg_names"].get<std::vector<std::string>>();
        std::vector<std::string> only_ours, only_theirs;
        std::set_difference(ours_hvg.begin(), ours_hvg.end(), theirs_hvg.begin(), theirs_hvg.end(),
                            std::back_inserter(only_ours));
        std::set_difference(theirs_hvg.begin(), theirs_hvg.end(), ours_hvg.begin(), ours_hvg.end(),
                            std::back_inserter(only_theirs));
        EXPECT_EQ(ours_hvg, theirs_hvg) << label << ": only ours " << testing::PrintToString(only_ours)
                                        << ", only Scanpy's " << testing::PrintToString(only_theirs);
        const auto ratios = theirs["variance_ratio"].get<std::vector<double>>();
        const auto ours = exported_variance_ratio(engine, folder / (std::string(label) + ".h5ad"));
        ASSERT_EQ(ours.size(), ratios.size()) << label;
        for (std::size_t component = 0; component < ratios.size(); ++component)
            EXPECT_NEAR(ours[component], ratios[component], 1e-5 * ratios[component]) << label << " " << component;
    }
}

}  // namespace
}  // namespace fathom
