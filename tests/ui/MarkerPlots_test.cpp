// The marker plots (dot, violin, matrix) of pbmc68k_reduced's louvain markers: the
// plotted means, fractions and distributions against values computed here from raw/X,
// the dot sizes and colours they map to, and the PNG / SVG / PDF exports.
#include "ui/MarkerPlots.hpp"

#include <gtest/gtest.h>

#include <QFile>
#include <QImage>
#include <QTest>
#include <cmath>
#include <filesystem>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "ui/MainWindow.hpp"
#include "ui/SelectionWorkflow.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

TEST(GroupedGeneStats, MeansFractionsAndValuesPerGroup) {
    const std::vector<std::vector<float>> values = {{0, 1, 2, 0, 4, NAN}, {3, 0, 0, 0, 1, 1}};
    const std::vector<std::int32_t> codes = {0, 0, 1, 1, 1, -1};
    const GroupedGeneStats stats = grouped_gene_stats(values, codes, {"a", "b"}, {"g1", "g2"});
    EXPECT_DOUBLE_EQ(stats.mean_at(0, 0), 0.5);
    EXPECT_DOUBLE_EQ(stats.mean_at(1, 0), 2.0);
    EXPECT_DOUBLE_EQ(stats.fraction_at(0, 0), 0.5);
    EXPECT_DOUBLE_EQ(stats.fraction_at(1, 0), 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(stats.mean_at(0, 1), 1.5);
    EXPECT_DOUBLE_EQ(stats.fraction_at(1, 1), 1.0 / 3.0);
    EXPECT_EQ(stats.values[0][1], (std::vector<float>{0, 2, 4}));
    EXPECT_THROW(grouped_gene_stats({{1, 2}}, codes, {"a"}, {"g"}), std::invalid_argument);
}

TEST(MarkerPlots, LouvainMarkersOfPbmc68kReducedPlotTheMatrixsValues) {
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
    ASSERT_TRUE(process_events_until([&] { return opened; }, 60s));
    MarkerPlotsPanel* panel = window.markerPlots();
    bool ready = false;
    QObject::connect(panel, &MarkerPlotsPanel::plotsReady, [&] { ready = true; });
    ASSERT_TRUE(window.selectionWorkflow()->computeColumnMarkers(QStringLiteral("louvain")));
    ASSERT_TRUE(process_events_until([&] { return ready; }, 120s));

    const GroupedGeneStats& stats = panel->view()->stats();
    const auto& louvain = std::get<CategoricalColumn>(window.snapshot()->obs->find("louvain")->data);
    ASSERT_EQ(stats.groups, louvain.categories);
    ASSERT_GE(stats.genes.size(), louvain.categories.size());  // 3 per group, each gene once
    // Independently: raw/X read here, grouped by louvain.
    io::ReadOptions options;
    options.matrix = "raw";
    io::OpenedDataset raw = io::open_dataset(path.string(), options);
    const CsrShard rows = raw.source->read_rows(0, raw.meta.shape.num_cells);
    const auto& names = raw.meta.var.index();
    const std::size_t num_groups = louvain.categories.size();
    for (std::size_t gene = 0; gene < stats.genes.size(); ++gene) {
        const auto index = static_cast<std::int32_t>(std::find(names.begin(), names.end(), stats.genes[gene]) - names.begin());
        ASSERT_LT(static_cast<std::size_t>(index), names.size()) << stats.genes[gene];
        std::vector<double> sum(num_groups, 0), expressing(num_groups, 0), size(num_groups, 0);
        std::vector<std::vector<float>> values(num_groups);
        for (std::int64_t cell = 0; cell < raw.meta.shape.num_cells; ++cell) {
            float value = 0.0f;
            for (auto entry = rows.row_offsets[cell]; entry < rows.row_offsets[cell + 1]; ++entry)
                if (rows.gene_indices[entry] == index) value = rows.values[entry];
            const auto group = static_cast<std::size_t>(louvain.codes[static_cast<std::size_t>(cell)]);
            sum[group] += value;
            expressing[group] += value > 0.0f;
            size[group] += 1;
            values[group].push_back(value);
        }
        for (std::size_t group = 0; group < num_groups; ++group) {
            EXPECT_NEAR(stats.mean_at(group, gene), sum[group] / size[group], 1e-6) << stats.genes[gene] << " " << group;
            EXPECT_DOUBLE_EQ(stats.fraction_at(group, gene), expressing[group] / size[group]);
            std::sort(values[group].begin(), values[group].end());
            EXPECT_EQ(stats.values[gene][group], values[group]) << "the violin's values";
        }
    }
    // Dot size ~ fraction (area), colour ~ mean.
    MarkerPlotView* view = panel->view();
    const QSizeF size(900, 420);
    std::size_t most = 0, least = 0;
    for (std::size_t group = 0; group < num_groups; ++group) {
        if (stats.fraction_at(group, 0) > stats.fraction_at(most, 0)) most = group;
        if (stats.fraction_at(group, 0) < stats.fraction_at(least, 0)) least = group;
    }
    ASSERT_GT(stats.fraction_at(most, 0), stats.fraction_at(least, 0));
    const double ratio = view->dotRadius(most, 0, size) / std::max(1e-9, view->dotRadius(least, 0, size));
    if (stats.fraction_at(least, 0) > 0) {
        EXPECT_NEAR(ratio * ratio, stats.fraction_at(most, 0) / stats.fraction_at(least, 0), 1e-6);
    } else {
        EXPECT_EQ(view->dotRadius(least, 0, size), 0.0);
    }
    const auto [low, high] = view->meanRange();
    for (std::size_t group = 0; group < num_groups; ++group)
        for (std::size_t gene = 0; gene < stats.genes.size(); ++gene) {
            EXPECT_GE(stats.mean_at(group, gene), low);
            EXPECT_LE(stats.mean_at(group, gene), high);
        }

    // Exports like the embedding figure.
    const auto folder = test::temp_dir("ui-marker-plots");
    for (const auto kind : {MarkerPlotView::Kind::Dot, MarkerPlotView::Kind::Violin, MarkerPlotView::Kind::Matrix}) {
        view->setKind(kind);
        const auto stem = folder / ("plot" + std::to_string(static_cast<int>(kind)));
        QString error;
        ASSERT_TRUE(view->exportFigure(QString::fromStdString(stem.string() + ".png"), QSize(900, 420), &error))
            << error.toStdString();
        const QImage image(QString::fromStdString(stem.string() + ".png"));
        EXPECT_EQ(image.size(), QSize(900, 420));
        EXPECT_GT(fathom::test::count_distinct_colors(image), 20);
        ASSERT_TRUE(view->exportFigure(QString::fromStdString(stem.string() + ".svg"), QSize(900, 420), &error));
        QFile svg(QString::fromStdString(stem.string() + ".svg"));
        ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
        const QByteArray text = svg.readAll();
        EXPECT_TRUE(text.contains(QByteArray::fromStdString(stats.genes.front()))) << "gene labels are text";
        ASSERT_TRUE(view->exportFigure(QString::fromStdString(stem.string() + ".pdf"), QSize(900, 420), &error));
        QFile pdf(QString::fromStdString(stem.string() + ".pdf"));
        ASSERT_TRUE(pdf.open(QIODevice::ReadOnly));
        EXPECT_TRUE(pdf.read(4) == "%PDF");
    }
    QString error;
    EXPECT_FALSE(view->exportFigure(QString::fromStdString((folder / "plot.gif").string()), QSize(10, 10), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("unknown figure format"))) << error.toStdString();
}

}  // namespace
}  // namespace fathom::ui
