// What a first-time user meets: the selection tools and their keys visible at the default
// window size, and the scripted options that made the README's screenshots.
#include <gtest/gtest.h>

#include <QAction>
#include <QLabel>
#include <QTest>
#include <QToolBar>
#include <QToolButton>

#include "tests/support/paths.hpp"
#include "ui/FigureExport.hpp"
#include "ui/FilterPanel.hpp"
#include "ui/MainWindow.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionController.hpp"
#include "ui/SelectionWorkflow.hpp"
#include "ui/ScriptRunner.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

TEST(Friction, SelectionToolsAndTheirKeysAreVisibleAtTheDefaultSize) {
    FATHOM_REQUIRE_GL();
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    auto* tools = window.findChild<QToolBar*>(QStringLiteral("selectionToolbar"));
    ASSERT_NE(tools, nullptr);
    for (const auto& [name, key] : {std::pair{"toolPan", "(P)"}, std::pair{"toolLasso", "(L)"}, std::pair{"toolRectangle", "(B)"}}) {
        auto* action = window.findChild<QAction*>(QString::fromUtf8(name));
        ASSERT_NE(action, nullptr) << name;
        EXPECT_TRUE(action->text().contains(QString::fromUtf8(key))) << action->text().toStdString();
        QWidget* button = tools->widgetForAction(action);
        ASSERT_NE(button, nullptr) << name;
        EXPECT_TRUE(button->isVisible()) << name << " is in the toolbar's overflow";
        const QRect shown(button->mapTo(&window, QPoint(0, 0)), button->size());
        EXPECT_TRUE(window.rect().contains(shown)) << name;
    }
}

