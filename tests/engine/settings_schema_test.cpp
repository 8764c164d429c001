// The settings schema (core/engine/settings_schema.hpp): every row is consistent with
// PipelineSettings and its steps' Options, the README's table is the schema's, and a run
// after changing one setting re-runs exactly the steps that depend on it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/engine/engine_jobs.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/settings_schema.hpp"
#include "core/io/synth.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/settings_alternatives.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

TEST(SettingsSchema, EveryRowIsConsistent) {
    const PipelineSettings defaults;
    std::set<std::string> names, flags;
    for (const auto& spec : pipeline_settings_schema()) {
        SCOPED_TRACE(spec.name);
        EXPECT_TRUE(names.insert(spec.name).second) << "duplicate name";
        if (!spec.legacy_key.empty()) {
            EXPECT_TRUE(names.insert(spec.legacy_key).second) << "legacy key reused";
        }
        if (!spec.cli_flag.empty()) {
            EXPECT_TRUE(flags.insert(spec.cli_flag).second) << "duplicate flag";
        }
        EXPECT_FALSE(spec.label.empty());
        EXPECT_FALSE(spec.help.empty());
        EXPECT_FALSE(spec.steps.empty());
        ASSERT_TRUE(spec.get && spec.set);
        EXPECT_EQ(find_setting(spec.name), &spec);
        // The default (from the step's Options) lies in the range the form and the CLI offer.
        EXPECT_NO_THROW(check_setting_value(spec, spec.get(defaults)));
        if (!spec.switch_name.empty()) {
            const SettingSpec* step = find_setting(spec.switch_name);
            ASSERT_NE(step, nullptr);
            EXPECT_TRUE(step->step_switch);
        }
        if (spec.step_switch) {
            EXPECT_EQ(spec.kind, SettingKind::Flag);
        }
        // Every front end exchanges values as text or as SettingValue: both round-trip.
        const SettingValue other = test::other_value(spec, defaults);
        EXPECT_NE(other, spec.get(defaults));
        EXPECT_EQ(parse_setting_value(spec, format_setting_value(spec, other)), other);
        PipelineSettings changed = defaults;
        set_setting(changed, spec, other);
        EXPECT_EQ(spec.get(changed), other);
        EXPECT_NE(changed, defaults);
        // Only this setting changed: every other row reads what it read before.
        for (const auto& row : pipeline_settings_schema())
            if (&row != &spec) {
                EXPECT_EQ(row.get(changed), row.get(defaults)) << row.name;
            }
        // Values outside the range are refused, naming the setting and the range.
        if (spec.kind == SettingKind::Integer) {
            try {
                set_setting(changed, spec, static_cast<std::int64_t>(spec.maximum) + 1);
                ADD_FAILURE() << "above the range";
            } catch (const std::invalid_argument& error) {
                EXPECT_EQ(std::string(error.what()).rfind(spec.name + " must be in [", 0), 0u) << error.what();
            }
        }
        if (spec.kind == SettingKind::Real) {
            EXPECT_THROW(set_setting(changed, spec, spec.minimum - 1.0), std::invalid_argument);
            EXPECT_THROW(parse_setting_value(spec, "1.5x"), std::invalid_argument);
        }
        if (spec.kind == SettingKind::Choice) {
            EXPECT_THROW(set_setting(changed, spec, std::string("nope")), std::invalid_argument);
        }
    }
    // Old (version 1 session) keys find their setting.
    EXPECT_EQ(find_setting("num_pcs"), find_setting("n_pcs"));
    EXPECT_EQ(find_setting("umap_components"), find_setting("n_components"));
    EXPECT_EQ(find_setting("seed"), find_setting("random_state"));
    EXPECT_EQ(find_setting("no_such_setting"), nullptr);
}

