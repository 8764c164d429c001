// The marker-gene filter panel: rule rows <-> text form, the one commit path (the undo
// hook), histograms and their brush, hide vs dim on the plot, and, on scanpy's
// pbmc68k_reduced through the whole window and the real engine, the plot mask and the
// cluster breakdown against a brute-force read of the matrix, brushing, and gene sets.
#include "ui/FilterPanel.hpp"

#include <gtest/gtest.h>

#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/data/CsrShard.hpp"
#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "ui/FilterHistogram.hpp"
#include "ui/MainWindow.hpp"
#include "ui/PlotColoring.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::count_pixels;
using fathom::test::process_events_until;

FilterRule rule(std::string gene, RuleOp op, float value, float upper = 0.0f, bool negated = false,
                RuleJoin join = RuleJoin::And) {
    return {std::move(gene), op, value, upper, negated, join};
}

// ---- rows <-> text, without an engine ----------------------------------------------------

TEST(FilterPanel, RulesAndTextStayInSyncThroughOneCommitPath) {
    PlotView plot;
    FilterPanel panel([] { return static_cast<Engine*>(nullptr); }, &plot);
    QSignalSpy changes(&panel, &FilterPanel::filterChanged);

    // Text -> rows: parsed with the engine's parser, stored in the rows' spelling.
    ASSERT_TRUE(panel.setExpressionText(QStringLiteral("CD3E>1 AND !MS4A1 > 0 || NKG7 between 0.5 2")));
    const std::vector<FilterRule> expected = {rule("CD3E", RuleOp::Greater, 1.0f),
                                              rule("MS4A1", RuleOp::Greater, 0.0f, 0.0f, true),
                                              rule("NKG7", RuleOp::Between, 0.5f, 2.0f, false, RuleJoin::Or)};
    EXPECT_EQ(panel.rules(), expected);
    EXPECT_EQ(panel.expressionText(), QStringLiteral("CD3E > 1 and not MS4A1 > 0 or NKG7 between 0.5 2"));
    ASSERT_EQ(changes.size(), 1);
    const FilterState first = panel.state();

    // Rows -> text: editing a row's threshold rewrites the text.
    const auto spins = panel.findChildren<QDoubleSpinBox*>();
    ASSERT_GE(spins.size(), 2);
    spins[0]->setValue(2.5);  // row 0's threshold
    EXPECT_EQ(panel.expressionText(), QStringLiteral("CD3E > 2.5 and not MS4A1 > 0 or NKG7 between 0.5 2"));
    EXPECT_EQ(panel.rules()[0].value, 2.5f);
    ASSERT_EQ(changes.size(), 2);
    EXPECT_EQ(changes.back()[0].value<FilterState>(), first);
    EXPECT_EQ(changes.back()[1].value<FilterState>(), panel.state());

    // Adding a rule from the search appends "gene > 0", and-joined.
    ASSERT_TRUE(panel.addRule(QStringLiteral("GNLY")));
    EXPECT_EQ(panel.rules().back(), rule("GNLY", RuleOp::Greater, 0.0f));
    EXPECT_EQ(panel.expressionText(), QStringLiteral("CD3E > 2.5 and not MS4A1 > 0 or NKG7 between 0.5 2 and GNLY > 0"));
    ASSERT_EQ(changes.size(), 3);

    // A mistake in the text is shown with a caret under it; nothing changes.
    const FilterState before_mistake = panel.state();
    EXPECT_FALSE(panel.setExpressionText(QStringLiteral("CD3E 1 and not MS4A1 > 0")));
    EXPECT_NE(panel.errorText().indexOf(QStringLiteral("column 6")), -1) << panel.errorText().toStdString();
    EXPECT_NE(panel.errorText().indexOf(QStringLiteral("\n  CD3E 1 and not MS4A1 > 0\n       ^")), -1)
        << panel.errorText().toStdString();
    EXPECT_EQ(panel.state(), before_mistake);
    EXPECT_EQ(changes.size(), 3);

    // Undo / redo: setState applies without a new change.
    panel.setState(first);
    EXPECT_EQ(panel.rules(), expected);
    EXPECT_EQ(panel.expressionText(), QStringLiteral("CD3E > 1 and not MS4A1 > 0 or NKG7 between 0.5 2"));
    EXPECT_TRUE(panel.errorText().isEmpty());
    EXPECT_EQ(changes.size(), 3);

    // Parentheses that rows cannot show: valid text, no rows, no rule added from the search.
    ASSERT_TRUE(panel.setExpressionText(QStringLiteral("not (CD3E > 1 or MS4A1 > 0)")));
    EXPECT_FALSE(panel.rulesRepresentable());
    EXPECT_TRUE(panel.rules().empty());
    EXPECT_FALSE(panel.addRule(QStringLiteral("GNLY")));
    EXPECT_EQ(panel.expressionText(), QStringLiteral("not (CD3E > 1 or MS4A1 > 0)"));
}

