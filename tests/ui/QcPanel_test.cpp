// The QC view against brute-force counts from the matrix: each metric of every cell
// (total counts, expressed genes, percent of counts in MT- genes), the cells each
// threshold removes, and a pipeline run whose cells are exactly the ones kept.
#include "ui/QcPanel.hpp"

#include <gtest/gtest.h>

#include <QTest>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "ui/FilterHistogram.hpp"
#include "ui/MainWindow.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

std::filesystem::path raw_counts_dataset() {
    static const std::filesystem::path path = [] {
        const auto file = test::temp_dir("ui-qc-synth") / "synth2k.h5ad";
        const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 2000 --genes 1500 --seed 5 --out '" +
                                    file.string() + "' --quiet > /dev/null 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return std::filesystem::path();
        return file;
    }();
    return path;
}

/// The metrics computed here from the file's rows.
struct BruteForceQc {
    std::vector<double> totals, mito_percent;
    std::vector<std::int64_t> genes;
    explicit BruteForceQc(const std::string& path) {
        io::OpenedDataset opened = io::open_dataset(path);
        const CsrShard rows = opened.source->read_rows(0, opened.meta.shape.num_cells);
        const auto& names = opened.meta.var.index();
        for (std::int64_t cell = 0; cell < opened.meta.shape.num_cells; ++cell) {
            double total = 0, mito = 0;
            std::int64_t expressed = 0;
            for (auto entry = rows.row_offsets[cell]; entry < rows.row_offsets[cell + 1]; ++entry) {
                total += rows.values[entry];
                expressed += rows.values[entry] != 0.0f;
                if (names[static_cast<std::size_t>(rows.gene_indices[entry])].rfind("MT-", 0) == 0) mito += rows.values[entry];
            }
            totals.push_back(total);
            genes.push_back(expressed);
            mito_percent.push_back(100.0 * mito / total);
        }
    }
    std::int64_t count(const std::function<bool(std::size_t)>& removed) const {
        std::int64_t removed_cells = 0;
        for (std::size_t cell = 0; cell < totals.size(); ++cell) removed_cells += removed(cell);
        return removed_cells;
    }
};

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

