// The application shell against the real engine: pipeline form, dataset panel, open by
// call / drag and drop / recent files, and the end-to-end run (open, pipeline, colour by
// leiden and by a gene) on a small synthetic dataset made with `fathom-cli synth`.
#include "ui/MainWindow.hpp"

#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QSpinBox>
#include <QTest>
#include <QTimer>
#include <QUrl>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "tests/support/paths.hpp"
#include "ui/DatasetPanel.hpp"
#include "ui/JobWatcher.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#ifdef FATHOM_HAS_VTK
#include "ui/PlotLegend.hpp"
#include "ui/vtk/Embedding3DDock.hpp"
#include "ui/vtk/Embedding3DView.hpp"
#endif
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

// 3000 cells x 2000 genes from fathom-cli synth (12 cell types with marker genes); made
// once per test binary. Empty when the generator is unavailable.
std::filesystem::path synthetic_dataset() {
    static const std::filesystem::path path = [] {
        const auto folder = fathom::test::temp_dir("ui-synth");
        const auto file = folder / "synth3k.h5ad";
        const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 3000 --genes 2000 --seed 7 --out '" +
                                    file.string() + "' --quiet > /dev/null 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return std::filesystem::path();
        return file;
    }();
    return path;
}

#define FATHOM_REQUIRE_SYNTH(path)                                                                  \
    const std::filesystem::path path = synthetic_dataset();                                         \
    if (path.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset"

bool wait_open(MainWindow& window, const QString& path, QString* message = nullptr) {
    bool done = false, ok = false;
    QString error;
    auto connection = QObject::connect(&window, &MainWindow::datasetOpened, [&](bool success, const QString& text, int) {
        done = true;
        ok = success;
        error = text;
    });
    window.openFile(path);
    process_events_until([&] { return done; }, 60s);
    QObject::disconnect(connection);
    if (message) *message = error;
    return done && ok;
}

TEST(PipelinePanel, FieldsAreGeneratedFromThePipelineSettingsDefaults) {
    PipelinePanel panel;
    const PipelineSettings defaults{};
    const PipelineSettings shown = panel.settings();
    EXPECT_EQ(shown.recipe, defaults.recipe);
    EXPECT_EQ(shown.num_top_genes, defaults.num_top_genes);
    EXPECT_EQ(shown.pca.num_components, defaults.pca.num_components);
    EXPECT_EQ(shown.neighbors.num_neighbors, defaults.neighbors.num_neighbors);
    EXPECT_DOUBLE_EQ(shown.umap.min_dist, defaults.umap.min_dist);
    EXPECT_DOUBLE_EQ(shown.leiden.resolution, defaults.leiden.resolution);
    EXPECT_EQ(shown.run_umap, defaults.run_umap);
    EXPECT_EQ(shown.markers, defaults.markers);
    EXPECT_EQ(shown.seed, defaults.seed);
    EXPECT_EQ(shown.deterministic, defaults.deterministic);
    EXPECT_EQ(panel.devices().toStdString(), EngineConfig{}.devices);
    for (const char* key : {"recipe", "n_top_genes", "n_pcs", "n_neighbors", "min_dist", "resolution", "deterministic", "devices"})
        EXPECT_NE(panel.fieldEditor(QString::fromUtf8(key)), nullptr) << key;
    auto* deterministic = qobject_cast<QCheckBox*>(panel.fieldEditor(QStringLiteral("deterministic")));
    ASSERT_NE(deterministic, nullptr);
    deterministic->setChecked(!defaults.deterministic);
    EXPECT_EQ(panel.settings().deterministic, !defaults.deterministic);
    auto* genes = qobject_cast<QSpinBox*>(panel.fieldEditor(QStringLiteral("n_top_genes")));
    ASSERT_NE(genes, nullptr);
    EXPECT_EQ(genes->value(), defaults.num_top_genes);
    genes->setValue(2345);
    EXPECT_EQ(panel.settings().num_top_genes, 2345);
    panel.resetToDefaults();
    EXPECT_EQ(panel.settings().num_top_genes, defaults.num_top_genes);
}

TEST(PipelinePanel, InvalidSettingsNameTheFieldAndDisableRun) {
    PipelinePanel panel;
    EXPECT_TRUE(panel.validationError().isEmpty());
    auto* run = panel.findChild<QWidget*>(QStringLiteral("run"));
    ASSERT_NE(run, nullptr);
    EXPECT_TRUE(run->isEnabled());
    auto* min_dist = qobject_cast<QDoubleSpinBox*>(panel.fieldEditor(QStringLiteral("min_dist")));
    auto* spread = qobject_cast<QDoubleSpinBox*>(panel.fieldEditor(QStringLiteral("spread")));
    ASSERT_TRUE(min_dist && spread);
    spread->setValue(0.5);
    min_dist->setValue(2.0);  // min_dist > spread
    EXPECT_TRUE(panel.validationError().contains(QStringLiteral("min_dist"))) << panel.validationError().toStdString();
    EXPECT_FALSE(run->isEnabled());
    min_dist->setValue(0.1);
    EXPECT_TRUE(panel.validationError().isEmpty());
    EXPECT_TRUE(run->isEnabled());
    auto* neighbors = qobject_cast<QCheckBox*>(panel.fieldEditor(QStringLiteral("run_neighbors")));
    ASSERT_NE(neighbors, nullptr);
    neighbors->setChecked(false);  // UMAP and Leiden need the graph
    EXPECT_TRUE(panel.validationError().contains(QStringLiteral("run_neighbors")));
}

TEST(MainWindow, OpenShowsTheDatasetSummaryAndRemembersTheFile) {
    FATHOM_REQUIRE_SYNTH(path);
    MainWindow window(EngineConfig{}, false);
    const QString file = QString::fromStdString(path.string());
    QString error;
    ASSERT_TRUE(wait_open(window, file, &error)) << error.toStdString();
    DatasetPanel* panel = window.datasetPanel();
    EXPECT_EQ(panel->value(QStringLiteral("format")), QStringLiteral("h5ad"));
    EXPECT_EQ(panel->value(QStringLiteral("cells")), QStringLiteral("3,000"));
    EXPECT_EQ(panel->value(QStringLiteral("genes")), QStringLiteral("2,000"));
    EXPECT_FALSE(panel->value(QStringLiteral("nnz")).isEmpty());
    EXPECT_TRUE(panel->value(QStringLiteral("memory")).contains(QStringLiteral("MiB")));
    ASSERT_FALSE(window.recentFiles().isEmpty());
    EXPECT_EQ(window.recentFiles().front(), QFileInfo(file).absoluteFilePath());
    EXPECT_TRUE(window.logText().contains(QStringLiteral("3000 cells x 2000 genes")));
}

TEST(MainWindow, MissingOrMalformedFilesAreReportedNotFatal) {
    MainWindow window(EngineConfig{}, false);
    QString error;
    EXPECT_FALSE(wait_open(window, QStringLiteral("/nonexistent/cells.h5ad"), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("/nonexistent/cells.h5ad")));
    const auto folder = fathom::test::temp_dir("ui-bad");
    const auto bad = folder / "broken.h5ad";
    { std::FILE* file = std::fopen(bad.c_str(), "wb"); std::fputs("not an hdf5 file", file); std::fclose(file); }
    EXPECT_FALSE(wait_open(window, QString::fromStdString(bad.string()), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("broken.h5ad"))) << error.toStdString();
    EXPECT_FALSE(window.busy());
}

TEST(MainWindow, DroppingAFileOpensIt) {
    FATHOM_REQUIRE_SYNTH(path);
    MainWindow window(EngineConfig{}, false);
    bool opened = false;
    QObject::connect(&window, &MainWindow::datasetOpened, [&](bool ok, const QString&, int) { opened = ok; });
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(path.string()))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &drop);
    EXPECT_TRUE(process_events_until([&] { return opened; }, 60s));
}