TEST(FilterHistogram, CountsAllAndFilteredCellsPerBin) {
    const std::vector<float> values = {0.0f, 0.0f, 0.5f, 1.0f, 1.0f, 2.0f, NAN, 4.0f};
    const std::vector<std::uint8_t> mask = {1, 0, 1, 1, 0, 0, 1, 1};
    const HistogramCounts counts = histogram_counts(values, mask, 0.0f, 4.0f, 4);
    EXPECT_EQ(counts.all, (std::vector<std::int64_t>{3, 2, 1, 1}));       // [0,1) [1,2) [2,3) [3,4]
    EXPECT_EQ(counts.filtered, (std::vector<std::int64_t>{2, 1, 0, 1}));  // NaN counted nowhere
    const HistogramCounts unmasked = histogram_counts(values, {}, 0.0f, 4.0f, 4);
    EXPECT_EQ(unmasked.filtered, (std::vector<std::int64_t>{0, 0, 0, 0}));
}

TEST(FilterHistogram, DraggingSelectsTheValuesUnderTheBrush) {
    FilterHistogram histogram;
    histogram.resize(260, 64);
    auto values = std::make_shared<std::vector<float>>();
    for (int cell = 0; cell <= 100; ++cell) values->push_back(static_cast<float>(cell) * 0.05f);  // 0 .. 5
    histogram.setValues(values);
    EXPECT_EQ(histogram.axisRange().first, 0.0f);
    EXPECT_NEAR(histogram.axisRange().second, 5.0f, 1e-5f);
    QSignalSpy selected(&histogram, &FilterHistogram::rangeSelected);
    const int from = static_cast<int>(std::lround(histogram.xOfValue(1.0f)));
    const int to = static_cast<int>(std::lround(histogram.xOfValue(3.0f)));
    // Right to left works too (the range is taken from the press and release points).
    QTest::mousePress(&histogram, Qt::LeftButton, {}, QPoint(to, 30));
    QTest::mouseRelease(&histogram, Qt::LeftButton, {}, QPoint(from, 30));
    ASSERT_EQ(selected.size(), 1);
    EXPECT_FLOAT_EQ(selected[0][0].toFloat(), histogram.valueAtX(from));
    EXPECT_FLOAT_EQ(selected[0][1].toFloat(), histogram.valueAtX(to));
    EXPECT_NEAR(selected[0][0].toFloat(), 1.0f, 0.05f);
    EXPECT_NEAR(selected[0][1].toFloat(), 3.0f, 0.05f);
    // A click is not a brush.
    QTest::mouseClick(&histogram, Qt::LeftButton, {}, QPoint(from, 30));
    EXPECT_EQ(selected.size(), 1);
}

// ---- hide vs dim on the plot -----------------------------------------------------------------