// The categorical legend of pbmc68k_reduced's louvain sits beside the points: once the
// legend has its size, no cell is drawn under it.
TEST(Friction, NoPointOfThePlotIsUnderTheLegend) {
    FATHOM_REQUIRE_GL();
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool opened = false;
    QObject::connect(&window, &MainWindow::datasetOpened, [&](bool ok, const QString&, int) { opened = ok; });
    window.openFile(QString::fromStdString(path.string()));
    ASSERT_TRUE(test::process_events_until([&] { return opened; }, std::chrono::seconds(60)));
    ASSERT_TRUE(window.colorBy(QStringLiteral("louvain")));
    PlotView* plot = window.plotView();
    ASSERT_EQ(plot->numPoints(), 700);
    const auto points_under_legend = [&] {
        const QRectF legend = plot->legendRect();
        std::int64_t under = 0;
        const auto& xy = plot->positions();
        for (std::int64_t cell = 0; cell < plot->numPoints(); ++cell) {
            const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
            under += legend.contains(QPointF(screen.x, screen.y));
        }
        return under;
    };
    // Frames until the legend has its size and the view was fitted beside it.
    const bool settled = test::process_events_until(
        [&] {
            plot->grabFramebuffer();
            return !plot->legendRect().isEmpty() && points_under_legend() == 0;
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(settled) << points_under_legend() << " cells under the legend";
    EXPECT_FALSE(plot->legendRect().isEmpty());
    EXPECT_GE(plot->legendRect().width(), 60.0) << "sized to its names and counts";
}

TEST(Friction, GeneSearchRulesOnceLongErrorsWrapAndUnsavedWorkIsKnown) {
    FATHOM_REQUIRE_GL();
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool opened = false;
    QObject::connect(&window, &MainWindow::datasetOpened, [&](bool ok, const QString&, int) { opened = ok; });
    window.openFile(QString::fromStdString(path.string()));
    ASSERT_TRUE(test::process_events_until([&] { return opened; }, std::chrono::seconds(60)));
    EXPECT_FALSE(window.hasUnsavedChanges());

    FilterPanel* filter = window.filterPanel();
    ASSERT_TRUE(filter->addRule(QStringLiteral("CD79A")));
    EXPECT_FALSE(filter->addRule(QStringLiteral("CD79A"))) << "the same rule twice";
    EXPECT_TRUE(filter->errorText().contains(QStringLiteral("already a rule"))) << filter->errorText().toStdString();
    EXPECT_EQ(filter->rules().size(), 1u);
    auto* error = filter->findChild<QLabel*>(QStringLiteral("filterError"));
    ASSERT_NE(error, nullptr);
    EXPECT_TRUE(error->wordWrap());

    // The filter is on the undo stack: work a session would keep.
    EXPECT_TRUE(window.hasUnsavedChanges());
    const auto folder = test::temp_dir("ui-friction-session");
    QString problem;
    ASSERT_TRUE(window.saveSession(QString::fromStdString((folder / "s.fathom.json").string()), &problem))
        << problem.toStdString();
    EXPECT_FALSE(window.hasUnsavedChanges());
}

// Figure export draws the selection's highlight unless asked to ignore it: the colour of
// a category outside the selection is in the figure only when the selection is ignored.
TEST(Friction, FigureExportCanIgnoreTheSelection) {
    FATHOM_REQUIRE_GL();
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool opened = false;
    QObject::connect(&window, &MainWindow::datasetOpened, [&](bool ok, const QString&, int) { opened = ok; });
    window.openFile(QString::fromStdString(path.string()));
    ASSERT_TRUE(test::process_events_until([&] { return opened; }, std::chrono::seconds(60)));
    ASSERT_TRUE(window.colorBy(QStringLiteral("louvain")));
    PlotView* plot = window.plotView();
    const auto& louvain = std::get<CategoricalColumn>(window.snapshot()->obs->find("louvain")->data);
    CellSet group0;
    for (std::size_t cell = 0; cell < louvain.codes.size(); ++cell)
        if (louvain.codes[cell] == 0) group0.push_back(static_cast<std::uint32_t>(cell));
    window.selectionWorkflow()->controller()->setSelection(group0, QStringLiteral("louvain 0"));
    ASSERT_EQ(plot->selection()->size(), group0.size());
    const Rgba8 outside = plot->categoryColors()[1];
    const auto folder = test::temp_dir("ui-friction-figure");
    FigureOptions options;
    options.legend = false;
    options.dpi = 100;
    const auto pixels_of_category_1 = [&](bool ignore) {
        options.ignore_selection = ignore;
        const QString file = QString::fromStdString((folder / (ignore ? "ignored.png" : "shown.png")).string());
        QString error;
        EXPECT_TRUE(window.exportFigure(file, options, &error)) << error.toStdString();
        return fathom::test::count_pixels(QImage(file), outside);
    };
    EXPECT_EQ(pixels_of_category_1(false), 0) << "outside the selection: dimmed";
    EXPECT_GT(pixels_of_category_1(true), 0) << "ignoring the selection: in its own colour";
    EXPECT_EQ(plot->selection()->size(), group0.size()) << "the selection stays";
}

TEST(Friction, ScriptOptionsSetPipelineSettingsByTheirSchemaNames) {
    QString error;
    auto options = parse_script_options({QStringLiteral("data.h5ad"), QStringLiteral("--set"), QStringLiteral("min_genes=200"),
                                         QStringLiteral("--set"), QStringLiteral("max_pct_counts_mt=12.5"),
                                         QStringLiteral("--markers"), QStringLiteral("louvain"), QStringLiteral("--tab"),
                                         QStringLiteral("QC")},
                                        &error);
    ASSERT_TRUE(options) << error.toStdString();
    EXPECT_TRUE(options->settings_given);
    EXPECT_EQ(options->settings.min_genes_per_cell, 200);
    EXPECT_DOUBLE_EQ(options->settings.max_pct_counts_mt, 12.5);
    EXPECT_EQ(options->markers, QStringLiteral("louvain"));
    EXPECT_EQ(options->tab, QStringLiteral("QC"));
    EXPECT_FALSE(parse_script_options({QStringLiteral("d.h5ad"), QStringLiteral("--set"), QStringLiteral("bogus=1")}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("unknown setting 'bogus'"))) << error.toStdString();
    EXPECT_FALSE(parse_script_options({QStringLiteral("d.h5ad"), QStringLiteral("--set"), QStringLiteral("n_pcs=0")}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("n_pcs must be in [1, 500]"))) << error.toStdString();
    EXPECT_FALSE(parse_script_options({QStringLiteral("d.h5ad"), QStringLiteral("--set"), QStringLiteral("n_pcs")}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("NAME=VALUE"))) << error.toStdString();
}

}  // namespace
}  // namespace fathom::ui