// Counts the category colours of leiden at each cell's own pixel.
double fraction_of_cells_showing_their_colour(const QImage& image, const PlotView& plot, const std::vector<std::int32_t>& codes,
                                              const std::vector<Rgba8>& colors) {
    const auto& xy = plot.positions();
    std::int64_t matching = 0, counted = 0;
    for (std::size_t cell = 0; cell < codes.size(); ++cell) {
        const Vec2 screen = plot.transform().world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        const int x = static_cast<int>(screen.x), y = static_cast<int>(screen.y);
        if (x < 0 || y < 0 || x >= image.width() || y >= image.height()) continue;
        ++counted;
        matching += fathom::test::pixel_at(image, x, y) == colors[static_cast<std::size_t>(codes[cell])];
    }
    return counted ? static_cast<double>(matching) / counted : 0.0;
}

TEST(MainWindow, EndToEndOpenRunColourByLeidenAndByAGene) {
    FATHOM_REQUIRE_GL();
    FATHOM_REQUIRE_SYNTH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1100, 750);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    QString error;
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string()), &error)) << error.toStdString();

    PipelineSettings settings{};
    settings.umap.num_epochs = 100;  // keep the test short; the layout still separates the cell types
    settings.run_markers = false;
    window.pipelinePanel()->setSettings(settings);
    bool finished = false, ok = false;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString& text, int) {
        finished = true;
        ok = success;
        error = text;
    });
    // The event loop keeps turning while the pipeline runs: count timer ticks and frames.
    int ticks = 0, frames_during_job = 0;
    QTimer ticker;
    ticker.setInterval(10);
    QObject::connect(&ticker, &QTimer::timeout, [&] { ++ticks; });
    QObject::connect(window.plotView(), &PlotView::frameRendered, [&] { frames_during_job += finished ? 0 : 1; });
    ticker.start();
    QElapsedTimer job_clock;
    job_clock.start();
    ASSERT_TRUE(window.runPipeline());
    ASSERT_TRUE(process_events_until([&] { return finished; }, 180s)) << "pipeline did not finish";
    ticker.stop();
    ASSERT_TRUE(ok) << error.toStdString();
    // The event loop kept turning while the job ran (a GUI thread blocked by the job would
    // see at most a tick or two before the job's end): counted in events, not in time, so a
    // loaded machine does not fail it.
    EXPECT_GE(ticks, 10) << "the GUI thread was blocked during the job (" << job_clock.elapsed() << " ms)";
    EXPECT_GT(frames_during_job, 0);

    const auto snapshot = window.snapshot();
    if (!snapshot->obsm.count("X_umap")) GTEST_SKIP() << "the engine does not produce X_umap yet";
    EXPECT_EQ(window.embeddingKey(), QStringLiteral("X_umap"));
    // leiden once the engine clusters; until then the synthetic truth (cell_type).
    const bool has_leiden = snapshot->obs->find("leiden") != nullptr;
    const std::string key = has_leiden ? "leiden" : "cell_type";
    if (has_leiden) EXPECT_EQ(window.colorKey(), QStringLiteral("leiden"));  // the default after a run
    else std::printf("note: no leiden column from the engine yet; colouring by cell_type\n");
    ASSERT_TRUE(window.colorBy(QString::fromStdString(key)));
    PlotView* plot = window.plotView();
    plot->setOverlayVisible(false);
    ASSERT_TRUE(process_events_until([&] { return plot->uploadComplete(); }, 20s));
    QImage image = plot->grabFramebuffer();
    EXPECT_GT(fathom::test::count_pixels_not(image, plot->backgroundColor()), 5000) << "picture is blank";
    const auto* clusters = std::get_if<CategoricalColumn>(&snapshot->obs->find(key)->data);
    ASSERT_NE(clusters, nullptr);
    ASSERT_GE(clusters->categories.size(), 3u);
    const std::vector<Rgba8> colors = plot->categoryColors();
    ASSERT_EQ(colors.size(), clusters->categories.size());
    const auto stored = snapshot->colors.find(key);
    const auto expected = category_colors(stored == snapshot->colors.end() ? nullptr : &stored->second,
                                          clusters->categories.size());
    EXPECT_EQ(colors, expected);
    for (std::size_t category = 0; category < colors.size(); ++category)
        EXPECT_GT(fathom::test::count_pixels(image, colors[category]), 0) << key << " " << category << " not on screen";
    // Cells sit in their cluster's region: most show their own cluster's colour.
    EXPECT_GT(fraction_of_cells_showing_their_colour(image, *plot, clusters->codes, colors), 0.6);

    // Legend toggle: cluster 0's cells disappear.
    plot->setCategoryVisible(0, false);
    image = plot->grabFramebuffer();
    EXPECT_EQ(fathom::test::count_pixels(image, colors[0]), 0);
    EXPECT_GT(fathom::test::count_pixels(image, colors[1]), 0);
    plot->setCategoryVisible(0, true);

    // Colour by a gene: the values come from Engine::gene_values asynchronously.
    const std::string gene = snapshot->var->index().front();
    bool applied = false;
    QObject::connect(&window, &MainWindow::coloringApplied, [&](const QString& key) {
        applied |= key == QString::fromStdString("gene:" + gene);
    });
    const auto position_bytes = plot->stats().position_bytes;
    ASSERT_TRUE(window.colorBy(QString::fromStdString("gene:" + gene)));
    ASSERT_TRUE(process_events_until([&] { return applied; }, 30s));
    EXPECT_EQ(plot->colorKind(), PlotView::ColorKind::Continuous);
    image = plot->grabFramebuffer();
    EXPECT_EQ(plot->stats().position_bytes, position_bytes) << "recolouring must not re-upload positions";
    long viridis_pixels = 0;
    for (int entry = 0; entry < 256; ++entry)
        viridis_pixels += fathom::test::count_pixels(image, colormap_color(Colormap::Viridis, entry / 255.0f));
    EXPECT_GT(viridis_pixels, 5000);
    EXPECT_FALSE(window.colorBy(QStringLiteral("no_such_column")));
}