TEST(SettingsSchema, DefaultsComeFromTheStepsOptions) {
    const PipelineSettings defaults;
    EXPECT_EQ(std::get<std::int64_t>(find_setting("n_pcs")->get(defaults)), PcaOptions{}.num_components);
    EXPECT_EQ(std::get<std::int64_t>(find_setting("n_neighbors")->get(defaults)), KnnOptions{}.num_neighbors);
    EXPECT_EQ(std::get<double>(find_setting("min_dist")->get(defaults)), UmapOptions{}.min_dist);
    EXPECT_EQ(std::get<std::int64_t>(find_setting("n_components")->get(defaults)), UmapOptions{}.num_components);
    EXPECT_EQ(std::get<double>(find_setting("resolution")->get(defaults)), LeidenOptions{}.resolution);
    EXPECT_EQ(std::get<std::string>(find_setting("markers")->get(defaults)), "t-test");
    EXPECT_EQ(std::get<std::string>(find_setting("knn_method")->get(defaults)), "auto");
}

TEST(SettingsSchema, CrossSettingRulesNameBothSettings) {
    PipelineSettings settings;
    settings.umap.min_dist = 2.0;
    try {
        settings.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("min_dist must be <= spread"), std::string::npos) << error.what();
    }
    settings = {};
    settings.run_leiden = false;
    try {
        settings.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("run_markers needs run_leiden"), std::string::npos) << error.what();
    }
    settings.run_markers = false;
    EXPECT_NO_THROW(settings.validate());
}

TEST(SettingsSchema, TheReadmeTableIsTheSchemas) {
    const std::filesystem::path readme = std::filesystem::path(FATHOM_SOURCE_DIR) / "README.md";
    std::ifstream in(readme);
    ASSERT_TRUE(in) << readme;
    std::stringstream text;
    text << in.rdbuf();
    const std::string content = text.str();
    const std::string begin = "<!-- settings-table: generated by `fathom-cli settings` -->\n";
    const std::string end = "<!-- settings-table end -->";
    const auto from = content.find(begin);
    const auto to = content.find(end);
    ASSERT_NE(from, std::string::npos) << "README.md lacks the settings table's begin marker";
    ASSERT_NE(to, std::string::npos) << "README.md lacks the settings table's end marker";
    EXPECT_EQ(content.substr(from + begin.size(), to - from - begin.size()), settings_markdown_table())
        << "README.md's settings table is stale: replace it with the output of `fathom-cli settings`";
}

// ---- which steps re-run ----

std::string dataset() {
    static const std::string path = [] {
        io::SynthOptions options;
        options.num_cells = 700;
        options.num_genes = 600;
        options.num_cell_types = 4;
        options.markers_per_type = 20;
        options.seed = 11;
        const std::string file = (test::temp_dir("settings-schema") / "synthetic.h5ad").string();
        io::write_synthetic(file, options);
        return file;
    }();
    return path;
}

/// Every step on, small enough to run many times.
PipelineSettings all_steps() {
    PipelineSettings settings;
    settings.num_top_genes = 200;
    settings.pca.num_components = 15;
    settings.umap.num_epochs = 30;
    return settings;
}

using test::steps_of;

using test::finish;

/// The steps that must re-run when `spec` alone changes: those it feeds and every step
/// after them, among the steps `settings` runs.
std::vector<std::string> expected_reruns(const SettingSpec& spec, const PipelineSettings& settings) {
    if (spec.step_switch) return {};  // switching a step off re-runs nothing
    // Inputs of each step (StageCache's update calls in core/engine/Pipeline.cpp).
    using S = PipelineStep;
    const std::vector<std::pair<S, std::vector<S>>> inputs = {
        {S::Preprocess, {}},      {S::Hvg, {S::Preprocess}},  {S::Scale, {S::Preprocess, S::Hvg}},
        {S::Pca, {S::Scale}},     {S::Neighbors, {S::Pca}},   {S::Umap, {S::Neighbors, S::Pca}},
        {S::Leiden, {S::Neighbors}}, {S::Markers, {S::Leiden, S::Scale, S::Hvg}}};
    std::set<S> dirty(spec.steps.begin(), spec.steps.end());
    for (const auto& [step, from] : inputs)
        for (const S input : from)
            if (dirty.count(input)) dirty.insert(step);
    const std::map<S, bool> runs = {{S::Preprocess, true},         {S::Hvg, true},
                                    {S::Scale, true},              {S::Pca, true},
                                    {S::Neighbors, settings.run_neighbors}, {S::Umap, settings.run_umap},
                                    {S::Leiden, settings.run_leiden}, {S::Markers, settings.run_markers}};
    std::vector<std::string> out;
    for (const auto& [step, from] : inputs)
        if (dirty.count(step) && runs.at(step)) out.push_back(step_name(step));
    return out;
}

