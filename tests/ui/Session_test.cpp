// Session files: the struct round trip, errors naming the file and the key, and a
// window that saves a session which a fresh window reopens with the same results, view
// and colouring.
#include "ui/Session.hpp"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QFile>
#include <QTest>
#include <QUndoStack>
#include <filesystem>
#include <functional>
#include <fstream>

#include "core/engine/csv_export.hpp"
#include "tests/support/paths.hpp"
#include "ui/MainWindow.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionController.hpp"
#include "ui/SelectionWorkflow.hpp"
#include "ui/FilterPanel.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

SessionState full_state() {
    SessionState state;
    state.dataset = "/data/pbmc3k.h5ad";
    state.has_results = true;
    state.pipeline.recipe = Recipe::Seurat;
    state.pipeline.num_top_genes = 1234;
    state.pipeline.pca.num_components = 33;
    state.pipeline.umap.min_dist = 0.25;
    state.pipeline.leiden.resolution = 0.7;
    state.pipeline.run_markers = true;
    state.pipeline.markers.method = MarkerMethod::Wilcoxon;
    state.pipeline.seed = 2147483647;  // random_state's largest value survives JSON
    state.pipeline.umap.num_epochs = 123;
    state.pipeline.deterministic = true;
    state.color_by = "gene:CD3E";
    state.view.embedding = "X_umap";
    state.view.has_transform = true;
    state.view.center_x = -3.141592653589793;
    state.view.center_y = 1e-7;
    state.view.pixels_per_unit = 37.5;
    state.view.auto_point_size = false;
    state.view.point_size = 5.5f;
    state.view.opacity = 0.3f;
    state.view.theme = "light";
    state.view.density = "off";
    state.view.draw_order = "random";
    state.view.draw_order_seed = 99;
    state.filter = {"CD3E > 1 and not MS4A1 > 0", "counts", "dim"};
    state.selections = {{"lasso 1", {0, 5, 9, 2700}}, {"empty", {}}};
    state.annotations = {{"my_types", {"T, naive", "B \"cells\"", "NK"}, {0, 2, -1, 1}, {"#1f77b4", "#ff7f0e", "#279e68"}}};
    return state;
}

std::filesystem::path write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
    return path;
}

/// The message of load_session's error on `text`, or "" when it loads.
std::string load_error(const std::string& text) {
    static int counter = 0;
    const auto path = write_text(test::temp_dir("session-bad") / ("case" + std::to_string(counter++) + ".json"), text);
    try {
        load_session(QString::fromStdString(path.string()));
    } catch (const SessionError& error) {
        return error.what();
    }
    return {};
}

TEST(Session, EveryFieldSurvivesASaveAndLoad) {
    const auto folder = test::temp_dir("session");
    const QString path = QString::fromStdString((folder / "s.fathom.json").string());
    const SessionState state = full_state();
    save_session(state, path);
    const SessionState loaded = load_session(path);
    EXPECT_EQ(loaded, state);
    // Defaults round-trip too, and the file says what it is.
    save_session(SessionState{.dataset = "x.h5ad"}, path);
    EXPECT_EQ(load_session(path), SessionState{.dataset = "x.h5ad"});
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    EXPECT_TRUE(text.contains("\"format\": \"fathom-session\"")) << text.toStdString();
    EXPECT_TRUE(text.contains("\"version\": 2"));
    // Atomic: only the file itself is in the folder.
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) files += entry.is_regular_file() ? 1 : 0;
    EXPECT_EQ(files, 1);
}

