// What a first-time user meets: the selection tools and their keys visible at the default
// window size, and the scripted options that made the README's screenshots.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QMouseEvent>
#include <QDockWidget>
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

    // Panned and zoomed so that cells lie in the legend's strip: none is drawn there (the
    // strip shows the background from the legend's left edge to the plot's right edge)
    // and none can be picked there.
    ViewTransform moved = plot->transform();
    moved.zoom_at({plot->width() / 2.0, plot->height() / 2.0}, 1.6);
    moved.pan_pixels(plot->width() * 0.5, 0.0);
    plot->setTransform(moved);
    const QRectF legend = plot->legendRect();
    const auto& xy = plot->positions();
    std::int64_t in_strip = 0, picked_in_strip = 0;
    for (std::int64_t cell = 0; cell < plot->numPoints(); ++cell) {
        const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        if (screen.x < legend.left() - 8.0 || screen.x >= plot->width() || screen.y < 0.0 || screen.y >= plot->height()) continue;
        ++in_strip;
        picked_in_strip += plot->pickCell(QPointF(screen.x, screen.y), 1.0) >= 0;
    }
    ASSERT_GT(in_strip, 20) << "the pan did not move cells into the legend's strip";
    EXPECT_EQ(picked_in_strip, 0);
    // A lasso or rectangle over the whole plot selects the cells drawn left of the strip,
    // none of those in it.
    const CellSet hits = plot->cellsInWidgetPolygon(QPolygonF(QRectF(0.0, 0.0, plot->width(), plot->height())));
    const double plot_right = legend.left() - 8.0;  // the strip: the legend and its margins
    std::int64_t drawn_left = 0, hit_in_strip = 0;
    for (std::int64_t cell = 0; cell < plot->numPoints(); ++cell) {
        const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        if (screen.y < 0.0 || screen.y >= plot->height() || screen.x < 0.0) continue;
        drawn_left += screen.x < plot_right - 1.0;
    }
    for (const std::int64_t cell : hits) {
        const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        hit_in_strip += screen.x >= plot_right + 1.0;
    }
    EXPECT_EQ(hit_in_strip, 0) << "cells under the legend selected";
    EXPECT_GT(drawn_left, 20);
    EXPECT_GE(static_cast<std::int64_t>(hits.size()), drawn_left) << "cells left of the strip not selected";
    const QImage frame = plot->grabFramebuffer();
    const double ratio = frame.devicePixelRatio();
    const Rgba8 background = plot->backgroundColor();
    long drawn = 0;
    // Below the legend window (the legend itself draws category swatches): the strip's
    // pixels are all background.
    for (int y = static_cast<int>((legend.bottom() + 4.0) * ratio); y < frame.height() - 2; ++y)
        for (int x = static_cast<int>((legend.left() - 8.0 + 1.0) * ratio); x < frame.width(); ++x)
            drawn += !(test::pixel_at(frame, x, y) == background);
    EXPECT_EQ(drawn, 0) << "cells drawn in the legend's strip";
}

