// The explorer on a file someone already analysed (pbmc68k_reduced: scaled X, raw/X,
// louvain, X_umap, X_pca) and on raw counts: gene colours in the values the file holds,
// a clean state at every File > Open, the file's own embeddings kept by a run, markers of
// a file's clusters without running the pipeline, and a cancelled run that leaves the last
// complete state on screen. Expected values come from the matrices read directly.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "ui/ExportDialogs.hpp"
#include "ui/FilterPanel.hpp"
#include "ui/MainWindow.hpp"
#include "ui/MarkersPanel.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionController.hpp"
#include "ui/SelectionWorkflow.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

std::filesystem::path pbmc68k_reduced() {
    return test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
}

// 3000 cells x 2000 genes of raw counts from fathom-cli synth; made once per binary.
std::filesystem::path raw_counts_dataset() {
    static const std::filesystem::path path = [] {
        const auto file = test::temp_dir("ui-analysed-synth") / "synth3k.h5ad";
        const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 3000 --genes 2000 --seed 11 --out '" +
                                    file.string() + "' --quiet > /dev/null 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return std::filesystem::path();
        return file;
    }();
    return path;
}

#define FATHOM_REQUIRE_RAW_COUNTS(variable)                       \
    const std::filesystem::path variable = raw_counts_dataset(); \
    if (variable.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset"

/// One matrix of a file, dense by gene, read with the io layer ("X" or "raw").
struct FileMatrix {
    io::OpenedDataset opened;
    CsrShard rows;
    FileMatrix(const std::string& path, const std::string& matrix) : opened([&] {
        io::ReadOptions options;
        options.matrix = matrix;
        return io::open_dataset(path, options);
    }()), rows(opened.source->read_rows(0, opened.meta.shape.num_cells)) {}
    std::int64_t num_cells() const { return opened.meta.shape.num_cells; }
    std::int32_t gene_index(const std::string& gene) const {
        const auto& names = opened.meta.var.index();
        return static_cast<std::int32_t>(std::find(names.begin(), names.end(), gene) - names.begin());
    }
    std::vector<float> column(std::int32_t gene) const {
        std::vector<float> values(static_cast<std::size_t>(num_cells()), 0.0f);
        for (std::int64_t cell = 0; cell < num_cells(); ++cell)
            for (auto entry = rows.row_offsets[cell]; entry < rows.row_offsets[cell + 1]; ++entry)
                if (rows.gene_indices[entry] == gene) values[static_cast<std::size_t>(cell)] = rows.values[entry];
        return values;
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

bool wait_colored(MainWindow& window, const QString& key, QString* failure = nullptr) {
    bool done = false, ok = false;
    auto applied = QObject::connect(&window, &MainWindow::coloringApplied, [&](const QString& applied_key) {
        if (applied_key != key) return;
        done = ok = true;
    });
    auto failed = QObject::connect(&window, &MainWindow::coloringFailed, [&](const QString& failed_key, const QString& text) {
        if (failed_key != key) return;
        done = true;
        if (failure) *failure = text;
    });
    const bool started = window.colorBy(key);
    process_events_until([&] { return done; }, 60s);
    QObject::disconnect(applied);
    QObject::disconnect(failed);
    return started && ok;
}

/// Checks that the plot shows `expected` for every cell: a finite value each (no
/// missing colour), the colour range spans exactly the stored values, and each cell's
/// position in that range is its own value's.
void expect_plot_shows(const PlotView& plot, const std::vector<float>& expected) {
    ASSERT_EQ(static_cast<std::size_t>(plot.numPoints()), expected.size());
    const auto [low, high] = std::minmax_element(expected.begin(), expected.end());
    ASSERT_LT(*low, *high);
    EXPECT_FLOAT_EQ(plot.dataRange().first, *low);
    EXPECT_FLOAT_EQ(plot.dataRange().second, *high);
    const auto& attributes = plot.pointAttributes();
    ASSERT_EQ(attributes.size(), expected.size());
    std::int64_t missing = 0;
    for (std::size_t cell = 0; cell < expected.size(); ++cell) {
        missing += attributes[cell].color == k_missing_color;
        const float t = (expected[cell] - *low) / (*high - *low);
        EXPECT_NEAR(attributes[cell].value, t, 1e-5) << "cell " << cell;
    }
    EXPECT_EQ(missing, 0) << "every cell has a value";
}

TEST(AnalysedData, GeneColourOnScaledXUsesRawThenTheStoredValues) {
    FATHOM_REQUIRE_GL();
    const auto path = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    ASSERT_TRUE(window.snapshot()->dataset->has_raw);
    EXPECT_FALSE(window.snapshot()->dataset->integer_counts) << "pbmc68k_reduced's X is scaled";
    // As Scanpy's plots with use_raw: raw/X, and the filter dock compares the same values.
    EXPECT_EQ(window.valueLayer(), ValueLayer::Raw);
    EXPECT_EQ(window.filterPanel()->state().layer, ValueLayer::Raw);
    PlotView* plot = window.plotView();
    ASSERT_EQ(plot->numPoints(), 700);

    const FileMatrix raw(path.string(), "raw"), x(path.string(), "X");
    QString failure;
    ASSERT_TRUE(wait_colored(window, QStringLiteral("gene:CD79A"), &failure)) << failure.toStdString();
    EXPECT_TRUE(plot->colorName().contains(QStringLiteral("raw/X"))) << plot->colorName().toStdString();
    expect_plot_shows(*plot, raw.column(raw.gene_index("CD79A")));

    // The one switch: X as stored (scaled, negative values too) re-colours the plot and
    // moves the filter dock with it.
    ASSERT_TRUE(window.setValueLayer(ValueLayer::Counts));
    ASSERT_TRUE(process_events_until([&] { return plot->colorName().contains(QStringLiteral("(X)")); }, 30s))
        << plot->colorName().toStdString();
    EXPECT_EQ(window.filterPanel()->state().layer, ValueLayer::Counts);
    const std::vector<float> stored = x.column(x.gene_index("CD79A"));
    EXPECT_LT(*std::min_element(stored.begin(), stored.end()), 0.0f);
    expect_plot_shows(*plot, stored);

    // Export labels X for what it is.
    DataExportDialog dialog({}, {}, false);
    dialog.setIntegerCounts(window.snapshot()->dataset->integer_counts);
    EXPECT_FALSE(dialog.matrixText().contains(QStringLiteral("raw counts of"))) << dialog.matrixText().toStdString();
}

// The Values switch lives in the plot's model: switching it there (not through the window)
// recolours a gene and a gene set's mean in the new layer, moves the window's switch and
// the filter dock; score_genes is refused outside log-normalised counts. No GL needed.
TEST(AnalysedData, GeneAndGeneSetColoursFollowTheModelsValueLayer) {
    const auto path = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    PlotView* plot = window.plotView();
    PlotModel* model = plot->model();
    ASSERT_EQ(model->valueLayer(), ValueLayer::Raw);
    const FileMatrix raw(path.string(), "raw"), x(path.string(), "X");
    const auto mean_of = [](const FileMatrix& matrix) {
        const std::vector<float> a = matrix.column(matrix.gene_index("CD79A")), b = matrix.column(matrix.gene_index("MS4A1"));
        std::vector<float> mean(a.size());
        for (std::size_t cell = 0; cell < a.size(); ++cell) mean[cell] = static_cast<float>((double{a[cell]} + b[cell]) / 2.0);
        return mean;
    };

    // A gene typed in another case is the dataset's gene (as the suggestions find it), in
    // the gene box and in the filter dock's rules and text alike.
    auto* box = window.findChild<QLineEdit*>(QStringLiteral("geneBox"));
    ASSERT_NE(box, nullptr);
    QSignalSpy applied(&window, &MainWindow::coloringApplied);
    box->setText(QStringLiteral("cd79a"));
    emit box->returnPressed();
    ASSERT_TRUE(process_events_until([&] { return !applied.isEmpty(); }, 30s)) << "cd79a did not colour the plot";
    EXPECT_EQ(applied[0][0].toString(), QStringLiteral("gene:CD79A"));
    FilterPanel* filter = window.filterPanel();
    ASSERT_TRUE(filter->addRule(QStringLiteral("ms4a1"))) << filter->errorText().toStdString();
    ASSERT_EQ(filter->rules().size(), 1u);
    EXPECT_EQ(filter->rules()[0].gene, "MS4A1");
    ASSERT_TRUE(filter->setExpressionText(QStringLiteral("cd79a > 1 and not Ms4a1 > 0"))) << filter->errorText().toStdString();
    EXPECT_EQ(filter->state().expression, "CD79A > 1 and not MS4A1 > 0");
    ASSERT_TRUE(filter->setExpressionText(QStringLiteral("not (cd79a > 1 or ms4a1 > 1)"))) << filter->errorText().toStdString();
    EXPECT_EQ(filter->state().expression, "not (CD79A > 1 or MS4A1 > 1)");
    ASSERT_TRUE(filter->setExpressionText(QString()));

    model->setValueLayer(ValueLayer::Counts);
    ASSERT_TRUE(process_events_until([&] { return plot->colorName() == QStringLiteral("CD79A (X)"); }, 30s))
        << plot->colorName().toStdString();
    EXPECT_EQ(window.valueLayer(), ValueLayer::Counts);
    EXPECT_EQ(window.filterPanel()->state().layer, ValueLayer::Counts);
    auto* combo = window.findChild<QComboBox*>(QStringLiteral("valueLayer"));
    ASSERT_NE(combo, nullptr);
    EXPECT_EQ(combo->currentData().toInt(), static_cast<int>(ValueLayer::Counts));
    expect_plot_shows(*plot, x.column(x.gene_index("CD79A")));

    // A gene set: its mean in raw/X, then in X as stored after the switch. The switch back
    // to raw/X re-colours CD79A asynchronously: wait for it, or its result could land after
    // (and over) the gene set's.
    model->setValueLayer(ValueLayer::Raw);
    ASSERT_TRUE(process_events_until([&] { return plot->colorName() == QStringLiteral("CD79A (raw/X)"); }, 30s))
        << plot->colorName().toStdString();
    const auto folder = test::temp_dir("ui-analysed-gene-set");
    std::ofstream(folder / "b.txt") << "CD79A\nMS4A1\n";
    ASSERT_TRUE(filter->loadGeneSet(QString::fromStdString((folder / "b.txt").string())));
    QSignalSpy colored(filter, &FilterPanel::geneSetColored);
    QSignalSpy failed(filter, &FilterPanel::geneSetFailed);
    ASSERT_TRUE(filter->colorByGeneSet(false));
    ASSERT_TRUE(process_events_until([&] { return !colored.isEmpty() || !failed.isEmpty(); }, 30s));
    ASSERT_TRUE(failed.isEmpty()) << failed[0][0].toString().toStdString();
    EXPECT_TRUE(plot->colorName().endsWith(QStringLiteral("(raw/X)"))) << plot->colorName().toStdString();
    expect_plot_shows(*plot, mean_of(raw));
    model->setValueLayer(ValueLayer::Counts);
    ASSERT_TRUE(process_events_until([&] { return colored.count() == 2 || !failed.isEmpty(); }, 30s));
    ASSERT_TRUE(failed.isEmpty()) << failed[0][0].toString().toStdString();
    // The window's gene colouring (CD79A) is not shown: the switch does not re-colour it
    // over the gene set.
    QTest::qWait(200);
    EXPECT_EQ(plot->colorName(), colored[1][0].toString());
    EXPECT_TRUE(plot->colorName().endsWith(QStringLiteral("(X)"))) << plot->colorName().toStdString();
    expect_plot_shows(*plot, mean_of(x));
    // score_genes bins its control genes by log-normalised means: refused on X as stored.
    ASSERT_TRUE(filter->colorByGeneSet(true));
    ASSERT_TRUE(process_events_until([&] { return !failed.isEmpty(); }, 30s));
    EXPECT_TRUE(failed[0][0].toString().contains(QStringLiteral("log-normalised"))) << failed[0][0].toString().toStdString();
}

TEST(AnalysedData, GeneColourOnRawCountsIsLogNormalised) {
    FATHOM_REQUIRE_GL();
    FATHOM_REQUIRE_RAW_COUNTS(path);
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    EXPECT_TRUE(window.snapshot()->dataset->integer_counts);
    EXPECT_FALSE(window.snapshot()->dataset->has_raw);
    EXPECT_EQ(window.valueLayer(), ValueLayer::LogNorm);
    EXPECT_FALSE(window.setValueLayer(ValueLayer::Raw)) << "no raw/X in this file";
    EXPECT_EQ(window.valueLayer(), ValueLayer::LogNorm);
    // No embedding yet: the canvas says how to get one.
    EXPECT_EQ(window.plotView()->numPoints(), 0);
    EXPECT_TRUE(window.plotView()->emptyHint().contains(QStringLiteral("run the pipeline")))
        << window.plotView()->emptyHint().toStdString();
}

TEST(AnalysedData, SecondOpenLeavesNothingOfTheFirstFile) {
    FATHOM_REQUIRE_GL();
    const auto analysed = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(analysed);
    FATHOM_REQUIRE_RAW_COUNTS(counts);
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(analysed.string())));
    SelectionWorkflow* workflow = window.selectionWorkflow();
    SelectionController* selection = workflow->controller();

    // First file: a reference, a selection, its markers, a gene colouring and gene box text,
    // a filter and a non-default recipe.
    CellSet reference(600);
    std::iota(reference.begin(), reference.end(), 100u);
    selection->setSelection(reference, QStringLiteral("reference"));
    workflow->setReferenceFromSelection();
    CellSet cells(50);
    std::iota(cells.begin(), cells.end(), 0u);
    selection->setSelection(cells, QStringLiteral("cells"));
    bool markers_done = false, markers_ok = false;
    QObject::connect(workflow, &SelectionWorkflow::markersFinished, [&](bool ok, const QString&) {
        markers_done = true;
        markers_ok = ok;
    });
    ASSERT_TRUE(workflow->computeMarkers(true));
    ASSERT_TRUE(process_events_until([&] { return markers_done; }, 60s));
    ASSERT_TRUE(markers_ok) << workflow->markersPanel()->status().toStdString();
    ASSERT_TRUE(workflow->markersPanel()->hasResult());
    ASSERT_TRUE(wait_colored(window, QStringLiteral("gene:CD79A")));
    auto* gene_box = window.findChild<QLineEdit*>(QStringLiteral("geneBox"));
    ASSERT_NE(gene_box, nullptr);
    gene_box->setText(QStringLiteral("CD79A"));
    FilterState filter = window.filterPanel()->state();
    filter.expression = "CD79A > 1";
    window.filterPanel()->commit(filter);
    PipelineSettings settings{};
    settings.recipe = Recipe::None;
    window.pipelinePanel()->setSettings(settings);
    ASSERT_EQ(workflow->referenceCount(), 600);

    // Second file.
    ASSERT_TRUE(wait_open(window, QString::fromStdString(counts.string())));
    EXPECT_EQ(selection->count(), 0);
    EXPECT_EQ(workflow->referenceCount(), 0);
    EXPECT_FALSE(workflow->markersPanel()->hasResult());
    EXPECT_EQ(workflow->markersPanel()->model()->rowCount(), 0);
    EXPECT_FALSE(window.colorKey().startsWith(QStringLiteral("gene:"))) << window.colorKey().toStdString();
    EXPECT_TRUE(gene_box->text().isEmpty());
    EXPECT_TRUE(window.filterPanel()->state().expression.empty());
    EXPECT_TRUE(window.plotView()->cellMask().empty());
    EXPECT_EQ(window.pipelinePanel()->settings().recipe, PipelineSettings{}.recipe);
    EXPECT_EQ(window.valueLayer(), ValueLayer::LogNorm) << "raw counts: the default of this file";
    // Markers against a reference need a new reference on these cells.
    selection->setSelection(cells, QStringLiteral("cells"));
    EXPECT_FALSE(workflow->computeMarkers(true));
}

TEST(AnalysedData, RunKeepsTheFilesOwnEmbeddingsAndShowsNoQcOnProcessedX) {
    FATHOM_REQUIRE_GL();
    const auto path = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    const auto before = window.snapshot();
    ASSERT_TRUE(before->obsm.count("X_umap"));
    ASSERT_TRUE(before->obsm.count("X_pca"));
    const std::vector<float> file_umap(before->obsm.at("X_umap")->data(),
                                       before->obsm.at("X_umap")->data() + 2 * 700);
    const std::vector<float> file_pca(before->obsm.at("X_pca")->data(),
                                      before->obsm.at("X_pca")->data() +
                                          before->obsm.at("X_pca")->rows() * before->obsm.at("X_pca")->cols());

    PipelineSettings settings{};
    settings.recipe = Recipe::None;  // X is processed already
    settings.umap.num_epochs = 50;
    settings.run_markers = false;
    window.pipelinePanel()->setSettings(settings);
    bool finished = false, ok = false;
    QString error;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString& text, int) {
        finished = true;
        ok = success;
        error = text;
    });
    ASSERT_TRUE(window.runPipeline());
    ASSERT_TRUE(process_events_until([&] { return finished; }, 180s));
    ASSERT_TRUE(ok) << error.toStdString();

    const auto after = window.snapshot();
    ASSERT_TRUE(after->obsm.count("X_umap"));
    ASSERT_TRUE(after->obsm.count("X_umap_fathom"));
    ASSERT_TRUE(after->obsm.count("X_pca_fathom"));
    EXPECT_EQ(std::vector<float>(after->obsm.at("X_umap")->data(), after->obsm.at("X_umap")->data() + 2 * 700), file_umap);
    EXPECT_EQ(std::vector<float>(after->obsm.at("X_pca")->data(), after->obsm.at("X_pca")->data() + file_pca.size()),
              file_pca);
    EXPECT_EQ(window.embeddingKey(), QStringLiteral("X_umap_fathom")) << "the run's result is shown";
    // QC metrics are counts' metrics: none on a scaled X.
    for (const char* column : {"pct_counts_mt", "total_counts", "n_genes_by_counts"})
        EXPECT_EQ(after->obs->find(column), nullptr) << column;
    EXPECT_NE(after->obs->find("leiden"), nullptr);
}