TEST(Session, MalformedFilesNameTheFileAndTheKey) {
    std::string error = load_error("{\"version\": 1, \"dataset\": \"a.h5ad\",");
    EXPECT_NE(error.find(".json: not valid JSON"), std::string::npos) << error;
    error = load_error("[1, 2]");
    EXPECT_NE(error.find("expected a JSON object, got array"), std::string::npos) << error;
    error = load_error("{\"dataset\": \"a.h5ad\"}");
    EXPECT_NE(error.find(": /version: missing"), std::string::npos) << error;
    error = load_error("{\"version\": 7, \"dataset\": \"a.h5ad\"}");
    EXPECT_NE(error.find("/version: version 7 is not supported"), std::string::npos) << error;
    error = load_error("{\"version\": 1}");
    EXPECT_NE(error.find("/dataset: missing"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "view": {"opacity": "half"}})");
    EXPECT_NE(error.find("/view/opacity: expected a number, got string"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "view": {"theme": "neon"}})");
    EXPECT_NE(error.find("/view/theme: 'neon' is not one of dark, light"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "view": {"center": [1]}})");
    EXPECT_NE(error.find("/view/center: expected [x, y]"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "pipeline": {"num_pcs": 0}})");
    EXPECT_NE(error.find("/pipeline/num_pcs: n_pcs must be in [1, 500] (got 0)"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "pipeline": {"seed": -1}})");
    EXPECT_NE(error.find("/pipeline/seed: random_state must be in [0, 2147483647] (got -1)"), std::string::npos) << error;
    error = load_error(R"({"version": 2, "dataset": "a.h5ad", "pipeline": {"n_pcs": 20, "n_comps": 20}})");
    EXPECT_NE(error.find("/pipeline/n_comps: unknown setting"), std::string::npos) << error;
    error = load_error(R"({"version": 2, "dataset": "a.h5ad", "pipeline": {"knn_method": "annoy"}})");
    EXPECT_NE(error.find("/pipeline/knn_method: knn_method must be one of auto, exact, ivf, nndescent, hnsw (got 'annoy')"),
              std::string::npos)
        << error;
    error = load_error(R"({"version": 2, "dataset": "a.h5ad", "pipeline": {"run_neighbors": false}})");
    EXPECT_NE(error.find("/pipeline: run_umap needs run_neighbors"), std::string::npos) << error;
    error = load_error(R"({"version": 1, "dataset": "a.h5ad", "selections": [{"name": "s", "cells": [1, "2"]}]})");
    EXPECT_NE(error.find("/selections/0/cells/1: expected an integer, got string"), std::string::npos) << error;
    error = load_error(
        R"({"version": 1, "dataset": "a.h5ad", "annotations": [{"name": "a", "categories": ["x", "y"], "colors": ["#000000", "#ffffff"], "codes": [0, 1, 2]}]})");
    EXPECT_NE(error.find("/annotations/0/codes/2: code 2 outside [-1, 2)"), std::string::npos) << error;
    error = load_error(
        R"({"version": 1, "dataset": "a.h5ad", "annotations": [{"name": "a", "categories": ["x"], "colors": [], "codes": []}]})");
    EXPECT_NE(error.find("/annotations/0/colors: 0 colours for 1 categories"), std::string::npos) << error;
    EXPECT_EQ(load_error(R"({"version": 1, "dataset": "a.h5ad"})"), "");

    const QString missing = QString::fromStdString((test::temp_dir("session-missing") / "none.json").string());
    try {
        load_session(missing);
        FAIL() << "a missing file loaded";
    } catch (const SessionError& failure) {
        EXPECT_NE(std::string(failure.what()).find("none.json: cannot open"), std::string::npos) << failure.what();
    }
    const QString unwritable = QString::fromStdString((test::temp_dir("session-unwritable") / "no" / "s.json").string());
    EXPECT_THROW(save_session(full_state(), unwritable), SessionError);
}

// 1200 cells x 800 genes from fathom-cli synth; empty when the generator is unavailable.
std::filesystem::path session_dataset() {
    static const std::filesystem::path path = [] {
        const auto file = test::temp_dir("session-synth") / "synth1200.h5ad";
        const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 1200 --genes 800 --seed 4 --out '" +
                                    file.string() + "' --quiet > /dev/null 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return std::filesystem::path();
        return file;
    }();
    return path;
}

TEST(SessionWindow, ReopeningRestoresResultsColouringAndView) {
    FATHOM_REQUIRE_GL();
    const auto dataset = session_dataset();
    if (dataset.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset";
    const QString session = QString::fromStdString((test::temp_dir("session-window") / "analysis.fathom.json").string());

    PipelineSettings settings;
    settings.num_top_genes = 300;
    settings.pca.num_components = 20;
    settings.umap.num_epochs = 60;
    settings.run_markers = false;
    const QString with_results =
        QString::fromStdString((test::temp_dir("session-window-results") / "kept.fathom.json").string());
    ViewTransform saved_view;
    std::vector<float> saved_positions;
    {
        MainWindow window(EngineConfig{}, false);
        window.resize(900, 650);
        window.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
        bool opened = false, finished = false, ok = false;
        QObject::connect(&window, &MainWindow::datasetOpened, [&](bool success, const QString&, int) {
            opened = true;
            ok = success;
        });
        window.openFile(QString::fromStdString(dataset.string()));
        ASSERT_TRUE(process_events_until([&] { return opened; }, 60s));
        ASSERT_TRUE(ok);
        window.pipelinePanel()->setSettings(settings);
        QObject::connect(&window, &MainWindow::pipelineFinished, [&](bool success, const QString&, int) {
            finished = true;
            ok = success;
        });
        ASSERT_TRUE(window.runPipeline());
        ASSERT_TRUE(process_events_until([&] { return finished; }, 180s));
        ASSERT_TRUE(ok);
        ASSERT_EQ(window.embeddingKey(), QStringLiteral("X_umap"));
        ASSERT_TRUE(window.colorBy(QStringLiteral("cell_type")));
        PlotView* plot = window.plotView();
        plot->grabFramebuffer();
        // The user zooms and pans, and changes the look.
        ViewTransform moved = plot->transform();
        moved.set_pixels_per_unit(moved.pixels_per_unit() * 2.5);
        moved.set_center({moved.center().x + 1.25, moved.center().y - 0.5});
        plot->setTransform(moved);
        plot->setTheme(PlotView::Theme::Light);
        plot->setOpacity(0.6f);
        plot->setPointSize(5.0f);
        plot->setDrawOrder(DrawOrder::Random, 0);
        saved_view = plot->transform();
        QString error;
        ASSERT_TRUE(window.saveSession(session, &error)) << error.toStdString();
        saved_positions = plot->positions();
        bool saved = false;
        QObject::connect(&window, &MainWindow::sessionSaved, [&](bool success, const QString& text) {
            saved = true;
            ok = success;
            error = text;
        });
        ASSERT_TRUE(window.saveSessionWithResults(with_results));
        ASSERT_TRUE(process_events_until([&] { return saved; }, 60s));
        ASSERT_TRUE(ok) << error.toStdString();

        // File > Export Data... does its writing through these: CSV and h5ad jobs.
        const auto exports = test::temp_dir("session-window-exports");
        bool exported = false;
        QString exported_message;
        QObject::connect(&window, &MainWindow::dataExported, [&](bool success, const QString& text) {
            exported = true;
            ok = success;
            exported_message = text;
        });
        ASSERT_TRUE(window.exportCsv(QString::fromStdString((exports / "csv").string()), CsvExportOptions{}));
        ASSERT_TRUE(process_events_until([&] { return exported; }, 60s));
        EXPECT_TRUE(ok) << exported_message.toStdString();
        EXPECT_TRUE(std::filesystem::exists(exports / "csv" / "umap.csv"));
        EXPECT_TRUE(std::filesystem::exists(exports / "csv" / "cell_type.csv"));
        exported = false;
        ASSERT_TRUE(window.exportH5ad(QString::fromStdString((exports / "reduced.h5ad").string()), false));
        ASSERT_TRUE(process_events_until([&] { return exported; }, 60s));
        EXPECT_TRUE(ok) << exported_message.toStdString();
        EXPECT_TRUE(std::filesystem::exists(exports / "reduced.h5ad"));
        exported = false;
        window.exportH5ad(QString::fromStdString((exports / "missing" / "x.h5ad").string()), false);
        ASSERT_TRUE(process_events_until([&] { return exported; }, 60s));
        EXPECT_FALSE(ok);
        EXPECT_TRUE(exported_message.contains(QStringLiteral("x.h5ad"))) << exported_message.toStdString();
    }

    const SessionState state = load_session(session);
    EXPECT_EQ(state.dataset, std::filesystem::absolute(dataset).string());
    EXPECT_TRUE(state.has_results);
    EXPECT_EQ(state.pipeline.pca.num_components, 20);
    EXPECT_EQ(state.color_by, "cell_type");

    MainWindow fresh(EngineConfig{}, false);
    fresh.resize(700, 520);  // another size: the centre and zoom are kept, not the corners
    fresh.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&fresh));
    bool restored = false, ok = false;
    QString message;
    QObject::connect(&fresh, &MainWindow::sessionRestored, [&](bool success, const QString& text) {
        restored = true;
        ok = success;
        message = text;
    });
    ASSERT_TRUE(fresh.openSession(session));
    ASSERT_TRUE(process_events_until([&] { return restored; }, 240s)) << "the session was not restored";
    ASSERT_TRUE(ok) << message.toStdString();
    // Results: the pipeline ran again with the saved settings.
    EXPECT_TRUE(fresh.hasResults());
    EXPECT_EQ(fresh.lastRunSettings().pca.num_components, 20);
    EXPECT_EQ(fresh.lastRunSettings().umap.num_epochs, 60);
    ASSERT_TRUE(fresh.snapshot()->obsm.count("X_umap"));
    EXPECT_EQ(fresh.embeddingKey(), QStringLiteral("X_umap"));
    // Colouring.
    PlotView* plot = fresh.plotView();
    EXPECT_EQ(fresh.colorKey(), QStringLiteral("cell_type"));
    EXPECT_EQ(plot->colorKind(), PlotView::ColorKind::Categorical);
    EXPECT_EQ(plot->colorName(), QStringLiteral("cell_type"));
    // View: a few frames later (no fit undoes it), same centre and zoom.
    for (int frame = 0; frame < 3; ++frame) plot->grabFramebuffer();
    EXPECT_DOUBLE_EQ(plot->transform().center().x, saved_view.center().x);
    EXPECT_DOUBLE_EQ(plot->transform().center().y, saved_view.center().y);
    EXPECT_DOUBLE_EQ(plot->transform().pixels_per_unit(), saved_view.pixels_per_unit());
    EXPECT_EQ(plot->theme(), PlotView::Theme::Light);
    EXPECT_FLOAT_EQ(plot->opacity(), 0.6f);
    EXPECT_FALSE(plot->autoPointSize());
    EXPECT_FLOAT_EQ(plot->effectivePointSize(), 5.0f);
    EXPECT_EQ(plot->drawOrder(), DrawOrder::Random);
    // The toolbar shows the restored state.
    bool theme_shown = false;
    for (QComboBox* combo : fresh.findChildren<QComboBox*>())
        theme_shown |= combo->currentText() == QStringLiteral("light");
    EXPECT_TRUE(theme_shown);

    // A session saved with its results reopens them exactly (no re-run): the same
    // embedding, colouring and view.
    {
        const SessionState kept = load_session(with_results);
        EXPECT_EQ(kept.dataset, "kept.h5ad");  // next to the session, named relatively
        EXPECT_FALSE(kept.has_results);
        EXPECT_EQ(kept.pipeline.pca.num_components, 20);
        MainWindow again(EngineConfig{}, false);
        again.resize(640, 480);
        again.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&again));
        restored = false;
        QObject::connect(&again, &MainWindow::sessionRestored, [&](bool success, const QString& text) {
            restored = true;
            ok = success;
            message = text;
        });
        ASSERT_TRUE(again.openSession(with_results));
        ASSERT_TRUE(process_events_until([&] { return restored; }, 120s));
        ASSERT_TRUE(ok) << message.toStdString();
        EXPECT_FALSE(again.hasResults());
        EXPECT_EQ(again.pipelinePanel()->settings().pca.num_components, 20);
        EXPECT_EQ(again.embeddingKey(), QStringLiteral("X_umap"));
        EXPECT_EQ(again.plotView()->positions(), saved_positions);
        EXPECT_EQ(again.colorKey(), QStringLiteral("cell_type"));
        again.plotView()->grabFramebuffer();
        EXPECT_DOUBLE_EQ(again.plotView()->transform().center().x, saved_view.center().x);
        EXPECT_DOUBLE_EQ(again.plotView()->transform().pixels_per_unit(), saved_view.pixels_per_unit());
    }

    // A session whose dataset is gone fails with a message naming it.
    SessionState broken = state;
    broken.dataset = "/nonexistent/gone.h5ad";
    const QString broken_path = QString::fromStdString((test::temp_dir("session-window-bad") / "b.json").string());
    save_session(broken, broken_path);
    restored = false;
    EXPECT_FALSE(fresh.openSession(broken_path));
    EXPECT_TRUE(restored);
    EXPECT_FALSE(ok);
    EXPECT_TRUE(message.contains(QStringLiteral("gone.h5ad"))) << message.toStdString();
}