TEST(QcPanel, ThresholdsRemoveTheCellsABruteForceCountFindsAndTheRunKeepsTheRest) {
    const auto path = raw_counts_dataset();
    if (path.empty()) GTEST_SKIP() << "fathom-cli synth could not make a dataset";
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    window.showAnalysisTab(QStringLiteral("QC"));
    QcPanel* qc = window.qcPanel();
    const BruteForceQc brute(path.string());
    ASSERT_EQ(qc->numCells(), static_cast<std::int64_t>(brute.totals.size()));
    const auto metrics = window.snapshot()->qc;
    ASSERT_NE(metrics, nullptr);
    for (std::size_t cell = 0; cell < brute.totals.size(); ++cell) {
        ASSERT_DOUBLE_EQ(metrics->total_counts[cell], brute.totals[cell]) << cell;
        ASSERT_EQ(metrics->n_genes_by_counts[cell], brute.genes[cell]) << cell;
        ASSERT_NEAR(metrics->pct_counts_mt[cell], brute.mito_percent[cell], 1e-9) << cell;
    }
    EXPECT_EQ(qc->counts().kept, qc->numCells()) << "no thresholds: every cell kept";

    // Thresholds at the metrics' quartiles-ish: each removes some cells.
    std::vector<double> sorted_totals = brute.totals, sorted_mito = brute.mito_percent;
    std::vector<std::int64_t> sorted_genes = brute.genes;
    std::sort(sorted_totals.begin(), sorted_totals.end());
    std::sort(sorted_genes.begin(), sorted_genes.end());
    std::sort(sorted_mito.begin(), sorted_mito.end());
    const std::size_t n = sorted_totals.size();
    const double min_counts = std::round(sorted_totals[n / 10]), max_counts = std::round(sorted_totals[n * 9 / 10]);
    const auto min_genes = sorted_genes[n / 20], max_genes = sorted_genes[n * 19 / 20];
    const double max_mito = sorted_mito[n * 8 / 10];
    qc->setRange(QcPanel::TotalCounts, min_counts, max_counts);
    qc->setRange(QcPanel::GenesPerCell, static_cast<double>(min_genes), static_cast<double>(max_genes));
    qc->setRange(QcPanel::PercentMito, 0.0, max_mito);

    const PipelineSettings settings = window.pipelinePanel()->settings();
    EXPECT_DOUBLE_EQ(settings.min_counts_per_cell, min_counts);
    EXPECT_DOUBLE_EQ(settings.max_counts_per_cell, max_counts);
    EXPECT_EQ(settings.min_genes_per_cell, min_genes);
    EXPECT_EQ(settings.max_genes_per_cell, max_genes);
    EXPECT_NEAR(settings.max_pct_counts_mt, max_mito, 0.05) << "the form holds one decimal";
    const double mito_limit = settings.max_pct_counts_mt;

    const QcThresholdCounts counts = qc->counts();
    EXPECT_EQ(counts.below_min_counts, brute.count([&](std::size_t c) { return brute.totals[c] < min_counts; }));
    EXPECT_EQ(counts.above_max_counts, brute.count([&](std::size_t c) { return brute.totals[c] > max_counts; }));
    EXPECT_EQ(counts.below_min_genes, brute.count([&](std::size_t c) { return brute.genes[c] < min_genes; }));
    EXPECT_EQ(counts.above_max_genes, brute.count([&](std::size_t c) { return brute.genes[c] > max_genes; }));
    EXPECT_EQ(counts.above_max_pct_mt, brute.count([&](std::size_t c) { return brute.mito_percent[c] > mito_limit; }));
    const auto removed = [&](std::size_t c) {
        return brute.totals[c] < min_counts || brute.totals[c] > max_counts || brute.genes[c] < min_genes ||
               brute.genes[c] > max_genes || brute.mito_percent[c] > mito_limit;
    };
    const std::int64_t kept = qc->numCells() - brute.count(removed);
    EXPECT_EQ(counts.kept, kept);
    for (std::int64_t tally : {counts.below_min_counts, counts.above_max_counts, counts.below_min_genes,
                               counts.above_max_genes, counts.above_max_pct_mt})
        EXPECT_GT(tally, 0);
    EXPECT_TRUE(qc->summaryText().contains(QLocale(QLocale::English).toString(static_cast<qlonglong>(kept))))
        << qc->summaryText().toStdString();
    // The histograms draw the kept cells over all of them.
    const auto& bins = qc->histogram(QcPanel::TotalCounts)->counts();
    std::int64_t drawn_kept = 0;
    for (auto count : bins.filtered) drawn_kept += count;
    EXPECT_EQ(drawn_kept, kept);

    // The run filters exactly those cells.
    PipelineSettings run = settings;
    run.run_umap = false;
    run.run_leiden = false;
    run.run_markers = false;
    run.pca.num_components = 10;
    window.pipelinePanel()->setSettings(run);
    bool finished = false, ok = false;
    QString error;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString& text, int) {
        finished = true;
        ok = success;
        error = text;
    });
    ASSERT_TRUE(window.runPipeline());
    ASSERT_TRUE(process_events_until([&] { return finished; }, 120s));
    ASSERT_TRUE(ok) << error.toStdString();
    const auto& cells = window.snapshot()->cells;
    ASSERT_EQ(static_cast<std::int64_t>(cells.size()), kept);
    for (const std::int64_t cell : cells) EXPECT_FALSE(removed(static_cast<std::size_t>(cell))) << cell;
    EXPECT_EQ(qc->numCells(), static_cast<std::int64_t>(brute.totals.size())) << "the view still shows every cell";

    qc->clearThresholds();
    EXPECT_EQ(qc->counts().kept, qc->numCells());
}

}  // namespace
}  // namespace fathom::ui