/// Welch's t of one gene (group vs rest), ddof = 1, from the dense column.
double welch_t(const std::vector<float>& values, const std::vector<std::int32_t>& codes, std::int32_t group) {
    double sum[2] = {0, 0}, squares[2] = {0, 0}, count[2] = {0, 0};
    for (std::size_t cell = 0; cell < values.size(); ++cell) {
        const int side = codes[cell] == group ? 0 : 1;
        sum[side] += values[cell];
        squares[side] += static_cast<double>(values[cell]) * values[cell];
        count[side] += 1;
    }
    double mean[2], variance[2];
    for (int side = 0; side < 2; ++side) {
        mean[side] = sum[side] / count[side];
        variance[side] = (squares[side] - count[side] * mean[side] * mean[side]) / (count[side] - 1);
    }
    return (mean[0] - mean[1]) / std::sqrt(variance[0] / count[0] + variance[1] / count[1]);
}

TEST(AnalysedData, MarkersOfTheFilesLouvainOverEveryGeneWithoutAPipelineRun) {
    FATHOM_REQUIRE_GL();
    const auto path = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    ASSERT_FALSE(window.hasResults());
    SelectionWorkflow* workflow = window.selectionWorkflow();
    MarkersPanel* panel = workflow->markersPanel();
    EXPECT_EQ(panel->groupingColumn().isEmpty(), false);
    bool done = false, ok = false;
    QObject::connect(workflow, &SelectionWorkflow::markersFinished, [&](bool success, const QString&) {
        done = true;
        ok = success;
    });
    ASSERT_TRUE(workflow->computeColumnMarkers(QStringLiteral("louvain")));
    ASSERT_TRUE(process_events_until([&] { return done; }, 120s));
    ASSERT_TRUE(ok) << panel->status().toStdString();
    EXPECT_TRUE(panel->status().contains(QStringLiteral("raw/X"))) << panel->status().toStdString();

    const auto snapshot = window.snapshot();
    const auto& louvain = std::get<CategoricalColumn>(snapshot->obs->find("louvain")->data);
    const FileMatrix raw(path.string(), "raw");
    // Every gene is tested: the top genes of the groups include genes outside var's
    // highly_variable flags, and each group's table is ranked by Welch's t computed here.
    const auto& hvg = std::get<BoolColumn>(snapshot->var->find("highly_variable")->data).values;
    std::set<std::string> hvg_names;
    for (std::size_t gene = 0; gene < hvg.size(); ++gene)
        if (hvg[gene]) hvg_names.insert(snapshot->var->index()[gene]);
    bool outside_hvg = false;
    ASSERT_EQ(static_cast<std::size_t>(panel->findChild<QComboBox*>(QStringLiteral("markersGroup"))->count()),
              louvain.categories.size());
    for (int group = 0; group < static_cast<int>(louvain.categories.size()); ++group) {
        panel->setCurrentGroup(group);
        const MarkerGroup& table = panel->model()->markers();
        ASSERT_EQ(table.group, louvain.categories[static_cast<std::size_t>(group)]);
        ASSERT_GE(table.genes.size(), 20u);
        for (std::size_t rank = 0; rank < table.genes.size(); ++rank) {
            EXPECT_TRUE(std::isfinite(table.logfoldchanges[rank])) << table.group << " " << table.genes[rank];
            outside_hvg |= !hvg_names.count(table.genes[rank]);
        }
        for (std::size_t rank = 0; rank < 5; ++rank) {
            const std::vector<float> column = raw.column(raw.gene_index(table.genes[rank]));
            EXPECT_NEAR(table.scores[rank], welch_t(column, louvain.codes, group), 1e-3 * std::abs(table.scores[rank]))
                << table.group << " " << table.genes[rank];
            // % in: the percentage of the group's cells with a non-zero value.
            double expressing = 0, size = 0;
            for (std::size_t cell = 0; cell < column.size(); ++cell)
                if (louvain.codes[cell] == group) {
                    size += 1;
                    expressing += column[cell] != 0.0f;
                }
            const QModelIndex pct = panel->model()->index(static_cast<int>(rank), MarkerTableModel::PctIn);
            EXPECT_NEAR(panel->model()->data(pct).toDouble(), 100.0 * expressing / size, 1e-9);
        }
        EXPECT_GT(table.scores.front(), table.scores.back());
    }
    EXPECT_TRUE(outside_hvg) << "markers test every gene, not only the highly variable ones";

    // Double-clicking a gene colours the plot by it.
    panel->setCurrentGroup(0);
    const QString top = QString::fromStdString(panel->model()->markers().genes.front());
    bool colored = false;
    QObject::connect(&window, &MainWindow::coloringApplied, [&](const QString& key) { colored |= key == "gene:" + top; });
    QTableView* table = panel->table();
    table->show();
    const QModelIndex first = table->model()->index(0, 0);
    const QRect cell = table->visualRect(first);
    ASSERT_TRUE(cell.isValid());
    ASSERT_TRUE(table->isVisible());
    ASSERT_TRUE(table->viewport()->rect().contains(cell.center()))
        << "viewport " << table->viewport()->width() << "x" << table->viewport()->height();
    // A press selects the row first, as a real double click does.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    ASSERT_TRUE(process_events_until([&] { return colored; }, 30s));
    EXPECT_EQ(window.colorKey(), "gene:" + top);
}