// A continuous colouring (a numeric obs column) shows a colour bar: the strip kept free of
// cells is only as wide as the bar, its labels and range controls (not the categorical
// legend's width), and no cell is drawn under it.
TEST(Friction, AColourBarKeepsOnlyANarrowStripFreeOfCells) {
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
    ASSERT_TRUE(window.colorBy(QStringLiteral("n_counts")));
    PlotView* plot = window.plotView();
    ASSERT_EQ(plot->numPoints(), 700);
    const auto& xy = plot->positions();
    const auto points_in_strip = [&] {
        std::int64_t under = 0;
        for (std::int64_t cell = 0; cell < plot->numPoints(); ++cell) {
            const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
            under += screen.x >= plot->width() - plot->legendStrip() && screen.x < plot->width();
        }
        return under;
    };
    const bool settled = test::process_events_until(
        [&] {
            plot->grabFramebuffer();
            return !plot->legendRect().isEmpty() && plot->legendStrip() > 0.0 && points_in_strip() == 0;
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(settled) << points_in_strip() << " cells in the colour bar's strip";
    EXPECT_GT(plot->legendStrip(), 40.0) << "the colour bar keeps a strip";
    EXPECT_LE(plot->legendStrip(), 120.0) << "the colour bar's strip is as wide as a categorical legend";
    EXPECT_GE(plot->legendStrip(), plot->legendRect().width()) << "the strip covers the colour bar";
    EXPECT_LE(plot->width() - plot->legendStrip(), plot->legendRect().left()) << "the strip covers the colour bar";

    // Panned so that cells lie in the strip: none is drawn, picked or selected there.
    ViewTransform moved = plot->transform();
    moved.zoom_at({plot->width() / 2.0, plot->height() / 2.0}, 1.6);
    moved.pan_pixels(plot->width() * 0.5, 0.0);
    plot->setTransform(moved);
    const double plot_right = plot->width() - plot->legendStrip();
    std::int64_t in_strip = 0, picked_in_strip = 0;
    for (std::int64_t cell = 0; cell < plot->numPoints(); ++cell) {
        const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        if (screen.x < plot_right + 1.0 || screen.x >= plot->width() || screen.y < 0.0 || screen.y >= plot->height()) continue;
        ++in_strip;
        picked_in_strip += plot->pickCell(QPointF(screen.x, screen.y), 1.0) >= 0;
    }
    ASSERT_GT(in_strip, 5) << "the pan did not move cells into the strip";
    EXPECT_EQ(picked_in_strip, 0);
    const CellSet hits = plot->cellsInWidgetPolygon(QPolygonF(QRectF(0.0, 0.0, plot->width(), plot->height())));
    std::int64_t hit_in_strip = 0;
    for (const std::int64_t cell : hits) {
        const Vec2 screen = plot->transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        hit_in_strip += screen.x >= plot_right + 1.0;
    }
    EXPECT_EQ(hit_in_strip, 0) << "cells in the strip selected";
    const QImage frame = plot->grabFramebuffer();
    const double ratio = frame.devicePixelRatio();
    const Rgba8 background = plot->backgroundColor();
    const QRectF legend = plot->legendRect();
    long drawn = 0;
    for (int y = static_cast<int>((legend.bottom() + 4.0) * ratio); y < frame.height() - 2; ++y)
        for (int x = static_cast<int>((plot_right + 1.0) * ratio); x < frame.width(); ++x)
            drawn += !(test::pixel_at(frame, x, y) == background);
    EXPECT_EQ(drawn, 0) << "cells drawn in the colour bar's strip";
}

// The stats text (cells, frame time) at the bottom left stays in the plot area left of the
// legend's strip: beside bulk_labels' long names (a wide legend) on the default window's
// plot, its line is elided rather than run under the legend.
TEST(Friction, StatsTextStaysLeftOfTheLegend) {
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
    PlotView* plot = window.plotView();
    // Uncoloured, the stats line has the whole width: note how wide it is.
    ASSERT_TRUE(test::process_events_until(
        [&] {
            plot->grabFramebuffer();
            // An auto-sized window takes its size over its first frames.
            return plot->statsRect().width() > 150.0;
        },
        std::chrono::seconds(20)))
        << plot->statsRect().width();
    const double full_width = plot->statsRect().width();
    ASSERT_TRUE(window.colorBy(QStringLiteral("bulk_labels")));
    const auto inside = [&] {
        const QRectF stats = plot->statsRect();
        return !stats.isEmpty() && plot->legendStrip() > 0.0 && stats.left() >= 0.0 &&
               stats.right() <= plot->width() - plot->legendStrip() + 0.5 && !stats.intersects(plot->legendRect());
    };
    const bool settled = test::process_events_until(
        [&] {
            plot->grabFramebuffer();
            return !plot->legendRect().isEmpty() && inside();
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(settled) << "stats " << plot->statsRect().left() << ".." << plot->statsRect().right() << ", strip from "
                         << plot->width() - plot->legendStrip() << ", legend from " << plot->legendRect().left();
    // The case the test is about: the full line does not fit left of the strip.
    EXPECT_GT(full_width, plot->width() - plot->legendStrip()) << "the plot is wide enough for the whole line";
}

// A small window narrows the docks before the plot goes below its minimum; enlarged
// again, the docks get their widths back (no dock stays squeezed).
TEST(Friction, SmallWindowsKeepThePlotAndEnlargingRestoresTheDocks) {
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    auto* analysis = window.findChild<QDockWidget*>(QStringLiteral("analysisDock"));
    auto* filter = window.findChild<QDockWidget*>(QStringLiteral("filterDock"));
    ASSERT_TRUE(analysis && filter);
    QTest::qWait(50);
    const int analysis_width = analysis->width(), filter_width = filter->width();
    EXPECT_GE(analysis_width, 290);
    EXPECT_GE(filter_width, 340);
    window.resize(820, 560);
    ASSERT_TRUE(test::process_events_until([&] { return window.width() < 1000; }, std::chrono::seconds(5)));
    QTest::qWait(50);
    PlotView* plot = window.plotView();
    EXPECT_GE(plot->width(), 240) << "the plot shrank below its minimum";
    EXPECT_GE(plot->height(), 200);
    EXPECT_LT(analysis->width() + filter->width(), analysis_width + filter_width) << "the docks gave up no room";
    window.resize(1280, 800);
    EXPECT_TRUE(test::process_events_until(
        [&] { return analysis->width() >= analysis_width && filter->width() >= filter_width; }, std::chrono::seconds(5)))
        << "docks stayed squeezed: " << analysis->width() << " and " << filter->width();
    EXPECT_GE(plot->width(), 500);
}

// A dock narrowed by hand (a separator drag) keeps its width when the window grows; a
// squeeze by a small window afterwards gives back the hand-set width, not the first one.
TEST(Friction, ADockNarrowedByHandKeepsItsWidthWhenTheWindowGrows) {
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    auto* analysis = window.findChild<QDockWidget*>(QStringLiteral("analysisDock"));
    ASSERT_TRUE(analysis);
    QTest::qWait(50);
    const int first_width = analysis->width();
    ASSERT_GE(first_width, 290);
    // Drag the separator right of the analysis dock 50 px to the left.
    const QPoint dock_right = analysis->mapTo(&window, QPoint(analysis->width(), analysis->height() / 2));
    const QPoint central_left = window.centralWidget()->mapTo(&window, QPoint(0, 0));
    const QPoint grip((dock_right.x() + central_left.x()) / 2, dock_right.y());
    const auto send = [&](QEvent::Type type, QPoint at, Qt::MouseButton button, Qt::MouseButtons buttons) {
        QMouseEvent event(type, QPointF(at), QPointF(window.mapToGlobal(at)), button, buttons, Qt::NoModifier);
        QApplication::sendEvent(&window, &event);
    };
    send(QEvent::MouseMove, grip, Qt::NoButton, Qt::NoButton);
    send(QEvent::MouseButtonPress, grip, Qt::LeftButton, Qt::LeftButton);
    // The layout applies separator moves from a timer: let it run between moves.
    send(QEvent::MouseMove, grip - QPoint(20, 0), Qt::NoButton, Qt::LeftButton);
    QTest::qWait(60);
    send(QEvent::MouseMove, grip - QPoint(50, 0), Qt::NoButton, Qt::LeftButton);
    QTest::qWait(60);
    send(QEvent::MouseButtonRelease, grip - QPoint(50, 0), Qt::LeftButton, Qt::NoButton);
    QTest::qWait(50);
    const int hand_width = analysis->width();
    ASSERT_LT(hand_width, first_width - 30) << "the separator drag did not narrow the dock";
    window.resize(1500, 900);
    ASSERT_TRUE(test::process_events_until([&] { return window.width() > 1400; }, std::chrono::seconds(5)));
    QTest::qWait(100);
    EXPECT_NEAR(analysis->width(), hand_width, 2) << "the grown window changed the hand-set width";
    // Squeezed by a small window, then grown again: back to the hand-set width.
    window.resize(820, 560);
    ASSERT_TRUE(test::process_events_until([&] { return window.width() < 1000; }, std::chrono::seconds(5)));
    QTest::qWait(50);
    window.resize(1500, 900);
    EXPECT_TRUE(test::process_events_until([&] { return std::abs(analysis->width() - hand_width) <= 2; },
                                           std::chrono::seconds(5)))
        << analysis->width() << " instead of " << hand_width;
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
    // Only these two are set over what the form chooses for the file (e.g. its recipe).
    ASSERT_EQ(options->given.size(), 2u);
    EXPECT_EQ(options->given[0].first, "min_genes");
    EXPECT_EQ(options->given[1].first, "max_pct_counts_mt");
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
