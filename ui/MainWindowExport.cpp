// MainWindow's figure and data export and its sessions (save, open, restore). Uses the
// window's public API plus a few private helpers (log, reportFailure, syncViewControls).
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMessageBox>
#include <algorithm>
#include <memory>

#include "core/engine/csv_export.hpp"
#include "ui/ExportDialogs.hpp"
#include "ui/JobWatcher.hpp"
#include "ui/MainWindow.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"

namespace fathom::ui {

namespace {

const char* density_name(PlotView::DensityMode mode) {
    switch (mode) {
        case PlotView::DensityMode::On: return "on";
        case PlotView::DensityMode::Off: return "off";
        case PlotView::DensityMode::Auto: return "auto";
    }
    return "auto";
}

PlotView::DensityMode density_from(const std::string& name) {
    if (name == "on") return PlotView::DensityMode::On;
    if (name == "off") return PlotView::DensityMode::Off;
    return PlotView::DensityMode::Auto;
}

DrawOrder draw_order_from(const std::string& name) {
    for (DrawOrder order : {DrawOrder::File, DrawOrder::Random, DrawOrder::ByValue})
        if (name == draw_order_name(order)) return order;
    return DrawOrder::File;
}

}  // namespace

// ---- figures ------------------------------------------------------------------------

bool MainWindow::exportFigure(const QString& path, FigureOptions options, QString* error) {
    if (options.embedding.isEmpty()) options.embedding = embeddingKey();
    QElapsedTimer clock;
    clock.start();
    QString problem;
    // Without the selection's highlight: the plot draws the figure with no selection,
    // then gets it back (its own view and colours are untouched).
    const SharedCellSet selection = plotView()->selection();
    const bool unselect = options.ignore_selection && !selection->empty();
    if (unselect) plotView()->setSelection(nullptr);
    const bool written = export_figure(*plotView(), path, options, &problem);
    if (unselect) plotView()->setSelection(selection);
    if (!written) {
        log(tr("export figure failed: %1").arg(problem));
        if (error) *error = problem;
        return false;
    }
    log(tr("export figure: wrote %1 (%2 x %3 in, %4 dpi) in %5 ms")
            .arg(path)
            .arg(options.width_in)
            .arg(options.height_in)
            .arg(options.dpi)
            .arg(clock.elapsed()));
    return true;
}

void MainWindow::showFigureExportDialog() {
    if (plotView()->numPoints() == 0) {
        QMessageBox::information(this, tr("Export Figure"), tr("There is no embedding on the plot to export yet."));
        return;
    }
    FigureExportDialog dialog(plotView()->colorName(), this);
    if (const auto current = snapshot(); current->dataset) {
        // <dataset folder>/<dataset>_<colouring>.png as a starting point.
        const QFileInfo dataset(QString::fromStdString(current->dataset->path));
        QString name = dataset.completeBaseName();
        if (!colorKey().isEmpty()) name += QStringLiteral("_") + QString(colorKey()).replace(QLatin1Char(':'), QLatin1Char('_'));
        dialog.setPath(dataset.absoluteDir().filePath(name + QStringLiteral(".png")));
    }
    if (dialog.exec() != QDialog::Accepted) return;
    QString error;
    if (!exportFigure(dialog.path(), dialog.options(), &error))
        QMessageBox::warning(this, tr("Export Figure"), tr("The figure was not written:\n%1").arg(error));
}

// ---- data ---------------------------------------------------------------------------

bool MainWindow::exportH5ad(const QString& path, bool include_matrix) {
    if (!snapshot()->dataset) {
        const QString message = tr("export: no dataset is open");
        log(message);
        emit dataExported(false, message);
        return false;
    }
    const JobHandle handle = engine().export_h5ad(path.toStdString(), include_matrix);
    log(tr("export: writing %1%2").arg(path, include_matrix ? tr(" (with X)") : QString()));
    jobWatcher()->watch(handle, QStringLiteral("export"), [this, path](const JobStatus& status) {
        if (status.state == JobState::Succeeded) {
            log(tr("export: wrote %1").arg(path));
            emit dataExported(true, tr("wrote %1").arg(path));
        } else {
            reportFailure(tr("export"), status);
            emit dataExported(false, QString::fromStdString(status.message));
        }
    });
    return true;
}

bool MainWindow::exportCsv(const QString& folder, const CsvExportOptions& options) {
    if (!snapshot()->dataset) {
        const QString message = tr("export: no dataset is open");
        log(message);
        emit dataExported(false, message);
        return false;
    }
    const JobHandle handle = engine().export_csv(folder.toStdString(), options);
    log(tr("export: writing CSV files into %1").arg(folder));
    jobWatcher()->watch(handle, QStringLiteral("export"), [this, folder](const JobStatus& status) {
        if (status.state == JobState::Succeeded) {
            log(tr("export: wrote the CSV files into %1").arg(folder));
            emit dataExported(true, tr("wrote CSV files into %1").arg(folder));
        } else {
            reportFailure(tr("export"), status);
            emit dataExported(false, QString::fromStdString(status.message));
        }
    });
    return true;
}

void MainWindow::showDataExportDialog() {
    const auto current = snapshot();
    if (!current->dataset || !current->obs) {
        QMessageBox::information(this, tr("Export Data"), tr("Open a dataset first."));
        return;
    }
    QStringList categories, projections;
    for (const Column& column : current->obs->columns())
        if (std::holds_alternative<CategoricalColumn>(column.data)) categories << QString::fromStdString(column.name);
    for (const auto& [key, matrix] : current->obsm)
        if (matrix && matrix->cols() >= 2) projections << QString::fromStdString(key);
    DataExportDialog dialog(categories, projections, !current->markers.empty(), this);
    dialog.setIntegerCounts(current->dataset->integer_counts);
    if (dialog.exec() != QDialog::Accepted) return;
    if (dialog.csv()) exportCsv(dialog.path(), dialog.csvOptions());
    else exportH5ad(dialog.path(), dialog.includeMatrix());
}

// ---- sessions -----------------------------------------------------------------------

SessionState MainWindow::sessionState() const {
    SessionState state;
    const auto current = snapshot();
    if (current->dataset) state.dataset = current->dataset->path;
    state.has_results = hasResults();
    state.pipeline = hasResults() ? lastRunSettings() : pipelinePanel()->settings();
    state.color_by = colorKey().toStdString();
    const PlotView& plot = *plotView();
    SessionView& view = state.view;
    view.embedding = embeddingKey().toStdString();
    view.has_transform = plot.numPoints() > 0;
    view.center_x = plot.transform().center().x;
    view.center_y = plot.transform().center().y;
    view.pixels_per_unit = plot.transform().pixels_per_unit();
    view.auto_point_size = plot.autoPointSize();
    view.point_size = std::clamp(plot.effectivePointSize(), 1.0f, 64.0f);
    view.opacity = plot.opacity();
    view.theme = plot.theme() == PlotView::Theme::Light ? "light" : "dark";
    view.density = density_name(plot.densityMode());
    view.draw_order = draw_order_name(plot.drawOrder());
    emit sessionSaving(&state);
    return state;
}

bool MainWindow::saveSession(const QString& path, QString* error) {
    try {
        const SessionState state = sessionState();
        if (state.dataset.empty()) throw SessionError(path.toStdString(), "", "no dataset is open: nothing to save");
        save_session(state, path);
    } catch (const SessionError& failure) {
        const QString message = QString::fromUtf8(failure.what());
        log(tr("save session failed: %1").arg(message));
        if (error) *error = message;
        emit sessionSaved(false, message);
        return false;
    }
    log(tr("session: saved %1").arg(path));
    emit sessionSaved(true, QString());
    return true;
}

bool MainWindow::saveSessionWithResults(const QString& path) {
    SessionState state = sessionState();
    const auto fail = [&](const QString& message) {
        log(tr("save session failed: %1").arg(message));
        emit sessionSaved(false, message);
        return false;
    };
    if (state.dataset.empty()) return fail(tr("%1: no dataset is open: nothing to save").arg(path));
    // "analysis.fathom.json" -> "analysis.h5ad" in the same folder, named relatively so
    // that the pair can be moved together.
    const QFileInfo info(path);
    QString stem = info.fileName();
    for (const QString& suffix : {QStringLiteral(".json"), QStringLiteral(".fathom")})
        if (stem.endsWith(suffix, Qt::CaseInsensitive)) stem.chop(suffix.size());
    const QString results = stem + QStringLiteral(".h5ad");
    const QString results_path = info.absoluteDir().filePath(results);
    if (QFileInfo(results_path).absoluteFilePath() == QFileInfo(QString::fromStdString(state.dataset)).absoluteFilePath())
        return fail(tr("%1 would overwrite the open dataset; choose another session name").arg(results_path));
    const JobHandle handle = engine().export_h5ad(results_path.toStdString(), true);
    log(tr("session: writing the results to %1").arg(results_path));
    state.dataset = results.toStdString();
    state.has_results = false;  // the file holds them: open it, do not re-run
    jobWatcher()->watch(handle, QStringLiteral("export"), [this, path, state](const JobStatus& status) {
        if (status.state != JobState::Succeeded) {
            reportFailure(tr("save session"), status);
            emit sessionSaved(false, QString::fromStdString(status.message));
            return;
        }
        try {
            save_session(state, path);
        } catch (const SessionError& failure) {
            const QString message = QString::fromUtf8(failure.what());
            log(tr("save session failed: %1").arg(message));
            emit sessionSaved(false, message);
            return;
        }
        log(tr("session: saved %1 with its results").arg(path));
        emit sessionSaved(true, QString());
    });
    return true;
}

bool MainWindow::openSession(const QString& path) {
    SessionState loaded;
    try {
        loaded = load_session(path);
    } catch (const SessionError& failure) {
        const QString message = QString::fromUtf8(failure.what());
        log(tr("open session failed: %1").arg(message));
        emit sessionRestored(false, message);
        return false;
    }
    // A relative dataset path is relative to the session file's folder.
    QString dataset = QString::fromStdString(loaded.dataset);
    if (QFileInfo(dataset).isRelative()) dataset = QFileInfo(path).absoluteDir().filePath(dataset);
    log(tr("session: opening %1 (dataset %2)").arg(path, dataset));
    auto state = std::make_shared<const SessionState>(std::move(loaded));
    connect(this, &MainWindow::datasetOpened, this, [this, state](bool ok, const QString& message, int) {
        if (!ok) {
            emit sessionRestored(false, tr("session dataset: %1").arg(message));
            return;
        }
        pipelinePanel()->setSettings(state->pipeline);  // a later run uses the saved settings
        if (!state->has_results) {
            restoreSessionView(*state);
            return;
        }
        connect(this, &MainWindow::pipelineFinished, this, [this, state](bool done, const QString& problem, int) {
            if (done) restoreSessionView(*state);
            else emit sessionRestored(false, tr("session pipeline: %1").arg(problem));
        }, Qt::SingleShotConnection);
        runPipeline();
    }, Qt::SingleShotConnection);
    return openFile(dataset);
}

void MainWindow::restoreSessionView(const SessionState& state) {
    const SessionView& view = state.view;
    if (!view.embedding.empty() && !showEmbedding(QString::fromStdString(view.embedding)))
        log(tr("session: the dataset has no embedding '%1'").arg(QString::fromStdString(view.embedding)));
    const QString color = QString::fromStdString(state.color_by);
    if (!colorBy(color)) log(tr("session: cannot colour by '%1'").arg(color));
    PlotView* plot = plotView();
    plot->setDrawOrder(draw_order_from(view.draw_order), view.draw_order_seed);
    plot->setDensityMode(density_from(view.density));
    plot->setTheme(view.theme == "light" ? PlotView::Theme::Light : PlotView::Theme::Dark);
    plot->setOpacity(view.opacity);
    if (view.auto_point_size) plot->setAutoPointSize(true);
    else plot->setPointSize(view.point_size);
    if (view.has_transform) {
        // The same world point at the centre and the same zoom, whatever the window size.
        ViewTransform transform = plot->transform();
        transform.set_center({view.center_x, view.center_y});
        transform.set_pixels_per_unit(view.pixels_per_unit);
        plot->setTransform(transform);
    }
    syncViewControls();
    emit sessionLoaded(state);
    log(tr("session: restored"));
    emit sessionRestored(true, QString());
}

}  // namespace fathom::ui
