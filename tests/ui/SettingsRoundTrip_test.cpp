// Every setting of the schema (core/engine/settings_schema.hpp) round-trips through the
// Pipeline form and a session file, and version-1 session files still load.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QSpinBox>
#include <filesystem>
#include <fstream>

#include "tests/support/paths.hpp"
#include "tests/support/settings_alternatives.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/Session.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

TEST(SettingsRoundTrip, EverySettingHasAFormFieldThatRoundTrips) {
    PipelinePanel panel;
    EXPECT_EQ(panel.settings(), PipelineSettings{});
    QStringList names;
    for (const auto& spec : pipeline_settings_schema()) names << QString::fromStdString(spec.name);
    EXPECT_EQ(panel.fieldKeys(), names) << "one field per setting, in schema order";
    for (const auto& spec : pipeline_settings_schema()) {
        SCOPED_TRACE(spec.name);
        const PipelineSettings expected = test::with_other_value(spec, PipelineSettings{});
        panel.setSettings(expected);
        EXPECT_EQ(panel.settings(), expected);
        EXPECT_TRUE(panel.validationError().isEmpty()) << panel.validationError().toStdString();
        // The field's range is the schema's.
        if (auto* spin = qobject_cast<QSpinBox*>(panel.fieldEditor(QString::fromStdString(spec.name)))) {
            EXPECT_EQ(spin->minimum(), static_cast<int>(spec.minimum));
            EXPECT_EQ(spin->maximum(), static_cast<int>(spec.maximum));
        }
    }
    // A step's values are disabled while the step is off.
    PipelineSettings no_umap;
    no_umap.run_umap = false;
    panel.setSettings(no_umap);
    EXPECT_FALSE(panel.fieldEditor(QStringLiteral("min_dist"))->isEnabled());
    EXPECT_TRUE(panel.fieldEditor(QStringLiteral("n_neighbors"))->isEnabled());
    panel.resetToDefaults();
    EXPECT_TRUE(panel.fieldEditor(QStringLiteral("min_dist"))->isEnabled());
    // Switching off the kNN graph while UMAP is on names both settings.
    qobject_cast<QCheckBox*>(panel.fieldEditor(QStringLiteral("run_neighbors")))->setChecked(false);
    EXPECT_TRUE(panel.validationError().contains(QStringLiteral("run_umap needs run_neighbors")))
        << panel.validationError().toStdString();
}

TEST(SettingsRoundTrip, EverySettingSurvivesASessionFile) {
    const auto folder = test::temp_dir("settings-session");
    const QString path = QString::fromStdString((folder / "s.fathom.json").string());
    for (const auto& spec : pipeline_settings_schema()) {
        SCOPED_TRACE(spec.name);
        SessionState state;
        state.dataset = "x.h5ad";
        state.pipeline = test::with_other_value(spec, PipelineSettings{});
        save_session(state, path);
        EXPECT_EQ(load_session(path).pipeline, state.pipeline);
    }
}

// Regression: a saved session kept 16 of the 17 settings and dropped n_components, so a
// reopened 3-D UMAP session re-ran a 2-D UMAP.
TEST(SettingsRoundTrip, UmapComponentsSurvivesASession) {
    const auto folder = test::temp_dir("settings-session-3d");
    const QString path = QString::fromStdString((folder / "s.fathom.json").string());
    SessionState state;
    state.dataset = "x.h5ad";
    state.pipeline.umap.num_components = 3;
    save_session(state, path);
    EXPECT_EQ(load_session(path).pipeline.umap.num_components, 3);
}

TEST(SettingsRoundTrip, VersionOneSessionsLoadUnderTheirOldKeys) {
    const auto path = test::temp_dir("settings-session-v1") / "old.fathom.json";
    std::ofstream(path) << R"({"format": "fathom-session", "version": 1, "dataset": "a.h5ad", "pipeline": {
        "recipe": "seurat", "num_top_genes": 1500, "num_pcs": 30, "run_neighbors": true, "num_neighbors": 20,
        "knn_method": "hnsw", "run_umap": true, "min_dist": 0.3, "spread": 1.5, "umap_epochs": 300,
        "run_leiden": true, "resolution": 0.8, "markers": "", "seed": 9, "deterministic": true,
        "min_counts_per_cell": 500}})";
    const SessionState state = load_session(QString::fromStdString(path.string()));
    PipelineSettings expected;
    expected.recipe = Recipe::Seurat;
    expected.num_top_genes = 1500;
    expected.pca.num_components = 30;
    expected.neighbors.num_neighbors = 20;
    expected.neighbors.method = KnnMethod::Hnsw;
    expected.umap.min_dist = 0.3;
    expected.umap.spread = 1.5;
    expected.umap.num_epochs = 300;
    expected.leiden.resolution = 0.8;
    expected.run_markers = false;  // version 1 wrote "" for no markers
    expected.seed = 9;
    expected.deterministic = true;
    expected.min_counts_per_cell = 500;
    EXPECT_EQ(state.pipeline, expected);
}

}  // namespace
}  // namespace fathom::ui