TEST(PlotMaskStyle, DimKeepsOtherCellsDrawnFadedWhereHideRemovesThem) {
    FATHOM_REQUIRE_GL();
    PlotView view;
    view.resize(300, 300);
    view.setOverlayVisible(false);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    // Two blobs: red cells (outside the filter) left, green cells (inside) right.
    std::mt19937 generator(3);
    std::normal_distribution<float> noise(0.0f, 0.8f);
    std::vector<float> xy;
    std::vector<std::int32_t> codes;
    std::vector<std::uint8_t> mask;
    for (int cell = 0; cell < 2000; ++cell) {
        const int blob = cell % 2;
        xy.push_back((blob ? 8.0f : -8.0f) + noise(generator));
        xy.push_back(noise(generator));
        codes.push_back(blob);
        mask.push_back(static_cast<std::uint8_t>(blob));
    }
    const Rgba8 red{230, 20, 20, 255}, green{20, 200, 40, 255};
    view.setPositions(xy);
    view.setCategorical(QStringLiteral("side"), codes, {"left", "right"}, {red, green});
    for (int frame = 0; frame < 64 && !view.uploadComplete(); ++frame) view.grabFramebuffer();
    view.setCellMask(mask);

    QImage image = view.grabFramebuffer();
    EXPECT_EQ(view.maskStyle(), PlotView::MaskStyle::Hide);
    EXPECT_EQ(view.visiblePoints(), 1000);
    EXPECT_EQ(count_pixels(image, red), 0);
    EXPECT_GT(count_pixels(image, green), 50);

    view.setMaskStyle(PlotView::MaskStyle::Dim);
    PointAttribute faded[1] = {{red, 0.0f}};
    const std::uint8_t outside[1] = {0};
    ASSERT_EQ(dim_masked_attributes(outside, view.backgroundColor(), 0.8f, faded), 1);
    ASSERT_NE(faded[0].color, red);
    image = view.grabFramebuffer();
    EXPECT_EQ(view.visiblePoints(), 2000);
    EXPECT_EQ(count_pixels(image, red), 0);
    EXPECT_GT(count_pixels(image, faded[0].color), 50) << "the cells outside the filter are not drawn dimmed";
    EXPECT_GT(count_pixels(image, green), 50);

    view.setMaskStyle(PlotView::MaskStyle::Hide);
    image = view.grabFramebuffer();
    EXPECT_EQ(count_pixels(image, faded[0].color), 0);
}

TEST(PlotMaskStyle, DimmingFadesOnlyShownCellsOutsideTheMask) {
    std::vector<PointAttribute> attributes = {{{200, 100, 0, 255}, 0.0f}, {{200, 100, 0, 255}, 0.0f},
                                              {{200, 100, 0, 0}, 0.0f}};
    const std::vector<std::uint8_t> mask = {1, 0, 0};
    EXPECT_EQ(dim_masked_attributes(mask, Rgba8{0, 0, 0, 255}, 0.75f, attributes), 1);
    EXPECT_EQ(attributes[0].color, (Rgba8{200, 100, 0, 255}));  // inside: unchanged
    EXPECT_EQ(attributes[1].color, (Rgba8{50, 25, 0, 255}));    // a quarter of the way from black
    EXPECT_EQ(attributes[2].color.a, 0);                         // hidden stays hidden
    EXPECT_EQ(dim_masked_attributes({}, Rgba8{0, 0, 0, 255}, 0.75f, attributes), 0);
}

// ---- the whole window on a real dataset ------------------------------------------------------

bool wait_open(MainWindow& window, const QString& path) {
    bool done = false, ok = false;
    auto connection = QObject::connect(&window, &MainWindow::datasetOpened, [&](bool success, const QString&, int) {
        done = true;
        ok = success;
    });
    window.openFile(path);
    process_events_until([&] { return done; }, 60s);
    QObject::disconnect(connection);
    return done && ok;
}

/// Waits for the panel's next filter result (true) or failure (false).
bool wait_applied(FilterPanel& panel, const std::function<void()>& action) {
    bool done = false, ok = false;
    auto applied = QObject::connect(&panel, &FilterPanel::filterApplied, [&](qint64, qint64) { done = ok = true; });
    auto failed = QObject::connect(&panel, &FilterPanel::filterFailed, [&](const QString&) { done = true; });
    action();
    process_events_until([&] { return done; }, 30s);
    QObject::disconnect(applied);
    QObject::disconnect(failed);
    return ok;
}

/// X of pbmc68k_reduced as stored (the "raw values" layer), dense per gene.
struct Matrix {
    io::OpenedDataset opened;
    CsrShard all;
    explicit Matrix(const std::string& path)
        : opened(io::open_dataset(path)), all(opened.source->read_rows(0, opened.meta.shape.num_cells)) {}
    std::vector<float> column(const std::string& gene) const {
        const auto& names = opened.meta.var.index();
        const auto index = static_cast<std::int32_t>(std::find(names.begin(), names.end(), gene) - names.begin());
        std::vector<float> values(static_cast<std::size_t>(opened.meta.shape.num_cells), 0.0f);
        for (std::int64_t cell = 0; cell < opened.meta.shape.num_cells; ++cell)
            for (auto entry = all.row_offsets[cell]; entry < all.row_offsets[cell + 1]; ++entry)
                if (all.gene_indices[entry] == index) values[static_cast<std::size_t>(cell)] = all.values[entry];
        return values;
    }
};

