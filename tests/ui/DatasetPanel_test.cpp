// The Dataset panel's summary rows, from a DatasetSummary.
#include <gtest/gtest.h>

#include "core/engine/Engine.hpp"
#include "tests/ui/ui_test_support.hpp"
#include "ui/DatasetPanel.hpp"
#include "ui/PipelinePanel.hpp"

namespace fathom::ui {
namespace {

TEST(DatasetPanel, SaysHowManyDuplicateGeneNamesWereMadeUnique) {
    DatasetPanel panel;
    DatasetSummary summary;
    summary.path = "/data/pbmc.h5";
    summary.format = "10x HDF5 v3";
    summary.num_var_names_made_unique = 3;
    panel.setSummary(&summary);
    EXPECT_EQ(panel.value(QStringLiteral("names")), QStringLiteral("3 duplicate gene names made unique"));
    summary.num_var_names_made_unique = 0;
    panel.setSummary(&summary);
    EXPECT_EQ(panel.value(QStringLiteral("names")), QStringLiteral("as stored"));
}

// The matrix analysed is named, and why when it is not X (anndata X = None: raw/X).
TEST(DatasetPanel, SaysWhichMatrixIsAnalysedAndWhyWhenXIsAbsent) {
    DatasetPanel panel;
    DatasetSummary summary;
    summary.path = "/data/analysed.h5ad";
    summary.matrix_name = "X";
    panel.setSummary(&summary);
    EXPECT_EQ(panel.value(QStringLiteral("matrix")), QStringLiteral("X"));
    summary.matrix_name = "raw/X";
    summary.open_note = "X is absent (anndata X = None): analysing raw/X";
    panel.setSummary(&summary);
    const QString shown = panel.value(QStringLiteral("matrix"));
    EXPECT_TRUE(shown.startsWith(QStringLiteral("raw/X"))) << shown.toStdString();
    EXPECT_TRUE(shown.contains(QStringLiteral("X is absent"))) << shown.toStdString();
    panel.setSummary(nullptr);
    EXPECT_EQ(panel.value(QStringLiteral("matrix")), QStringLiteral("–"));
}

// A newly opened file pre-chooses the recipe that fits what its X holds; the same file
// again (a later snapshot) does not.
TEST(DatasetPanel, NewDatasetPreChoosesTheRecipeThatFits) {
    DatasetPanel dataset;
    PipelinePanel pipeline;
    QObject::connect(&dataset, &DatasetPanel::datasetOpened, &pipeline, &PipelinePanel::suggestRecipe);
    DatasetSummary summary;
    summary.path = "/data/processed.h5ad";
    summary.content.content = MatrixContent::Scaled;
    summary.content.evidence = "negative values; per-gene means near 0";
    dataset.setSummary(&summary);
    EXPECT_EQ(dataset.value(QStringLiteral("values")), QStringLiteral("scaled"));
    EXPECT_EQ(pipeline.settings().recipe, Recipe::None);
    // The user's choice stays while the same file's snapshots follow.
    PipelineSettings chosen = pipeline.settings();
    chosen.recipe = Recipe::Zheng17;
    pipeline.setSettings(chosen);
    dataset.setSummary(&summary);
    EXPECT_EQ(pipeline.settings().recipe, Recipe::Zheng17);
    // Raw counts: a recipe; seurat, when chosen, stays.
    summary.path = "/data/counts.h5";
    summary.content.content = MatrixContent::RawCounts;
    chosen.recipe = Recipe::None;
    pipeline.setSettings(chosen);
    dataset.setSummary(&summary);
    EXPECT_EQ(pipeline.settings().recipe, Recipe::Zheng17);
    chosen.recipe = Recipe::Seurat;
    pipeline.setSettings(chosen);
    summary.path = "/data/other_counts.h5";
    dataset.setSummary(&summary);
    EXPECT_EQ(pipeline.settings().recipe, Recipe::Seurat);
}

}  // namespace
}  // namespace fathom::ui