// The filter, the selection and the user's annotation columns go into the session and
// come back in a fresh window; filter changes are undone through the window's stack.
TEST(SessionWindow, FilterSelectionAndAnnotationsRoundTripAndFilterUndo) {
    FATHOM_REQUIRE_GL();
    const auto dataset = session_dataset();
    if (dataset.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset";
    const QString session = QString::fromStdString((test::temp_dir("session-panels") / "panels.fathom.json").string());
    PipelineSettings settings;
    settings.num_top_genes = 300;
    settings.pca.num_components = 20;
    settings.umap.num_epochs = 30;
    settings.run_markers = false;
    const auto open_and_wait = [](MainWindow& window, const std::function<void()>& start, auto signal, std::chrono::seconds limit) {
        bool done = false, ok = false;
        QString message;
        auto connection = QObject::connect(&window, signal, [&](bool success, const QString& text, auto...) {
            done = true;
            ok = success;
            message = text;
        });
        start();
        const bool finished = process_events_until([&] { return done; }, limit);
        QObject::disconnect(connection);
        return finished && ok ? QString() : (message.isEmpty() ? QStringLiteral("timed out") : message);
    };

    FilterState filter;
    std::vector<std::uint32_t> selected;
    std::vector<std::int32_t> annotation_codes;
    {
        MainWindow window(EngineConfig{}, false);
        window.resize(800, 600);
        window.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
        QString error = open_and_wait(window, [&] { window.openFile(QString::fromStdString(dataset.string())); },
                                      &MainWindow::datasetOpened, 60s);
        ASSERT_TRUE(error.isEmpty()) << error.toStdString();
        window.pipelinePanel()->setSettings(settings);
        error = open_and_wait(window, [&] { window.runPipeline(); }, &MainWindow::pipelineFinished, 180s);
        ASSERT_TRUE(error.isEmpty()) << error.toStdString();
        const auto snapshot = window.snapshot();
        const std::int64_t num_cells = snapshot->obs->num_rows();
        ASSERT_GT(num_cells, 100);

        // A filter through the panel's one commit path, then undone and redone.
        FilterPanel* panel = window.filterPanel();
        ASSERT_NE(panel, nullptr);
        const FilterState none = panel->state();
        filter.expression = snapshot->var->index()[0] + " > 0.5";
        filter.style = PlotView::MaskStyle::Dim;
        const int depth = window.undoStack()->count();
        panel->commit(filter);
        EXPECT_EQ(window.undoStack()->count(), depth + 1);
        EXPECT_EQ(panel->state(), filter);
        window.undoStack()->undo();
        EXPECT_EQ(panel->state(), none);
        window.undoStack()->redo();
        EXPECT_EQ(panel->state(), filter);

        // A selection, and an annotation column saved from a mask.
        for (std::uint32_t cell = 0; cell < static_cast<std::uint32_t>(num_cells); cell += 7) selected.push_back(cell);
        window.selectionWorkflow()->controller()->setSelection(selected, QStringLiteral("test selection"));
        std::vector<std::uint8_t> mask(static_cast<std::size_t>(num_cells), 0);
        for (std::int64_t cell = 0; cell < num_cells / 3; ++cell) mask[static_cast<std::size_t>(cell)] = 1;
        bool saved = false, ok = false;
        QObject::connect(window.selectionWorkflow(), &SelectionWorkflow::annotationSaved,
                         [&](bool success, const QString&, const QString&) {
                             saved = true;
                             ok = success;
                         });
        ASSERT_TRUE(window.selectionWorkflow()->saveMaskAsAnnotation(QStringLiteral("gated"), QStringLiteral("first third"), mask));
        ASSERT_TRUE(process_events_until([&] { return saved; }, 60s));
        ASSERT_TRUE(ok);
        QString save_error;
        ASSERT_TRUE(window.saveSession(session, &save_error)) << save_error.toStdString();
        const Column* gated = window.snapshot()->obs->find("gated");
        ASSERT_NE(gated, nullptr);
        annotation_codes = std::get<CategoricalColumn>(gated->data).codes;
    }

    const SessionState state = load_session(session);
    EXPECT_EQ(state.filter.expression, filter.expression);
    EXPECT_EQ(state.filter.mode, "dim");
    EXPECT_EQ(state.filter.layer, "lognorm");
    ASSERT_EQ(state.selections.size(), 1u);
    EXPECT_EQ(state.selections[0].cells, std::vector<std::int64_t>(selected.begin(), selected.end()));
    ASSERT_EQ(state.annotations.size(), 1u);
    EXPECT_EQ(state.annotations[0].name, "gated");
    EXPECT_EQ(state.annotations[0].codes, annotation_codes);
    EXPECT_EQ(state.annotations[0].categories.size(), state.annotations[0].colors.size());

    MainWindow fresh(EngineConfig{}, false);
    fresh.resize(800, 600);
    fresh.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&fresh));
    const QString error = open_and_wait(fresh, [&] { fresh.openSession(session); }, &MainWindow::sessionRestored, 240s);
    ASSERT_TRUE(error.isEmpty()) << error.toStdString();
    EXPECT_EQ(fresh.filterPanel()->state(), filter);
    const auto restored_selection = fresh.selectionWorkflow()->controller()->selection();
    ASSERT_TRUE(restored_selection);
    EXPECT_EQ(*restored_selection, selected);
    ASSERT_TRUE(process_events_until([&] { return fresh.snapshot()->obs->find("gated") != nullptr; }, 60s));
    EXPECT_EQ(std::get<CategoricalColumn>(fresh.snapshot()->obs->find("gated")->data).codes, annotation_codes);
}

}  // namespace
}  // namespace fathom::ui
