// The selection workflow in the main window against the real engine, on a small synthetic
// dataset: a rectangle drag on the plot, the selection saved as an obs column (new and
// existing), categories renamed and merged, the selection's markers in the sortable
// table, the CSV and barcode exports, and Edit > Undo / Redo.
#include "ui/SelectionWorkflow.hpp"

#include <gtest/gtest.h>

#include <QAction>
#include <QSortFilterProxyModel>
#include <QTest>
#include <QUndoStack>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/paths.hpp"
#include "ui/MainWindow.hpp"
#include "ui/MarkersPanel.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionController.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

std::filesystem::path synthetic_dataset() {
    static const std::filesystem::path path = [] {
        const auto folder = fathom::test::temp_dir("ui-selection-synth");
        const auto file = folder / "synth2k.h5ad";
        const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 2000 --genes 1500 --seed 3 --out '" +
                                    file.string() + "' --quiet > /dev/null 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return std::filesystem::path();
        return file;
    }();
    return path;
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::int64_t> counts_of(const AnalysisSnapshot& snapshot, const std::string& column,
                                    std::vector<std::string>* categories) {
    const auto& categorical = std::get<CategoricalColumn>(snapshot.obs->find(column)->data);
    *categories = categorical.categories;
    std::vector<std::int64_t> counts(categorical.categories.size(), 0);
    for (const auto code : categorical.codes)
        if (code >= 0) ++counts[static_cast<std::size_t>(code)];
    return counts;
}

TEST(SelectionWorkflow, SelectSaveRenameMergeMarkersExportAndUndo) {
    FATHOM_REQUIRE_GL();
    const auto dataset = synthetic_dataset();
    if (dataset.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset";
    MainWindow window(EngineConfig{}, false);
    window.resize(1200, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool opened = false;
    QObject::connect(&window, &MainWindow::datasetOpened, [&](bool ok, const QString&, int) { opened = ok; });
    window.openFile(QString::fromStdString(dataset.string()));
    ASSERT_TRUE(process_events_until([&] { return opened; }, 60s));
    PipelineSettings settings;
    settings.num_top_genes = 300;
    settings.pca.num_components = 20;
    settings.run_umap = false;  // the plot shows X_pca
    settings.run_markers = false;
    window.pipelinePanel()->setSettings(settings);
    bool finished = false, ran = false;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool ok, const QString&, int) {
        finished = true;
        ran = ok;
    });
    ASSERT_TRUE(window.runPipeline());
    ASSERT_TRUE(process_events_until([&] { return finished; }, 180s));
    ASSERT_TRUE(ran);
    PlotView* plot = window.plotView();
    ASSERT_EQ(plot->numPoints(), 2000);
    ASSERT_TRUE(process_events_until([&] { return plot->uploadComplete(); }, 20s)) << "plot did not upload";
    plot->grabFramebuffer();

    // A rectangle drag over the middle of the plot, with synthesized mouse events.
    SelectionWorkflow* workflow = window.selectionWorkflow();
    SelectionController* selection = workflow->controller();
    auto* rectangle_tool = window.findChild<QAction*>(QStringLiteral("toolRectangle"));
    ASSERT_NE(rectangle_tool, nullptr);
    rectangle_tool->trigger();
    ASSERT_EQ(plot->tool(), PlotView::Tool::Rectangle);
    const QPoint from(plot->width() / 4, plot->height() / 4), to(plot->width() * 3 / 5, plot->height() * 3 / 4);
    QTest::mousePress(plot, Qt::LeftButton, Qt::NoModifier, from);
    QTest::mouseMove(plot, (from + to) / 2);
    QTest::mouseRelease(plot, Qt::LeftButton, Qt::NoModifier, to);
    const Vec2 corner_a = plot->transform().screen_to_world({double(from.x()), double(from.y())});
    const Vec2 corner_b = plot->transform().screen_to_world({double(to.x()), double(to.y())});
    const auto box = rectangle_polygon(corner_a, corner_b);
    CellSet expected;
    for (std::size_t cell = 0; cell < 2000; ++cell)
        if (point_in_polygon(box, plot->positions()[2 * cell], plot->positions()[2 * cell + 1]))
            expected.push_back(static_cast<std::uint32_t>(cell));
    ASSERT_GT(expected.size(), 20u);
    ASSERT_LT(expected.size(), 1980u);
    EXPECT_EQ(*selection->selection(), expected);
    const CellSet selected = expected;

    // Save it as a new obs column: the selection and "rest".
    QString saved_column;
    bool saved = false, save_ok = false;
    QObject::connect(workflow, &SelectionWorkflow::annotationSaved, [&](bool ok, const QString& column, const QString&) {
        saved = true;
        save_ok = ok;
        saved_column = column;
    });
    const auto wait_saved = [&] {
        saved = false;
        return process_events_until([&] { return saved; }, 30s) && save_ok;
    };
    const auto version = window.snapshot()->version;
    ASSERT_TRUE(workflow->saveMaskAsAnnotation(QStringLiteral("picked"), QStringLiteral("A"), selection->mask()));
    ASSERT_TRUE(wait_saved());
    EXPECT_GT(window.snapshot()->version, version);
    std::vector<std::string> categories;
    auto counts = counts_of(*window.snapshot(), "picked", &categories);
    EXPECT_EQ(categories, (std::vector<std::string>{"A", "rest"}));
    EXPECT_EQ(counts, (std::vector<std::int64_t>{static_cast<std::int64_t>(selected.size()), 2000 - static_cast<std::int64_t>(selected.size())}));
    EXPECT_EQ(window.colorKey(), QStringLiteral("picked"));
    EXPECT_EQ(plot->categories(), categories) << "the legend shows the new column";
    EXPECT_EQ(*plot->selection(), selected) << "recolouring keeps the selection";

    // Into the existing column: 100 other cells become "B"; the rest keep their category.
    std::vector<std::uint8_t> others(2000, 0);
    int taken = 0;
    for (std::size_t cell = 0; cell < 2000 && taken < 100; ++cell)
        if (!std::binary_search(selected.begin(), selected.end(), static_cast<std::uint32_t>(cell))) {
            others[cell] = 1;
            ++taken;
        }
    ASSERT_TRUE(workflow->saveMaskAsAnnotation(QStringLiteral("picked"), QStringLiteral("B"), others));
    ASSERT_TRUE(wait_saved());
    counts = counts_of(*window.snapshot(), "picked", &categories);
    EXPECT_EQ(categories, (std::vector<std::string>{"A", "rest", "B"}));
    EXPECT_EQ(counts, (std::vector<std::int64_t>{static_cast<std::int64_t>(selected.size()),
                                                 1900 - static_cast<std::int64_t>(selected.size()), 100}));

    // Rename, then merge.
    ASSERT_TRUE(workflow->renameCategory(QStringLiteral("picked"), 0, QStringLiteral("Alpha")));
    ASSERT_TRUE(wait_saved());
    counts = counts_of(*window.snapshot(), "picked", &categories);
    EXPECT_EQ(categories, (std::vector<std::string>{"Alpha", "rest", "B"}));
    ASSERT_TRUE(workflow->mergeCategories(QStringLiteral("picked"), {0, 2}, QStringLiteral("Alpha+B")));
    ASSERT_TRUE(wait_saved());
    counts = counts_of(*window.snapshot(), "picked", &categories);
    EXPECT_EQ(categories, (std::vector<std::string>{"Alpha+B", "rest"}));
    EXPECT_EQ(counts[0], static_cast<std::int64_t>(selected.size()) + 100);
    EXPECT_EQ(window.snapshot()->colors.at("picked").size(), 2u);
    EXPECT_FALSE(workflow->renameCategory(QStringLiteral("picked"), 0, QStringLiteral("rest"))) << "duplicate name";
    EXPECT_FALSE(workflow->saveMaskAsAnnotation(QStringLiteral("total_counts"), QStringLiteral("x"), selection->mask()))
        << "a numeric column is not overwritten";

    // Markers of the selection vs the rest, in the sortable table.
    bool markers_done = false, markers_ok = false;
    QString markers_message;
    QObject::connect(workflow, &SelectionWorkflow::markersFinished, [&](bool ok, const QString& message) {
        markers_done = true;
        markers_ok = ok;
        markers_message = message;
    });
    ASSERT_TRUE(workflow->computeMarkers(false));
    ASSERT_TRUE(process_events_until([&] { return markers_done; }, 60s));
    ASSERT_TRUE(markers_ok) << markers_message.toStdString();
    MarkersPanel* panel = workflow->markersPanel();
    MarkerTableModel* model = panel->model();
    ASSERT_GE(model->rowCount(), 20);
    const MarkerGroup shown = model->markers();
    QSortFilterProxyModel* proxy = panel->proxy();
    proxy->sort(MarkerTableModel::PValue, Qt::AscendingOrder);
    double previous = -1.0;
    for (int row = 0; row < proxy->rowCount(); ++row) {
        const double value = proxy->data(proxy->index(row, MarkerTableModel::PValue)).toDouble();
        ASSERT_GE(value, previous) << "row " << row;
        previous = value;
    }
    proxy->sort(MarkerTableModel::Score, Qt::DescendingOrder);
    EXPECT_EQ(proxy->data(proxy->index(0, MarkerTableModel::Gene)).toString().toStdString(), shown.genes.front());

    // Exports: the marker table as CSV, the selected barcodes as text.
    const auto folder = fathom::test::temp_dir("ui-selection-export");
    bool exported = false, export_ok = false;
    QObject::connect(workflow, &SelectionWorkflow::exportFinished, [&](bool ok, const QString&, const QString&) {
        exported = true;
        export_ok = ok;
    });
    const auto csv = folder / "markers.csv";
    ASSERT_TRUE(workflow->exportMarkersCsv(QString::fromStdString(csv.string())));
    ASSERT_TRUE(process_events_until([&] { return exported; }, 30s));
    ASSERT_TRUE(export_ok);
    const auto lines = read_lines(csv);
    ASSERT_EQ(lines.size(), shown.genes.size() + 1);
    EXPECT_EQ(lines[0], "gene,score,logfc,pval,pval_adj,pct_in,pct_out");
    EXPECT_EQ(lines[1].substr(0, shown.genes[0].size() + 1), shown.genes[0] + ",");
    exported = false;
    const auto barcodes = folder / "selected.txt";
    ASSERT_TRUE(workflow->exportSelectedBarcodes(QString::fromStdString(barcodes.string())));
    ASSERT_TRUE(process_events_until([&] { return exported; }, 30s));
    ASSERT_TRUE(export_ok);
    std::vector<std::string> expected_barcodes;
    for (const auto cell : selected) expected_barcodes.push_back(window.snapshot()->obs->index()[cell]);
    EXPECT_EQ(read_lines(barcodes), expected_barcodes);

    // Edit > Undo (Ctrl+Z) and Redo (Ctrl+Shift+Z) walk the selection back and forth.
    QAction* undo_action = nullptr;
    QAction* redo_action = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->shortcut() == QKeySequence(QKeySequence::Undo)) undo_action = action;
        if (action->shortcut() == QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)) redo_action = action;
    }
    ASSERT_NE(undo_action, nullptr);
    ASSERT_NE(redo_action, nullptr);
    // Redo answers Ctrl+Y too, and no action shares a shortcut with another (Qt fires
    // neither of two actions bound to one key: "Ambiguous shortcut overload").
    EXPECT_TRUE(redo_action->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::Key_Y)));
    std::map<QString, int> bound;
    for (QAction* action : window.findChildren<QAction*>())
        for (const QKeySequence& key : action->shortcuts())
            if (!key.isEmpty()) ++bound[key.toString()];
    for (const auto& [key, count] : bound) EXPECT_EQ(count, 1) << key.toStdString() << " is bound " << count << " times";
    selection->invert();
    EXPECT_EQ(selection->count(), 2000 - static_cast<std::int64_t>(selected.size()));
    ASSERT_TRUE(undo_action->isEnabled());
    undo_action->trigger();
    EXPECT_EQ(*selection->selection(), selected);
    undo_action->trigger();
    EXPECT_TRUE(selection->selection()->empty());
    EXPECT_FALSE(undo_action->isEnabled());
    redo_action->trigger();
    EXPECT_EQ(*selection->selection(), selected);
    EXPECT_EQ(*plot->selection(), selected);
}

}  // namespace
}  // namespace fathom::ui
