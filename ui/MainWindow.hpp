#pragma once
/// The application window: File > Open (dialog, drag and drop, recent files, command
/// line), dataset and pipeline panels, Run / Cancel, progress with stage and ETA, a log,
/// a status bar, and the embedding plot with its colouring controls.
///
/// Talks to the engine only through core/engine/Engine.hpp; every engine call returns a
/// handle at once and JobWatcher reports back on the GUI thread, so the window keeps
/// repainting and panning while long jobs run.
#include <QMainWindow>
#include <QString>
#include <memory>

#include "core/engine/Engine.hpp"
#include "ui/FigureExport.hpp"
#include "ui/Session.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QCheckBox;
class QTimer;
class QUndoStack;

namespace fathom::ui {

class DatasetPanel;
class FilterPanel;
class JobWatcher;
class PipelinePanel;
class PlotView;
class QcPanel;
class MarkerPlotsPanel;
class SelectionWorkflow;

/// Main window of `fathom`.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    /// `interactive` = false suppresses modal dialogs (scripted runs and tests):
    /// errors then go to the log and the status bar only.
    explicit MainWindow(EngineConfig config = {}, bool interactive = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    /// Starts opening `path` (cancels a running pipeline first). A data file is first
    /// read whole by a separate process (OpenCheck); one that crashes or hangs it is
    /// refused (datasetOpened(false, ...)) and what is open stays as it was. False when
    /// the path does not exist (reported like any other open failure).
    bool openFile(const QString& path);
    /// Runs the pipeline with the form's settings (recreating the engine first when the
    /// device list changed). False when the settings do not validate or no dataset is open.
    bool runPipeline();
    /// Cancels every running job.
    void cancelJobs();
    /// Colours the plot by an obs column ("leiden") or a gene ("gene:CD3E"); "" = uniform.
    /// Gene values arrive asynchronously (coloringApplied / coloringFailed).
    /// False when the key is unknown.
    bool colorBy(const QString& key);
    /// The values a gene colouring and the filter dock show: X as stored, raw/X or
    /// log-normalised counts. Opening a dataset sets default_value_layer() of it.
    ValueLayer valueLayer() const;
    /// The one Values switch: re-colours a gene colouring and re-evaluates the filter in
    /// `layer`. False (nothing changed) for raw/X on a dataset without one.
    bool setValueLayer(ValueLayer layer);
    /// Shows obsm[key] (first two columns) in the plot. False when absent.
    bool showEmbedding(const QString& key);

    PlotView* plotView() const;
    /// Undo / redo of view-state changes (the selection; filters can push theirs too).
    QUndoStack* undoStack() const;
    /// Selection tools, annotations, selection markers and exports.
    SelectionWorkflow* selectionWorkflow() const;
    /// Re-reads the engine's snapshot after a change to obs alone (a user annotation):
    /// colour choices, hover readout and colours follow; the positions are not re-uploaded.
    /// Colours by `color_key` when it is not empty.
    void refreshObs(const QString& color_key = QString());
    PipelinePanel* pipelinePanel() const;
    DatasetPanel* datasetPanel() const;
    /// The QC view (a tab of the analysis dock): QC metrics and the pipeline's cell filters.
    QcPanel* qcPanel() const;
    /// The "Marker plots" dock: dot / violin / matrix plots of a column's markers.
    MarkerPlotsPanel* markerPlots() const;
    /// Shows the analysis dock's tab named `name` ("Pipeline", "Dataset", "QC", "Plots").
    void showAnalysisTab(const QString& name);
    /// The marker-gene filter dock (its filterChanged signal is the undo hook).
    FilterPanel* filterPanel() const;
    JobWatcher* jobWatcher() const;
    Engine& engine() const;
    /// The latest engine snapshot the window shows (never null).
    std::shared_ptr<const AnalysisSnapshot> snapshot() const;
    /// The obsm key the plot shows ("" when none).
    QString embeddingKey() const;
    /// The colouring key last applied.
    QString colorKey() const;
    /// Log text (one line per event).
    QString logText() const;
    /// Recent files (most recent first), from QSettings.
    QStringList recentFiles() const;
    /// Whether an open or pipeline job is running.
    bool busy() const;
    /// Results, selections, filters or annotations made since the dataset was opened or the
    /// session last saved or restored (closing the window asks first when interactive).
    bool hasUnsavedChanges() const;
    /// Whether a pipeline run finished on the open dataset, and its settings.
    bool hasResults() const;
    PipelineSettings lastRunSettings() const;

    // ---- export and sessions (MainWindowExport.cpp) ----------------------------------
    /// Writes the plot as a figure (PNG / SVG / PDF by extension; FigureExport.hpp); the
    /// embedding key defaults to the one shown. False with `error` set (also logged).
    bool exportFigure(const QString& path, FigureOptions options, QString* error = nullptr);
    /// Starts writing the analysis as h5ad (with `include_matrix`, X of the analysed cells as
    /// the file stores it: raw counts, or an analysed file's processed values);
    /// dataExported reports the end. False when no dataset is open.
    bool exportH5ad(const QString& path, bool include_matrix);
    /// Starts writing Loupe-style CSVs into `folder`; dataExported reports the end.
    bool exportCsv(const QString& folder, const CsvExportOptions& options);
    /// The window as a session: dataset, pipeline settings of the last run, colouring,
    /// view; then sessionSaving lets other panels add their parts.
    SessionState sessionState() const;
    /// Writes sessionState() to `path` (atomically). False with `error` set (also logged).
    bool saveSession(const QString& path, QString* error = nullptr);
    /// Saves a session that keeps these exact results: writes "<session stem>.h5ad" next
    /// to `path` (raw counts of the analysed cells plus obs, obsm, uns colours) and a
    /// session that opens it instead of re-running the pipeline (whose approximate kNN
    /// and parallel UMAP can differ run to run on large data). sessionSaved reports the end.
    bool saveSessionWithResults(const QString& path);
    /// Opens a session file: the dataset, the pipeline re-run with the saved settings when
    /// it had results, then the embedding, colouring and view; sessionLoaded lets other
    /// panels restore their parts, then sessionRestored(ok, message). False (after
    /// sessionRestored(false, ...)) when the file cannot be read or the dataset is missing.
    bool openSession(const QString& path);

    /// The widget-level message shown when no display is available (`fathom` prints it).
    static QString noDisplayMessage();

signals:
    /// An open job ended: ok, or the error message and FailureKind (as int).
    void datasetOpened(bool ok, const QString& message, int failure);
    /// A pipeline job ended (Cancelled counts as not ok, failure None).
    void pipelineFinished(bool ok, const QString& message, int failure);
    /// A colouring is on screen (for genes: once the values arrived).
    void coloringApplied(const QString& key);
    void coloringFailed(const QString& key, const QString& message);
    /// An h5ad or CSV export ended (message: what was written, or the error).
    void dataExported(bool ok, const QString& message);
    /// sessionState() is being built: add the parts a panel owns (direct connections).
    void sessionSaving(fathom::ui::SessionState* state) const;
    /// A session's dataset, results and view are restored: apply the other parts.
    void sessionLoaded(const fathom::ui::SessionState& state);
    /// openSession() finished.
    void sessionRestored(bool ok, const QString& message);
    /// saveSession() or saveSessionWithResults() finished.
    void sessionSaved(bool ok, const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    /// A window shown, or grown again, gives the side docks back the width a smaller one took.
    void resizeEvent(QResizeEvent* event) override;
    /// A separator drag that changed the side docks' widths makes those the widths they
    /// keep (a larger window no longer widens a dock narrowed by hand).
    bool event(QEvent* event) override;

private:
    /// Widens the analysis and filter docks back to their preferred widths where the
    /// plot keeps at least its minimum width.
    void restoreDockWidths();
    void buildMenus();
    /// Filter changes onto the undo stack; the filter, selection and annotations into sessions.
    void connectStateHooks();
    void buildToolbar();
    void buildDocks();
    void log(const QString& line);
    void reportFailure(const QString& what, const JobStatus& status);
    void onProgress(const QString& label, const JobStatus& status);
    void applySnapshot(bool after_pipeline);
    void refreshColorChoices();
    void syncValueLayerChoices();
    /// After a cancelled or failed run: the last complete state instead of UMAP frames.
    void restoreLastCompleteState();
    /// A new dataset: forget the previous one's selection, reference, markers, filter,
    /// gene colouring, gene box text and pipeline settings.
    void resetDatasetState();
    void pollEmbeddingFrame();
    void addRecentFile(const QString& path);
    void rebuildRecentMenu();
    void setBusy(bool busy);
    void startPipelineJob();
    /// openFile() once the separate check let the file through.
    void openCheckedFile(const QString& path);
    void showFigureExportDialog();
    void showDataExportDialog();
    void restoreSessionView(const SessionState& state);
    /// Toolbar controls from the plot's state (after the plot was changed directly).
    void syncViewControls();

    struct Private;
    std::unique_ptr<Private> d;
};

}  // namespace fathom::ui