#ifdef FATHOM_HAS_VTK
// UMAP with n_components = 3 through the window: View > 3-D view shows X_umap coloured
// and filtered as the 2-D plot, and follows the plot's colouring changes.
TEST(MainWindow, ThreeDimensionalUmapInTheThreeDView) {
    FATHOM_REQUIRE_GL();
    FATHOM_REQUIRE_SYNTH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1100, 750);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    auto* dock = window.findChild<Embedding3DDock*>(QStringLiteral("view3dDock"));
    ASSERT_NE(dock, nullptr);
    EXPECT_FALSE(dock->isVisible());
    QString error;
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string()), &error)) << error.toStdString();

    auto* components = qobject_cast<QSpinBox*>(window.pipelinePanel()->fieldEditor(QStringLiteral("n_components")));
    ASSERT_NE(components, nullptr);
    EXPECT_EQ(components->value(), PipelineSettings{}.umap.num_components);
    PipelineSettings settings{};
    settings.umap.num_epochs = 100;
    settings.run_markers = false;
    // The same kNN graph and layout on every run and thread count, so that the pixel
    // bounds below always see the same frame.
    settings.deterministic = true;
    window.pipelinePanel()->setSettings(settings);
    components->setValue(3);
    EXPECT_EQ(window.pipelinePanel()->settings().umap.num_components, 3);
    bool finished = false, ok = false;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString& text, int) {
        finished = true;
        ok = success;
        error = text;
    });
    ASSERT_TRUE(window.runPipeline());
    ASSERT_TRUE(process_events_until([&] { return finished; }, 180s)) << "pipeline did not finish";
    ASSERT_TRUE(ok) << error.toStdString();
    const auto snapshot = window.snapshot();
    ASSERT_EQ(snapshot->obsm.at("X_umap")->cols(), 3);
    EXPECT_EQ(window.embeddingKey(), QStringLiteral("X_umap"));  // the 2-D plot shows UMAP 1-2

    // View > 3-D view.
    auto* filter_dock = window.findChild<QDockWidget*>(QStringLiteral("filterDock"));
    ASSERT_NE(filter_dock, nullptr);
    const int filter_height = filter_dock->height();
    QAction* toggle = dock->toggleViewAction();
    toggle->trigger();
    ASSERT_TRUE(process_events_until([&] { return dock->isVisible(); }, 5s));
    Embedding3DView* view = dock->view();
    EXPECT_EQ(dock->sourceKey(), QStringLiteral("X_umap"));
    PlotView* plot = window.plotView();
    ASSERT_EQ(view->numPoints(), plot->numPoints());
    EXPECT_EQ(window.colorKey(), QStringLiteral("leiden"));
    EXPECT_EQ(view->visiblePoints(), plot->visiblePoints());
    QImage image = view->grabFramebuffer();
    const std::vector<Rgba8> colors = plot->categoryColors();
    ASSERT_GE(colors.size(), 3u);
    // Not blank: at least one covered pixel per two cells drawn (3-px points; dense clusters
    // overlap).
    EXPECT_GT(fathom::test::count_pixels_not(image, view->backgroundColor()), view->visiblePoints() / 2)
        << "the 3-D frame is blank";
    int shown = 0;
    for (const Rgba8& color : colors) shown += fathom::test::count_pixels(image, color) > 0 ? 1 : 0;
    EXPECT_GE(shown, static_cast<int>(colors.size()) - 1) << "cluster colours missing from the 3-D view";

    // A legend toggle in the 2-D plot hides the same cells in 3-D.
    plot->setCategoryVisible(0, false);
    EXPECT_EQ(view->visiblePoints(), plot->visiblePoints());
    EXPECT_LT(view->visiblePoints(), view->numPoints());
    image = view->grabFramebuffer();
    EXPECT_EQ(fathom::test::count_pixels(image, colors[0]), 0);
    plot->setCategoryVisible(0, true);
    EXPECT_EQ(view->visiblePoints(), view->numPoints());

    // Axes named after the source, their ends on the view; the legend beside the view
    // (not over it) lists the same clusters, and a click there hides them in both views.
    EXPECT_EQ(view->axisNames(), (QStringList{QStringLiteral("UMAP1"), QStringLiteral("UMAP2"), QStringLiteral("UMAP3")}));
    const auto ends = view->axisLabelPositions();
    ASSERT_EQ(ends.size(), 3u);
    for (const QPointF& end : ends) EXPECT_TRUE(QRectF(view->rect()).contains(end)) << end.x() << ", " << end.y();
    PlotLegend* legend = dock->legend();
    ASSERT_NE(legend, nullptr);
    ASSERT_EQ(legend->lines().size(), static_cast<int>(colors.size()) + 1);
    EXPECT_EQ(legend->lines().front(), QStringLiteral("leiden"));
    const QRect legend_area(legend->mapTo(dock, QPoint(0, 0)), legend->size());
    const QRect view_area(view->mapTo(dock, QPoint(0, 0)), view->size());
    EXPECT_FALSE(legend_area.intersects(view_area)) << "the legend covers the 3-D view";
    QTest::mouseClick(legend, Qt::LeftButton, {}, legend->entryRect(1).center().toPoint());
    EXPECT_FALSE(plot->categoryVisible(1));
    EXPECT_EQ(view->visiblePoints(), plot->visiblePoints());
    // The right column keeps the filter dock: the 3-D view is a tab beside the markers.
    EXPECT_TRUE(filter_dock->isVisible());
    EXPECT_GE(filter_dock->height(), filter_height * 3 / 4) << "was " << filter_height;
    EXPECT_GE(view->height(), 200);
    EXPECT_GE(view->width(), 200);
}
#endif

}  // namespace
}  // namespace fathom::ui