TEST(AnalysedData, MarkersOnRawCountsAreLogNormalisedAndFinite) {
    FATHOM_REQUIRE_GL();
    FATHOM_REQUIRE_RAW_COUNTS(path);
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    const auto snapshot = window.snapshot();
    const Column* cell_type = snapshot->obs->find("cell_type");
    ASSERT_NE(cell_type, nullptr);
    const auto& types = std::get<CategoricalColumn>(cell_type->data);
    SelectionWorkflow* workflow = window.selectionWorkflow();
    bool done = false, ok = false;
    QObject::connect(workflow, &SelectionWorkflow::markersFinished, [&](bool success, const QString&) {
        done = true;
        ok = success;
    });
    ASSERT_TRUE(workflow->computeColumnMarkers(QStringLiteral("cell_type")));
    ASSERT_TRUE(process_events_until([&] { return done; }, 120s));
    MarkersPanel* panel = workflow->markersPanel();
    ASSERT_TRUE(ok) << panel->status().toStdString();
    EXPECT_TRUE(panel->status().contains(QStringLiteral("log-normalised"))) << panel->status().toStdString();
    // ln(1 + x * 1e4 / total) of the counts, computed here for the top gene of type 0.
    const FileMatrix x(path.string(), "X");
    std::vector<double> totals(static_cast<std::size_t>(x.num_cells()), 0.0);
    for (std::int64_t cell = 0; cell < x.num_cells(); ++cell)
        for (auto entry = x.rows.row_offsets[cell]; entry < x.rows.row_offsets[cell + 1]; ++entry)
            totals[static_cast<std::size_t>(cell)] += x.rows.values[entry];
    panel->setCurrentGroup(0);
    const MarkerGroup& table = panel->model()->markers();
    ASSERT_EQ(table.group, types.categories.front());
    ASSERT_GE(table.genes.size(), 20u);
    for (double logfc : table.logfoldchanges) EXPECT_TRUE(std::isfinite(logfc));
    std::vector<float> column = x.column(x.gene_index(table.genes.front()));
    for (std::size_t cell = 0; cell < column.size(); ++cell)
        column[cell] = static_cast<float>(std::log1p(column[cell] * 1e4 / totals[cell]));
    EXPECT_NEAR(table.scores.front(), welch_t(column, types.codes, 0), 1e-3 * std::abs(table.scores.front()));
    EXPECT_GT(table.logfoldchanges.front(), 0.5) << "a cell type's top marker is up in it";
}