TEST(FilterPanelOnPbmc68k, MaskBreakdownBrushAndGeneSetMatchTheMatrix) {
    FATHOM_REQUIRE_GL();
    const auto path = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{"cpu:2"}, false);
    window.resize(1200, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    PlotView* plot = window.plotView();
    FilterPanel* panel = window.filterPanel();
    ASSERT_EQ(plot->numPoints(), 700) << "pbmc68k_reduced shows its X_umap";
    const Matrix matrix(path.string());
    const auto cd79a = matrix.column("CD79A"), ms4a1 = matrix.column("MS4A1"), nkg7 = matrix.column("NKG7");
    const auto brute = [&](float a, float b, float low, float high) {
        std::vector<std::uint8_t> mask(cd79a.size());
        for (std::size_t cell = 0; cell < mask.size(); ++cell)
            mask[cell] = (cd79a[cell] > a && !(ms4a1[cell] > b)) || (nkg7[cell] >= low && nkg7[cell] <= high);
        return mask;
    };

    // Raw values (pbmc68k_reduced's X is scaled), then the text form.
    FilterState raw = panel->state();
    raw.layer = ValueLayer::Counts;
    panel->commit(raw);
    ASSERT_TRUE(wait_applied(*panel, [&] {
        ASSERT_TRUE(panel->setExpressionText(QStringLiteral("CD79A > 1 and not MS4A1 > 2 or NKG7 between 1.5 4")));
    })) << panel->errorText().toStdString();
    std::vector<std::uint8_t> expected = brute(1.0f, 2.0f, 1.5f, 4.0f);
    const auto matching = std::count(expected.begin(), expected.end(), 1);
    ASSERT_GT(matching, 0);
    ASSERT_LT(matching, 700);
    EXPECT_EQ(plot->cellMask(), expected);
    EXPECT_EQ(panel->matchingCells(), matching);
    EXPECT_EQ(plot->visiblePoints(), matching);

    // Dim keeps every cell drawn; hide again.
    FilterState dim = panel->state();
    dim.style = PlotView::MaskStyle::Dim;
    panel->commit(dim);
    EXPECT_EQ(plot->maskStyle(), PlotView::MaskStyle::Dim);
    EXPECT_EQ(plot->visiblePoints(), 700);
    dim.style = PlotView::MaskStyle::Hide;
    panel->commit(dim);
    EXPECT_EQ(plot->visiblePoints(), matching);

    // Breakdown by the categorical colouring (louvain), against a count per category.
    ASSERT_TRUE(wait_applied(*panel, [&] { ASSERT_TRUE(window.colorBy(QStringLiteral("louvain"))); }));
    EXPECT_EQ(panel->groupBy(), QStringLiteral("louvain"));
    const auto snapshot = window.snapshot();
    const auto& louvain = std::get<CategoricalColumn>(snapshot->obs->find("louvain")->data);
    std::vector<std::int64_t> expected_matching(louvain.categories.size(), 0), expected_totals(louvain.categories.size(), 0);
    for (std::size_t cell = 0; cell < expected.size(); ++cell) {
        const auto code = static_cast<std::size_t>(louvain.codes[cell]);
        ++expected_totals[code];
        expected_matching[code] += expected[cell];
    }
    ASSERT_EQ(panel->breakdown().size(), louvain.categories.size());
    for (std::size_t category = 0; category < louvain.categories.size(); ++category) {
        EXPECT_EQ(panel->breakdown()[category].first, louvain.categories[category]);
        EXPECT_EQ(panel->breakdown()[category].second, expected_matching[category]) << louvain.categories[category];
        EXPECT_EQ(panel->breakdownTotals()[category], expected_totals[category]) << louvain.categories[category];
    }

    // Histograms: values fetched once per gene; the filtered cells are highlighted.
    FilterHistogram* histogram = panel->histogram(0);
    ASSERT_NE(histogram, nullptr);
    ASSERT_TRUE(process_events_until([&] { return histogram->hasValues() && !panel->busy(); }, 30s));
    std::int64_t highlighted = 0, all = 0;
    for (const auto count : histogram->counts().filtered) highlighted += count;
    for (const auto count : histogram->counts().all) all += count;
    EXPECT_EQ(highlighted, matching);
    EXPECT_EQ(all, 700);

    // Brushing rule 0's histogram from 0.5 to 3 sets "CD79A between" and re-evaluates.
    const int from = static_cast<int>(std::lround(histogram->xOfValue(0.5f)));
    const int to = static_cast<int>(std::lround(histogram->xOfValue(3.0f)));
    const float low = static_cast<float>(std::round(static_cast<double>(histogram->valueAtX(from)) * 1e4) / 1e4);
    const float high = static_cast<float>(std::round(static_cast<double>(histogram->valueAtX(to)) * 1e4) / 1e4);
    QSignalSpy changes(panel, &FilterPanel::filterChanged);
    ASSERT_TRUE(wait_applied(*panel, [&] {
        QTest::mousePress(histogram, Qt::LeftButton, {}, QPoint(from, 20));
        QTest::mouseRelease(histogram, Qt::LeftButton, {}, QPoint(to, 20));
    }));
    EXPECT_EQ(changes.size(), 1);
    ASSERT_EQ(panel->rules().size(), 3u);
    EXPECT_EQ(panel->rules()[0], rule("CD79A", RuleOp::Between, low, high));
    std::vector<std::uint8_t> brushed(cd79a.size());
    for (std::size_t cell = 0; cell < brushed.size(); ++cell)
        brushed[cell] = (cd79a[cell] >= low && cd79a[cell] <= high && !(ms4a1[cell] > 2.0f)) ||
                        (nkg7[cell] >= 1.5f && nkg7[cell] <= 4.0f);
    EXPECT_NE(brushed, expected) << "the brush did not change the filter";
    EXPECT_EQ(plot->cellMask(), brushed);

    // Undo through the recorded states restores the first mask.
    ASSERT_TRUE(wait_applied(*panel, [&] { panel->setState(changes[0][0].value<FilterState>()); }));
    EXPECT_EQ(plot->cellMask(), expected);

    // Clearing shows every cell.
    ASSERT_TRUE(wait_applied(*panel, [&] {
        FilterState cleared = panel->state();
        cleared.expression.clear();
        panel->commit(cleared);
    }));
    EXPECT_TRUE(plot->cellMask().empty());
    EXPECT_EQ(plot->visiblePoints(), 700);

    // Gene sets: a list file colours the plot by the set's mean; a missing file is named.
    const auto folder = test::temp_dir("filter-panel");
    std::ofstream(folder / "b_cells.txt") << "# B cell markers\nCD79A\nMS4A1\nNOT_A_GENE\n";
    ASSERT_TRUE(panel->loadGeneSet(QString::fromStdString((folder / "b_cells.txt").string())));
    EXPECT_EQ(panel->geneSet(), (QStringList{QStringLiteral("CD79A"), QStringLiteral("MS4A1"), QStringLiteral("NOT_A_GENE")}));
    EXPECT_NE(panel->geneSetStatus().indexOf(QStringLiteral("1 not in this dataset")), -1)
        << panel->geneSetStatus().toStdString();
    QSignalSpy colored(panel, &FilterPanel::geneSetColored);
    ASSERT_TRUE(panel->colorByGeneSet(false));
    ASSERT_TRUE(process_events_until([&] { return !colored.isEmpty(); }, 30s));
    EXPECT_TRUE(colored[0][0].toString().startsWith(QStringLiteral("mean of 2 genes"))) << colored[0][0].toString().toStdString();
    EXPECT_EQ(plot->colorKind(), PlotView::ColorKind::Continuous);
    EXPECT_FALSE(panel->loadGeneSet(QString::fromStdString((folder / "missing.txt").string())));
    EXPECT_NE(panel->geneSetStatus().indexOf(QStringLiteral("missing.txt")), -1);
}

}  // namespace
}  // namespace fathom::ui