TEST(SettingsSchema, ChangingOneSettingReRunsExactlyTheStepsThatDependOnIt) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset())).state, JobState::Succeeded);
    const PipelineSettings base = all_steps();
    const auto first = finish(engine.run(base));
    ASSERT_EQ(first.state, JobState::Succeeded) << first.message;
    ASSERT_EQ(steps_of(first), (std::vector<std::string>{"preprocess", "hvg", "scale", "pca", "neighbors", "umap",
                                                         "leiden", "markers"}));
    // The same settings again: nothing re-runs.
    EXPECT_EQ(steps_of(finish(engine.run(base))), std::vector<std::string>{});
    for (const auto& spec : pipeline_settings_schema()) {
        SCOPED_TRACE(spec.name);
        const PipelineSettings changed = test::with_other_value(spec, base);
        const auto status = finish(engine.run(changed));
        ASSERT_EQ(status.state, JobState::Succeeded) << status.message;
        EXPECT_EQ(steps_of(status), expected_reruns(spec, changed));
        // Back to the base settings: the same steps run again (a step switched off kept
        // its result and runs nothing).
        const auto back = finish(engine.run(base));
        ASSERT_EQ(back.state, JobState::Succeeded) << back.message;
        EXPECT_EQ(steps_of(back), expected_reruns(spec, base));
    }
    // The seed re-runs PCA (its Lanczos start is seeded) and everything after it.
    PipelineSettings reseeded = base;
    reseeded.seed = 7;
    EXPECT_EQ(steps_of(finish(engine.run(reseeded))),
              (std::vector<std::string>{"pca", "neighbors", "umap", "leiden", "markers"}));
}

TEST(SettingsSchema, AStepSwitchedOffIsNotShownAndComesBackWithoutReRunning) {
    Engine engine;
    ASSERT_EQ(finish(engine.open(dataset())).state, JobState::Succeeded);
    PipelineSettings settings = all_steps();
    ASSERT_EQ(finish(engine.run(settings)).state, JobState::Succeeded);
    const auto shown = engine.snapshot();
    ASSERT_TRUE(shown->obsm.count("X_umap"));
    ASSERT_NE(shown->obs->find("leiden"), nullptr);
    ASSERT_FALSE(shown->markers.empty());

    settings.run_umap = false;
    settings.run_leiden = false;
    settings.run_markers = false;
    EXPECT_EQ(steps_of(finish(engine.run(settings))), std::vector<std::string>{});
    const auto off = engine.snapshot();
    EXPECT_FALSE(off->obsm.count("X_umap")) << "a UMAP the latest run did not ask for is stale";
    EXPECT_EQ(off->obs->find("leiden"), nullptr);
    EXPECT_TRUE(off->markers.empty());
    EXPECT_TRUE(off->obsm.count("X_pca"));

    settings = all_steps();
    EXPECT_EQ(steps_of(finish(engine.run(settings))), std::vector<std::string>{});
    const auto back = engine.snapshot();
    ASSERT_TRUE(back->obsm.count("X_umap"));
    EXPECT_EQ(back->obsm.at("X_umap")->values(), shown->obsm.at("X_umap")->values());
    EXPECT_FALSE(back->markers.empty());
}

}  // namespace
}  // namespace fathom