TEST(AnalysedData, CancelledRunShowsTheLastCompleteState) {
    FATHOM_REQUIRE_GL();
    const auto path = pbmc68k_reduced();
    FATHOM_REQUIRE_PATH(path);
    MainWindow window(EngineConfig{}, false);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(wait_open(window, QString::fromStdString(path.string())));
    PlotView* plot = window.plotView();
    ASSERT_EQ(window.embeddingKey(), QStringLiteral("X_umap"));
    const std::vector<float> shown = plot->positions();

    PipelineSettings settings{};
    settings.recipe = Recipe::None;
    settings.umap.num_epochs = 100000;  // long enough to be cancelled while frames arrive
    settings.run_markers = false;
    window.pipelinePanel()->setSettings(settings);
    bool finished = false, ok = true;
    QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString&, int) {
        finished = true;
        ok = success;
    });
    ASSERT_TRUE(window.runPipeline());
    // Wait for the run's UMAP frames to replace the positions on screen, then cancel.
    ASSERT_TRUE(process_events_until([&] { return finished || plot->positions() != shown; }, 180s));
    ASSERT_FALSE(finished) << "the run ended before a frame was shown";
    window.cancelJobs();
    ASSERT_TRUE(process_events_until([&] { return finished; }, 60s));
    EXPECT_FALSE(ok);
    EXPECT_EQ(plot->positions(), shown) << "the file's X_umap is back on screen";
    EXPECT_EQ(window.embeddingKey(), QStringLiteral("X_umap"));
    EXPECT_EQ(window.snapshot()->obsm.count("X_umap_fathom"), 0u);
}

}  // namespace
}  // namespace fathom::ui
