#include "ui/MainWindow.hpp"

#include <memory>
#include <utility>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QCompleter>
#include <QDateTime>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSettings>
#include <QSlider>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QStringListModel>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/data/GeneLookup.hpp"
#include "ui/DatasetPanel.hpp"
#include "ui/FilterPanel.hpp"
#include "ui/GeneSearch.hpp"
#include "ui/JobWatcher.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/QcPanel.hpp"
#include "ui/CellSelection.hpp"
#include "ui/Session.hpp"
#include "ui/StateCommand.hpp"
#include "ui/SelectionController.hpp"
#include "ui/SelectionWorkflow.hpp"
#include "ui/MarkersPanel.hpp"
#include "ui/MarkerPlots.hpp"
#include "ui/OpenCheck.hpp"
#ifdef FATHOM_HAS_VTK
#include "ui/vtk/Embedding3DDock.hpp"
#endif

namespace fathom::ui {

namespace {

/// Least widths the analysis and filter docks get back when a small window grows.
constexpr int k_analysis_width = 360;
constexpr int k_filter_width = 380;
constexpr int k_max_recent_files = 10;
const char* const k_recent_key = "recentFiles";

QString seconds_text(double seconds) {
    if (seconds < 0.0) return {};
    if (seconds < 1.0) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 0);
    if (seconds < 90.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    return QStringLiteral("%1 min").arg(seconds / 60.0, 0, 'f', 1);
}

const char* failure_name(FailureKind kind) {
    switch (kind) {
        case FailureKind::None: return "none";
        case FailureKind::Input: return "input";
        case FailureKind::Option: return "option";
        case FailureKind::Output: return "output";
        case FailureKind::Device: return "device";
        case FailureKind::Compute: return "compute";
    }
    return "compute";
}

/// The hover readout names the cluster whatever the colouring.
void show_hover_clusters(PlotView& plot, const AnalysisSnapshot& snapshot) {
    for (const char* cluster_key : {"leiden", "louvain", "cell_type", "clusters"}) {
        const Column* column = snapshot.obs->find(cluster_key);
        if (!column || !std::holds_alternative<CategoricalColumn>(column->data)) continue;
        std::vector<std::int32_t> codes;
        std::vector<std::string> categories;
        obs_column_categories(*column, codes, categories);
        plot.setHoverCategories(QString::fromUtf8(cluster_key), std::move(codes), std::move(categories));
        break;
    }
}

}  // namespace

struct MainWindow::Private {
    EngineConfig config;
    std::unique_ptr<Engine> engine;
    OpenCheck open_check;  ///< a data file is read in a separate process before it is opened here
    bool interactive = true;
    std::shared_ptr<const AnalysisSnapshot> snapshot = std::make_shared<AnalysisSnapshot>();
    QString current_path;
    QString embedding_key;
    QString color_key;
    QString gene_color_label;  // the plot's colour name while it shows the gene colouring
    bool color_chosen_by_user = false;
    bool run_after_open = false;
    std::uint64_t frame_sequence = 0;
    std::uint64_t gene_request = 0;
    QElapsedTimer gene_timer;

    JobWatcher* watcher = nullptr;
    PlotView* plot = nullptr;
    PipelinePanel* pipeline = nullptr;
    DatasetPanel* dataset = nullptr;
    QcPanel* qc = nullptr;
    MarkerPlotsPanel* marker_plots = nullptr;
    QDockWidget* marker_plots_dock = nullptr;
    QDockWidget* analysis_dock = nullptr;
    QDockWidget* filter_dock = nullptr;
    std::vector<int> dock_widths;  // analysis, filter: their widths when first shown, or as the user set them
    std::pair<int, int> widths_at_press{-1, -1};  // the side docks' widths when a mouse button went down on the window
    QTabWidget* analysis_tabs = nullptr;
    FilterPanel* filter = nullptr;
    QPlainTextEdit* log = nullptr;
    QProgressBar* progress = nullptr;
    QLabel* status_label = nullptr;
    QPushButton* status_cancel = nullptr;
    QComboBox* color_combo = nullptr;
    QLineEdit* gene_edit = nullptr;
    QStringListModel* gene_names = nullptr;
    QComboBox* embedding_combo = nullptr;
    QComboBox* layer_combo = nullptr;   ///< the one Values switch (plot gene colour and filters)
    QComboBox* order_combo = nullptr;
    QComboBox* density_combo = nullptr;
    QSlider* size_slider = nullptr;
    QCheckBox* size_auto = nullptr;
    QSlider* opacity_slider = nullptr;
    QComboBox* theme_combo = nullptr;
    QMenu* recent_menu = nullptr;
#ifdef FATHOM_HAS_VTK
    Embedding3DDock* view3d = nullptr;  // View > 3-D view
#endif
    QTimer* frame_timer = nullptr;
    bool busy = false;
    bool updating_controls = false;
    QUndoStack* undo = nullptr;
    SelectionWorkflow* selection = nullptr;
    bool has_results = false;        ///< a pipeline run finished on the open dataset
    bool unsaved = false;            ///< results, selections or annotations made since the last open or session save
    PipelineSettings last_run;       ///< its settings (saved in sessions)
};

MainWindow::MainWindow(EngineConfig config, bool interactive, QWidget* parent)
    : QMainWindow(parent), d(std::make_unique<Private>()) {
    d->config = config;
    d->interactive = interactive;
    d->engine = std::make_unique<Engine>(config);
    d->watcher = new JobWatcher(this);
    setWindowTitle(QStringLiteral("Fathom"));
    setAcceptDrops(true);

    d->plot = new PlotView(this);
    d->plot->setObjectName(QStringLiteral("plot"));
    d->plot->setEmptyHint(tr("Open a dataset: File > Open, or drop a file here"));
    // A small window narrows the docks (to their minimum widths) before the plot goes below this.
    d->plot->setMinimumSize(240, 200);
    setCentralWidget(d->plot);
    d->undo = new QUndoStack(this);
    d->undo->setUndoLimit(200);
    d->selection = new SelectionWorkflow(*this, d->undo, interactive);
    connect(d->selection, &SelectionWorkflow::logMessage, this, [this](const QString& line) { log(line); });
    buildDocks();
    buildToolbar();
    buildMenus();
    connectStateHooks();
    // A gene colouring follows the Values switch (the filter dock and the gene-set colouring
    // observe the model themselves).
    connect(d->plot->model(), &PlotModel::valueLayerChanged, this, [this](ValueLayer layer) {
        d->updating_controls = true;
        d->layer_combo->setCurrentIndex(std::max(0, d->layer_combo->findData(static_cast<int>(layer))));
        d->updating_controls = false;
        // Only while the plot still shows that gene: a gene-set colouring drawn since then
        // follows the switch itself (the filter dock's), and a late gene result must not
        // replace it.
        if (d->color_key.startsWith(QStringLiteral("gene:")) && d->plot->colorName() == d->gene_color_label)
            colorBy(d->color_key);
    });
    // Selections, filters and annotations (all on the undo stack) are work to keep.
    connect(d->undo, &QUndoStack::indexChanged, this, [this] {
        if (!d->undo->isClean()) d->unsaved = true;
    });
    connect(this, &MainWindow::sessionSaved, this, [this](bool ok, const QString&) {
        if (ok) d->unsaved = false;
    });
    connect(this, &MainWindow::sessionRestored, this, [this](bool ok, const QString&) {
        if (ok) d->unsaved = false;
    });

    d->progress = new QProgressBar(this);
    d->progress->setRange(0, 1000);
    d->progress->setValue(0);
    d->progress->setTextVisible(true);
    d->progress->setFormat(tr("idle"));
    d->progress->setMinimumWidth(260);
    d->status_label = new QLabel(tr("Open a dataset (File > Open or drop a file)"), this);
    d->status_cancel = new QPushButton(tr("Cancel"), this);
    d->status_cancel->setEnabled(false);
    statusBar()->addWidget(d->status_label, 1);
    statusBar()->addPermanentWidget(d->progress);
    statusBar()->addPermanentWidget(d->status_cancel);
    connect(d->status_cancel, &QPushButton::clicked, this, &MainWindow::cancelJobs);

    connect(d->watcher, &JobWatcher::progressChanged, this, &MainWindow::onProgress);
    connect(d->watcher, &JobWatcher::stageChanged, this, [this](const QString& label, const QString& stage) {
        if (!stage.isEmpty() && label != QStringLiteral("gene")) log(QStringLiteral("%1: %2").arg(label, stage));
    });
    d->frame_timer = new QTimer(this);
    d->frame_timer->setInterval(100);
    connect(d->frame_timer, &QTimer::timeout, this, &MainWindow::pollEmbeddingFrame);
    resize(1280, 800);
    log(tr("Fathom ready (devices %1)").arg(QString::fromStdString(config.devices)));
}

MainWindow::~MainWindow() {
    // Stop polling first: destroying the engine cancels and joins its jobs.
    d->frame_timer->stop();
    d->watcher->cancelAll();
}

QString MainWindow::noDisplayMessage() {
    return QStringLiteral(
        "fathom: no display available (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset).\n"
        "The desktop explorer needs a display. For headless work use fathom-cli, e.g.\n"
        "  fathom-cli info FILE\n"
        "  fathom-cli run FILE --out result.h5ad\n"
        "or run the explorer under a virtual display: xvfb-run -a fathom FILE ...");
}

// ---- construction -------------------------------------------------------------------

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open..."));
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open dataset"), QFileInfo(d->current_path).absolutePath(),
            tr("Single-cell data or session (*.h5ad *.h5 *.loom *.mtx *.mtx.gz *.fathom.json);;All files (*)"));
        if (!path.isEmpty()) openFile(path);
    });
    QAction* open_folder = file->addAction(tr("Open 10x &folder..."));
    connect(open_folder, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Open Matrix Market folder"));
        if (!path.isEmpty()) openFile(path);
    });
    d->recent_menu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    file->addSeparator();
    QAction* open_session = file->addAction(tr("Open &Session..."));
    connect(open_session, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QString(),
                                                          tr("Fathom session (*.fathom.json *.json);;All files (*)"));
        if (!path.isEmpty()) openSession(path);
    });
    QAction* save_session = file->addAction(tr("Sa&ve Session..."));
    save_session->setShortcut(QKeySequence::Save);
    connect(save_session, &QAction::triggered, this, [this] {
        QString path = QFileDialog::getSaveFileName(this, tr("Save session"), QString(), tr("Fathom session (*.fathom.json)"));
        if (path.isEmpty()) return;
        if (!path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) path += QStringLiteral(".fathom.json");
        saveSession(path);
    });
    QAction* save_results = file->addAction(tr("Save Session with &Results..."));
    save_results->setToolTip(tr("Also writes the analysed data with its embedding and clusters next to the session"));
    connect(save_results, &QAction::triggered, this, [this] {
        QString path = QFileDialog::getSaveFileName(this, tr("Save session with results"), QString(),
                                                    tr("Fathom session (*.fathom.json)"));
        if (path.isEmpty()) return;
        if (!path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) path += QStringLiteral(".fathom.json");
        saveSessionWithResults(path);
    });
    file->addSeparator();
    QAction* export_figure = file->addAction(tr("Export &Figure..."));
    connect(export_figure, &QAction::triggered, this, &MainWindow::showFigureExportDialog);
    QAction* export_data = file->addAction(tr("Export &Data..."));
    connect(export_data, &QAction::triggered, this, &MainWindow::showDataExportDialog);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* reset = view->addAction(tr("&Reset view"));
    reset->setShortcut(Qt::Key_Home);
    connect(reset, &QAction::triggered, d->plot, &PlotView::resetView);
    QAction* fit_all = view->addAction(tr("&Fit all cells"));
    fit_all->setShortcut(Qt::SHIFT | Qt::Key_Home);
    connect(fit_all, &QAction::triggered, d->plot, &PlotView::fitAll);
    QAction* overlay = view->addAction(tr("Show &overlay"));
    overlay->setCheckable(true);
    overlay->setChecked(true);
    connect(overlay, &QAction::toggled, d->plot, &PlotView::setOverlayVisible);
#ifdef FATHOM_HAS_VTK
    QAction* view3d = d->view3d->toggleViewAction();
    view3d->setText(tr("&3-D view"));
    view3d->setShortcut(Qt::CTRL | Qt::Key_3);
    view->addAction(view3d);
#else
    view->addAction(tr("3-D view (built without VTK)"))->setEnabled(false);
#endif
    QAction* plots = d->marker_plots_dock->toggleViewAction();
    plots->setText(tr("&Marker plots"));
    view->addAction(plots);
    QMenu* analysis = menuBar()->addMenu(tr("&Analysis"));
    QAction* run = analysis->addAction(tr("&Run pipeline"));
    run->setShortcut(Qt::CTRL | Qt::Key_R);
    connect(run, &QAction::triggered, this, [this] { runPipeline(); });
    QAction* cancel = analysis->addAction(tr("&Cancel"));
    cancel->setShortcut(Qt::Key_Escape);
    connect(cancel, &QAction::triggered, this, &MainWindow::cancelJobs);
    QMenu* selection = menuBar()->addMenu(tr("&Selection"));
    // The selection tools get a row of their own so that they are never in the plot
    // toolbar's overflow menu at the default size.
    addToolBarBreak();
    QToolBar* tools = addToolBar(tr("Selection"));
    tools->setMovable(false);
    tools->setObjectName(QStringLiteral("selectionToolbar"));
    d->selection->addActions(tools, edit, selection);
}

void MainWindow::connectStateHooks() {
    // Filter changes share the selection's undo stack, so Edit > Undo walks back through both.
    connect(d->filter, &FilterPanel::filterChanged, this, [this](const FilterState& before, const FilterState& after) {
        auto pushing = std::make_shared<bool>(true);  // push() calls redo(); the panel already shows `after`
        d->undo->push(new StateCommand<FilterState>(tr("Filter"), before, after, [this, pushing](const FilterState& state) {
            if (std::exchange(*pushing, false)) return;
            FilterState restored = state;
            restored.layer = d->plot->model()->valueLayer();  // the layer is the window's switch, not part of the undo
            d->filter->setState(restored);
        }));
    });
    connect(this, &MainWindow::sessionSaving, this, [this](SessionState* state) {
        const FilterState filter = d->filter->state();
        state->filter.expression = filter.expression;
        state->filter.layer = value_layer_key(filter.layer);
        state->filter.mode = filter.style == PlotView::MaskStyle::Dim ? "dim" : "hide";
        state->selections.clear();
        if (const auto cells = d->selection->controller()->selection(); cells && !cells->empty())
            state->selections.push_back({"selection", std::vector<std::int64_t>(cells->begin(), cells->end())});
        state->annotations.clear();
        const auto shown = snapshot();
        if (!shown || !shown->obs) return;
        for (const std::string& name : shown->user_annotations) {
            const Column* column = shown->obs->find(name);
            const auto* categorical = column ? std::get_if<CategoricalColumn>(&column->data) : nullptr;
            if (!categorical) continue;
            SessionAnnotation annotation{name, categorical->categories, categorical->codes, {}};
            if (const auto colors = shown->colors.find(name); colors != shown->colors.end()) annotation.colors = colors->second;
            state->annotations.push_back(std::move(annotation));
        }
    });
    connect(this, &MainWindow::sessionLoaded, this, [this](const SessionState& state) {
        const auto shown = snapshot();
        const std::int64_t num_cells = shown && shown->obs ? shown->obs->num_rows() : 0;
        for (const SessionAnnotation& saved : state.annotations) {
            if (static_cast<std::int64_t>(saved.codes.size()) != num_cells) {
                log(tr("session: annotation '%1' has %2 codes for %3 cells; not restored")
                        .arg(QString::fromStdString(saved.name)).arg(saved.codes.size()).arg(num_cells));
                continue;
            }
            ObsAnnotation annotation;
            annotation.name = saved.name;
            annotation.categories = saved.categories;
            annotation.codes = saved.codes;
            annotation.colors = saved.colors;
            annotation.cells = shown->cells;
            const QString name = QString::fromStdString(saved.name);
            d->watcher->watch(d->engine->set_obs_annotation(std::move(annotation)), QStringLiteral("annotate"),
                              [this, name](const JobStatus& status) {
                                  if (status.state == JobState::Succeeded) refreshObs();
                                  else log(tr("session: annotation '%1' not restored: %2").arg(name, QString::fromStdString(status.message)));
                              });
        }
        for (const SessionSelection& saved : state.selections) {
            CellSet cells;
            for (const std::int64_t cell : saved.cells)
                if (cell >= 0 && cell < num_cells) cells.push_back(static_cast<std::uint32_t>(cell));
            d->selection->controller()->setSelection(std::move(cells), tr("Restore selection"));
        }
        FilterState filter;
        filter.expression = state.filter.expression;
        // The saved layer becomes the window's one Values switch (raw/X only where the file has one).
        ValueLayer layer = d->plot->model()->valueLayer();
        if (parse_value_layer(state.filter.layer, layer) && !setValueLayer(layer))
            log(tr("session: values '%1' are not in this dataset; showing %2")
                    .arg(QString::fromStdString(state.filter.layer), QString::fromUtf8(value_layer_label(d->plot->model()->valueLayer()))));
        filter.layer = d->plot->model()->valueLayer();
        filter.style = state.filter.mode == "dim" ? PlotView::MaskStyle::Dim : PlotView::MaskStyle::Hide;
        d->filter->setState(filter);
    });
}

void MainWindow::buildToolbar() {
    QToolBar* bar = addToolBar(tr("Plot"));
    bar->setObjectName(QStringLiteral("plotToolbar"));
    bar->setMovable(false);
    bar->addWidget(new QLabel(tr(" Embedding "), this));
    d->embedding_combo = new QComboBox(this);
    d->embedding_combo->setMinimumContentsLength(8);
    bar->addWidget(d->embedding_combo);
    connect(d->embedding_combo, &QComboBox::currentTextChanged, this, [this](const QString& key) {
        if (!d->updating_controls && !key.isEmpty()) showEmbedding(key);
    });
    bar->addWidget(new QLabel(tr("  Colour by "), this));
    d->color_combo = new QComboBox(this);
    d->color_combo->setMinimumContentsLength(14);
    bar->addWidget(d->color_combo);
    connect(d->color_combo, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (d->updating_controls || index < 0) return;
        d->color_chosen_by_user = true;
        colorBy(d->color_combo->itemData(index).toString());
    });
    d->gene_edit = new QLineEdit(this);
    d->gene_edit->setObjectName(QStringLiteral("geneBox"));
    d->gene_edit->setPlaceholderText(tr("gene, e.g. CD3E"));
    d->gene_edit->setClearButtonEnabled(true);
    d->gene_edit->setMinimumWidth(110);
    d->gene_edit->setMaximumWidth(160);
    d->gene_names = new QStringListModel(this);
    auto* completer = new QCompleter(d->gene_names, this);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setFilterMode(Qt::MatchStartsWith);
    d->gene_edit->setCompleter(completer);
    // Clicking a suggestion colours by it (as Enter does).
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& gene) {
        if (gene.trimmed().isEmpty()) return;
        d->color_chosen_by_user = true;
        colorBy(QStringLiteral("gene:") + gene.trimmed());
    });
    bar->addWidget(d->gene_edit);
    connect(d->gene_edit, &QLineEdit::returnPressed, this, [this] {
        QString gene = d->gene_edit->text().trimmed();
        if (gene.isEmpty()) return;
        if (d->snapshot->var) {
            // Ignoring case, as the suggestions and the filter dock do.
            gene = QString::fromStdString(
                spell_gene(gene.toStdString(), d->snapshot->var->index(), gene_ids(*d->snapshot->var)));
        }
        d->color_chosen_by_user = true;
        colorBy(QStringLiteral("gene:") + gene);
    });
    bar->addWidget(new QLabel(tr(" Values "), this));
    d->layer_combo = new QComboBox(this);
    d->layer_combo->setObjectName(QStringLiteral("valueLayer"));
    d->layer_combo->addItem(tr("X as stored"), static_cast<int>(ValueLayer::Counts));
    d->layer_combo->addItem(tr("raw/X"), static_cast<int>(ValueLayer::Raw));
    d->layer_combo->addItem(tr("log-normalised counts"), static_cast<int>(ValueLayer::LogNorm));
    d->layer_combo->setToolTip(tr("Values of a gene for colouring and filters: X as the file stores it; the file's "
                                  "raw/X (as Scanpy's use_raw); or ln(1 + x * 10,000 / cell total) of raw counts"));
    bar->addWidget(d->layer_combo);
    connect(d->layer_combo, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (d->updating_controls || index < 0) return;
        setValueLayer(static_cast<ValueLayer>(d->layer_combo->itemData(index).toInt()));
    });
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Order "), this));
    d->order_combo = new QComboBox(this);
    d->order_combo->addItem(tr("file"), static_cast<int>(DrawOrder::File));
    d->order_combo->addItem(tr("random"), static_cast<int>(DrawOrder::Random));
    d->order_combo->addItem(tr("by value"), static_cast<int>(DrawOrder::ByValue));
    bar->addWidget(d->order_combo);
    connect(d->order_combo, &QComboBox::currentIndexChanged, this, [this](int index) {
        d->plot->setDrawOrder(static_cast<DrawOrder>(d->order_combo->itemData(index).toInt()), 0);
    });
    bar->addWidget(new QLabel(tr(" Density "), this));
    d->density_combo = new QComboBox(this);
    d->density_combo->addItem(tr("auto"), static_cast<int>(PlotView::DensityMode::Auto));
    d->density_combo->addItem(tr("on"), static_cast<int>(PlotView::DensityMode::On));
    d->density_combo->addItem(tr("off"), static_cast<int>(PlotView::DensityMode::Off));
    bar->addWidget(d->density_combo);
    connect(d->density_combo, &QComboBox::currentIndexChanged, this, [this](int index) {
        d->plot->setDensityMode(static_cast<PlotView::DensityMode>(d->density_combo->itemData(index).toInt()));
    });
    bar->addWidget(new QLabel(tr(" Size "), this));
    d->size_auto = new QCheckBox(tr("auto"), this);
    d->size_auto->setChecked(true);
    bar->addWidget(d->size_auto);
    d->size_slider = new QSlider(Qt::Horizontal, this);
    d->size_slider->setRange(1, 20);
    d->size_slider->setValue(3);
    d->size_slider->setMaximumWidth(90);
    d->size_slider->setEnabled(false);
    bar->addWidget(d->size_slider);
    connect(d->size_auto, &QCheckBox::toggled, this, [this](bool automatic) {
        d->size_slider->setEnabled(!automatic);
        if (automatic) d->plot->setAutoPointSize(true);
        else d->plot->setPointSize(static_cast<float>(d->size_slider->value()));
    });
    connect(d->size_slider, &QSlider::valueChanged, this,
            [this](int value) { d->plot->setPointSize(static_cast<float>(value)); });
    bar->addWidget(new QLabel(tr(" Opacity "), this));
    d->opacity_slider = new QSlider(Qt::Horizontal, this);
    d->opacity_slider->setRange(5, 100);
    d->opacity_slider->setValue(100);
    d->opacity_slider->setMaximumWidth(90);
    bar->addWidget(d->opacity_slider);
    connect(d->opacity_slider, &QSlider::valueChanged, this,
            [this](int value) { d->plot->setOpacity(static_cast<float>(value) / 100.0f); });
    bar->addWidget(new QLabel(tr(" Theme "), this));
    d->theme_combo = new QComboBox(this);
    d->theme_combo->addItem(tr("dark"), static_cast<int>(PlotView::Theme::Dark));
    d->theme_combo->addItem(tr("light"), static_cast<int>(PlotView::Theme::Light));
    bar->addWidget(d->theme_combo);
    connect(d->theme_combo, &QComboBox::currentIndexChanged, this, [this](int index) {
        d->plot->setTheme(static_cast<PlotView::Theme>(d->theme_combo->itemData(index).toInt()));
    });
    QAction* reset = bar->addAction(tr("Reset view"));
    connect(reset, &QAction::triggered, d->plot, &PlotView::resetView);
    refreshColorChoices();
}

void MainWindow::buildDocks() {
    auto* tabs = new QTabWidget(this);
    d->pipeline = new PipelinePanel(this);
    d->dataset = new DatasetPanel(this);
    auto* scroll = new QScrollArea(this);  // the form scrolls when the window is short
    scroll->setWidget(d->pipeline);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    tabs->addTab(scroll, tr("Pipeline"));
    tabs->addTab(d->dataset, tr("Dataset"));
    d->qc = new QcPanel(d->pipeline, this);
    d->qc->setObjectName(QStringLiteral("qcPanel"));
    auto* qc_scroll = new QScrollArea(this);
    qc_scroll->setWidget(d->qc);
    qc_scroll->setWidgetResizable(true);
    qc_scroll->setFrameShape(QFrame::NoFrame);
    tabs->addTab(qc_scroll, tr("QC"));
    d->analysis_tabs = tabs;
    auto* left = new QDockWidget(tr("Analysis"), this);
    left->setObjectName(QStringLiteral("analysisDock"));
    left->setWidget(tabs);
    left->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    // A small window may narrow the docks to this; enlarging it gives them their width back.
    left->setMinimumWidth(230);
    addDockWidget(Qt::LeftDockWidgetArea, left);
    d->analysis_dock = left;
    connect(d->pipeline, &PipelinePanel::runRequested, this, [this] { runPipeline(); });
    connect(d->dataset, &DatasetPanel::datasetOpened, d->pipeline, &PipelinePanel::suggestRecipe);
    connect(d->pipeline, &PipelinePanel::cancelRequested, this, &MainWindow::cancelJobs);

    d->filter = new FilterPanel([this] { return d->engine.get(); }, d->plot, this);
    d->filter->setObjectName(QStringLiteral("filterPanel"));
    auto* filter_scroll = new QScrollArea(this);
    filter_scroll->setWidget(d->filter);
    filter_scroll->setWidgetResizable(true);
    filter_scroll->setFrameShape(QFrame::NoFrame);
    auto* right = new QDockWidget(tr("Filter"), this);
    right->setObjectName(QStringLiteral("filterDock"));
    right->setWidget(filter_scroll);
    right->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
    right->setMinimumWidth(260);
    addDockWidget(Qt::RightDockWidgetArea, right);
    d->filter_dock = right;
    connect(this, &MainWindow::coloringApplied, d->filter, &FilterPanel::setColorKey);

    d->log = new QPlainTextEdit(this);
    d->log->setReadOnly(true);
    d->log->setMaximumBlockCount(5000);
    d->log->setObjectName(QStringLiteral("log"));
    auto* bottom = new QDockWidget(tr("Log"), this);
    bottom->setObjectName(QStringLiteral("logDock"));
    bottom->setWidget(d->log);
    bottom->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, bottom);
    resizeDocks({bottom}, {110}, Qt::Vertical);

    auto* markers = new QDockWidget(tr("Selection markers"), this);
    markers->setObjectName(QStringLiteral("markersDock"));
    markers->setWidget(d->selection->markersPanel());
    markers->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, markers);
    d->marker_plots = new MarkerPlotsPanel([this] { return d->engine.get(); }, d->watcher, this);
    d->marker_plots->setObjectName(QStringLiteral("markerPlots"));
    auto* plots = new QDockWidget(tr("Marker plots"), this);
    plots->setObjectName(QStringLiteral("markerPlotsDock"));
    plots->setWidget(d->marker_plots);
    plots->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::BottomDockWidgetArea, plots);
    tabifyDockWidget(bottom, plots);
    plots->hide();  // shown with the first column markers (View menu: Marker plots)
    bottom->raise();
    d->marker_plots_dock = plots;
    connect(d->selection, &SelectionWorkflow::columnMarkersReady, this, [this](const ObsMarkers& markers) {
        const Column* column = d->snapshot->obs ? d->snapshot->obs->find(markers.groupby) : nullptr;
        std::vector<std::int32_t> codes;
        std::vector<std::string> categories;
        if (!column || !obs_column_categories(*column, codes, categories)) return;
        d->marker_plots->showMarkers(markers, std::move(codes), std::move(categories));
        d->marker_plots_dock->show();
        d->marker_plots_dock->raise();
        // Once the dock is laid out: room for a plot of every group.
        QTimer::singleShot(0, this, [this] {
            resizeDocks({d->marker_plots_dock}, {std::max(300, height() / 2)}, Qt::Vertical);
        });
    });
    connect(d->selection->markersPanel(), &MarkersPanel::geneActivated, this, [this](const QString& gene) {
        d->color_chosen_by_user = true;
        d->gene_edit->setText(gene);
        colorBy(QStringLiteral("gene:") + gene);
    });
#ifdef FATHOM_HAS_VTK
    d->view3d = new Embedding3DDock(d->plot->model(), this);
    d->view3d->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                           QDockWidget::DockWidgetFloatable);
    // A tab beside the selection markers: opening it keeps the filter dock and the plot
    // their room instead of splitting the right column once more.
    addDockWidget(Qt::RightDockWidgetArea, d->view3d);
    tabifyDockWidget(markers, d->view3d);
    d->view3d->hide();
    connect(d->view3d->toggleViewAction(), &QAction::triggered, this, [this](bool checked) {
        if (checked) d->view3d->raise();
    });
#endif
}

// ---- accessors ----------------------------------------------------------------------

PlotView* MainWindow::plotView() const { return d->plot; }
QUndoStack* MainWindow::undoStack() const { return d->undo; }
SelectionWorkflow* MainWindow::selectionWorkflow() const { return d->selection; }

void MainWindow::refreshObs(const QString& color_key) {
    d->snapshot = d->engine->snapshot();
    refreshColorChoices();
    if (d->snapshot->obs && d->snapshot->obs->num_rows() == d->plot->numPoints()) show_hover_clusters(*d->plot, *d->snapshot);
    const QString key = color_key.isEmpty() ? d->color_key : color_key;
    if (key.startsWith(QStringLiteral("gene:"))) return;  // gene values do not depend on obs
    if (d->snapshot->obs && d->snapshot->obs->find(key.toStdString())) colorBy(key);
}
PipelinePanel* MainWindow::pipelinePanel() const { return d->pipeline; }
QcPanel* MainWindow::qcPanel() const { return d->qc; }
MarkerPlotsPanel* MainWindow::markerPlots() const { return d->marker_plots; }
void MainWindow::showAnalysisTab(const QString& name) {
    for (int index = 0; index < d->analysis_tabs->count(); ++index)
        if (d->analysis_tabs->tabText(index) == name) d->analysis_tabs->setCurrentIndex(index);
}
ValueLayer MainWindow::valueLayer() const { return d->plot->model()->valueLayer(); }

bool MainWindow::setValueLayer(ValueLayer layer) {
    const bool has_raw = d->snapshot->dataset && d->snapshot->dataset->has_raw;
    if (layer == ValueLayer::Raw && !has_raw) {
        log(tr("values: this dataset has no raw/X"));
        return false;
    }
    // The model tells its observers (the filter dock, the gene-set colouring and the
    // gene colouring below); the switch shows the layer either way.
    d->plot->model()->setValueLayer(layer);
    d->updating_controls = true;
    d->layer_combo->setCurrentIndex(std::max(0, d->layer_combo->findData(static_cast<int>(layer))));
    d->updating_controls = false;
    return true;
}

void MainWindow::syncValueLayerChoices() {
    const bool has_raw = d->snapshot->dataset && d->snapshot->dataset->has_raw;
    const MatrixContent content = d->snapshot->dataset ? d->snapshot->dataset->content.content : MatrixContent::Other;
    const bool counts = content == MatrixContent::RawCounts || content == MatrixContent::NonIntegerCounts;
    auto* model = qobject_cast<QStandardItemModel*>(d->layer_combo->model());
    if (QStandardItem* raw = model ? model->item(d->layer_combo->findData(static_cast<int>(ValueLayer::Raw))) : nullptr)
        raw->setEnabled(has_raw);
    if (QStandardItem* lognorm = model ? model->item(d->layer_combo->findData(static_cast<int>(ValueLayer::LogNorm))) : nullptr)
        lognorm->setToolTip(counts ? QString() : tr("X does not hold raw counts: ln(1 + x * 1e4 / total) of these values is not a normalisation"));
}
DatasetPanel* MainWindow::datasetPanel() const { return d->dataset; }
FilterPanel* MainWindow::filterPanel() const { return d->filter; }
JobWatcher* MainWindow::jobWatcher() const { return d->watcher; }
Engine& MainWindow::engine() const { return *d->engine; }
std::shared_ptr<const AnalysisSnapshot> MainWindow::snapshot() const { return d->snapshot; }
QString MainWindow::embeddingKey() const { return d->embedding_key; }
QString MainWindow::colorKey() const { return d->color_key; }
QString MainWindow::logText() const { return d->log->toPlainText(); }
bool MainWindow::busy() const { return d->busy; }
bool MainWindow::hasResults() const { return d->has_results; }
PipelineSettings MainWindow::lastRunSettings() const { return d->last_run; }

void MainWindow::log(const QString& line) {
    d->log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + line);
}

void MainWindow::setBusy(bool busy) {
    d->busy = busy;
    d->pipeline->setRunning(busy);
    d->status_cancel->setEnabled(busy);
    if (!busy) {
        d->progress->setValue(0);
        d->progress->setFormat(tr("idle"));
    }
}

void MainWindow::reportFailure(const QString& what, const JobStatus& status) {
    if (status.state == JobState::Cancelled) {
        log(tr("%1: cancelled").arg(what));
        d->status_label->setText(tr("%1 cancelled").arg(what));
        return;
    }
    const QString message = QString::fromStdString(status.message);
    log(tr("%1 failed (%2): %3").arg(what, QString::fromUtf8(failure_name(status.failure)), message));
    d->status_label->setText(tr("%1 failed: %2").arg(what, message));
    if (d->interactive) QMessageBox::warning(this, tr("Fathom"), tr("%1 failed:\n%2").arg(what, message));
}

void MainWindow::onProgress(const QString& label, const JobStatus& status) {
    if (label != QStringLiteral("open") && label != QStringLiteral("pipeline")) return;
    if (status.finished()) return;
    d->progress->setValue(static_cast<int>(std::lround(std::clamp(status.fraction, 0.0, 1.0) * 1000.0)));
    QString text = QString::fromStdString(status.stage.empty() ? status.name : status.stage);
    text += QStringLiteral("  %1%").arg(static_cast<int>(std::floor(status.fraction * 100.0)));
    if (status.eta_seconds >= 0.0) text += tr("  ETA %1").arg(seconds_text(status.eta_seconds));
    d->progress->setFormat(text);
    if (!status.message.empty()) d->status_label->setText(QString::fromStdString(status.message));
}

// ---- jobs ---------------------------------------------------------------------------

bool MainWindow::openFile(const QString& path) {
    // A session file (File > Open, the command line, a dropped file) reopens its dataset.
    if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) && QFileInfo(path).isFile()) return openSession(path);
    if (!QFileInfo::exists(path)) {
        const QString message = tr("%1: no such file or folder").arg(path);
        log(tr("open failed (input): %1").arg(message));
        d->status_label->setText(message);
        if (d->interactive) QMessageBox::warning(this, tr("Fathom"), message);
        emit datasetOpened(false, message, static_cast<int>(FailureKind::Input));
        return false;
    }
    if (d->run_after_open) {  // the same file again, on other devices: checked when first opened
        openCheckedFile(path);
        return true;
    }
    // Nothing of the open dataset is touched until the check has let the file through.
    log(tr("checking %1 in a separate process").arg(path));
    d->status_label->setText(tr("checking %1").arg(QFileInfo(path).fileName()));
    disconnect(&d->open_check, &OpenCheck::finished, this, nullptr);
    connect(&d->open_check, &OpenCheck::finished, this, [this, path](OpenCheck::Outcome outcome, const QString& message) {
        if (outcome == OpenCheck::Outcome::Refused) {
            log(tr("open refused (input): %1").arg(message));
            d->status_label->setText(message.section(QLatin1Char('\n'), 0, 0));
            if (d->interactive) QMessageBox::warning(this, tr("Fathom"), message);
            emit datasetOpened(false, message, static_cast<int>(FailureKind::Input));
            return;
        }
        if (!message.isEmpty()) log(message);
        openCheckedFile(path);
    });
    d->open_check.start(path);
    return true;
}

void MainWindow::openCheckedFile(const QString& path) {
    d->watcher->cancel(QStringLiteral("pipeline"));
    const bool reload = d->run_after_open;  // the same file again, on other devices
    d->current_path = QFileInfo(path).absoluteFilePath();
    d->frame_sequence = 0;
    d->color_chosen_by_user = false;
    d->has_results = false;
    if (!reload) resetDatasetState();
    d->unsaved = false;
    log(tr("open: %1").arg(d->current_path));
    setBusy(true);
    const JobHandle handle = d->engine->open(d->current_path.toStdString());
    d->watcher->watch(handle, QStringLiteral("open"), [this](const JobStatus& status) {
        setBusy(d->watcher->isWatching(QStringLiteral("pipeline")));
        if (status.state != JobState::Succeeded) {
            reportFailure(tr("open"), status);
            d->run_after_open = false;
            emit datasetOpened(false, QString::fromStdString(status.message), static_cast<int>(status.failure));
            return;
        }
        addRecentFile(d->current_path);
        setWindowTitle(QStringLiteral("Fathom — %1").arg(QFileInfo(d->current_path).fileName()));
        if (const auto opened = d->engine->snapshot(); opened->dataset) {
            // Genes are shown as Scanpy's plots show them for this kind of file.
            d->snapshot = opened;
            syncValueLayerChoices();
            setValueLayer(default_value_layer(*opened->dataset));
        }
        applySnapshot(false);
        const auto& shape = d->snapshot->dataset->shape;
        log(tr("opened %1: %2 cells x %3 genes in %4")
                .arg(QFileInfo(d->current_path).fileName())
                .arg(shape.num_cells)
                .arg(shape.num_genes)
                .arg(seconds_text(status.elapsed_seconds)));
        d->status_label->setText(tr("%1 cells x %2 genes").arg(shape.num_cells).arg(shape.num_genes));
        emit datasetOpened(true, QString(), 0);
        if (d->run_after_open) {
            d->run_after_open = false;
            startPipelineJob();
        }
    });
}

void MainWindow::resetDatasetState() {
    // Nothing indexed by the previous dataset's cells or chosen for its contents survives;
    // view preferences (theme, sizes, draw order, docks) do.
    d->watcher->cancel(QStringLiteral("gene"));
    d->watcher->cancel(QStringLiteral("filter"));
    d->watcher->cancel(QStringLiteral("markers"));
    ++d->gene_request;
    d->color_key.clear();
    d->gene_edit->clear();
    d->selection->reset();
    d->marker_plots->clear();
    FilterState filter;
    filter.layer = d->plot->model()->valueLayer();
    d->filter->setState(filter);
    d->undo->clear();
    d->pipeline->setSettings(PipelineSettings{});
    d->last_run = PipelineSettings{};
    d->plot->setUniformColor();
}

bool MainWindow::runPipeline() {
    const QString error = d->pipeline->validationError();
    if (!error.isEmpty()) {
        log(tr("run: %1").arg(error));
        emit pipelineFinished(false, error, static_cast<int>(FailureKind::Option));
        return false;
    }
    if (d->current_path.isEmpty() || !d->snapshot->dataset) {
        const QString message = tr("run: no dataset is open");
        log(message);
        emit pipelineFinished(false, message, static_cast<int>(FailureKind::Option));
        return false;
    }
    const std::string devices = d->pipeline->devices().toStdString();
    if (devices != d->config.devices) {
        // The device list is fixed when the engine is made: make a new one and reload.
        try {
            EngineConfig config{devices};
            auto engine = std::make_unique<Engine>(config);
            d->watcher->cancelAll();
            d->frame_timer->stop();
            d->engine = std::move(engine);
            d->config = config;
        } catch (const std::exception& failure) {
            const QString message = QString::fromUtf8(failure.what());
            log(tr("run: devices: %1").arg(message));
            emit pipelineFinished(false, message, static_cast<int>(FailureKind::Option));
            return false;
        }
        log(tr("devices changed to %1: reloading the dataset").arg(QString::fromStdString(devices)));
        d->run_after_open = true;
        return openFile(d->current_path);
    }
    startPipelineJob();
    return true;
}

void MainWindow::startPipelineJob() {
    JobHandle handle;
    const PipelineSettings settings = d->pipeline->settings();
    try {
        handle = d->engine->run(settings);
    } catch (const std::exception& failure) {
        const QString message = QString::fromUtf8(failure.what());
        log(tr("run: %1").arg(message));
        emit pipelineFinished(false, message, static_cast<int>(FailureKind::Option));
        return;
    }
    log(tr("pipeline: started"));
    setBusy(true);
    d->frame_timer->start();
    d->watcher->watch(handle, QStringLiteral("pipeline"), [this, settings](const JobStatus& status) {
        d->frame_timer->stop();
        setBusy(d->watcher->isWatching(QStringLiteral("open")));
        if (status.state != JobState::Succeeded) {
            reportFailure(tr("pipeline"), status);
            restoreLastCompleteState();
            emit pipelineFinished(false, QString::fromStdString(status.message), static_cast<int>(status.failure));
            return;
        }
        QStringList stages;
        const auto snapshot = d->engine->snapshot();
        for (const StageTiming& timing : status.timings) {
            if (timing.stage == "leiden" && snapshot->leiden && snapshot->leiden->beside_umap)
                // Leiden ran beside UMAP: its own time, not the moment it still needed after UMAP.
                stages << tr("leiden %1 beside umap").arg(seconds_text(snapshot->leiden->seconds));
            else
                stages << QStringLiteral("%1 %2").arg(QString::fromStdString(timing.stage), seconds_text(timing.wall_seconds));
        }
        log(stages.isEmpty() ? tr("pipeline: done in %1 (every step's result was current)").arg(seconds_text(status.elapsed_seconds))
                             : tr("pipeline: done in %1 (%2)").arg(seconds_text(status.elapsed_seconds), stages.join(QStringLiteral(", "))));
        d->status_label->setText(tr("pipeline done in %1").arg(seconds_text(status.elapsed_seconds)));
        for (const auto& warning : d->engine->snapshot()->warnings)
            log(tr("pipeline: warning: %1").arg(QString::fromStdString(warning)));
        d->has_results = true;
        d->unsaved = true;
        d->last_run = settings;
        applySnapshot(true);
        emit pipelineFinished(true, QString(), 0);
    });
}

void MainWindow::restoreLastCompleteState() {
    // A cancelled or failed run may have left UMAP frames on screen that look like a
    // result: show the engine's last complete state again (its cells, embedding, colours).
    if (d->frame_sequence == 0) return;
    d->frame_sequence = 0;
    d->snapshot = d->engine->snapshot();
    const auto it = d->snapshot->obsm.find(d->embedding_key.toStdString());
    if (d->embedding_key.isEmpty() || it == d->snapshot->obsm.end()) {
        applySnapshot(false);
        return;
    }
#ifdef FATHOM_HAS_VTK
    d->view3d->setSnapshot(*d->snapshot);
#endif
    const DenseMatrix<float>& matrix = *it->second;
    d->plot->setPositions(matrix.data(), matrix.rows(), matrix.cols(), PlotView::FitPolicy::FitUnlessUserMoved);
    if (!d->color_key.isEmpty()) colorBy(d->color_key);
}

void MainWindow::cancelJobs() {
    if (d->watcher->activeCount() == 0) return;
    log(tr("cancelling"));
    d->watcher->cancelAll();
}

void MainWindow::pollEmbeddingFrame() {
    const auto frame = d->engine->embedding_frame();
    if (!frame || frame->sequence == d->frame_sequence || frame->coordinates.rows() == 0) return;
    d->frame_sequence = frame->sequence;
    const auto& coordinates = frame->coordinates;
    const bool same_cells = coordinates.rows() == d->plot->numPoints();
    // Positions only: PlotView re-uploads them in batches and keeps the colouring.
    d->plot->setPositions(coordinates.data(), coordinates.rows(), coordinates.cols(),
                          same_cells ? PlotView::FitPolicy::FitUnlessUserMoved : PlotView::FitPolicy::Fit);
#ifdef FATHOM_HAS_VTK
    d->view3d->setFrame(coordinates);
#endif
    if (!same_cells && d->snapshot->obs && d->snapshot->obs->num_rows() == coordinates.rows() && !d->color_key.isEmpty())
        colorBy(d->color_key);
    d->status_label->setText(tr("UMAP epoch %1 / %2").arg(frame->epoch).arg(frame->total_epochs));
}

// ---- snapshot -> widgets ----------------------------------------------------------------

void MainWindow::applySnapshot(bool after_pipeline) {
    const auto previous = d->snapshot;
    d->snapshot = d->engine->snapshot();
    const bool same_file = previous->dataset && d->snapshot->dataset && previous->dataset->path == d->snapshot->dataset->path;
    if (!same_file || previous->cells != d->snapshot->cells) {
        // Selections and their undo states refer to the previous cells.
        d->selection->controller()->reset();
        d->undo->clear();
    }
    const AnalysisSnapshot& snapshot = *d->snapshot;
    d->dataset->setSummary(snapshot.dataset.get());
    d->qc->setSnapshot(d->snapshot);
    d->filter->setSnapshot(d->snapshot);
    QStringList genes;
    if (snapshot.var)
        for (const std::string& name : snapshot.var->index()) genes << QString::fromStdString(name);
    d->gene_names->setStringList(genes);

    // Embedding: X_umap, else X_tsne, else X_pca, else any 2+ column obsm whose rows match.
    const std::int64_t rows = snapshot.obs ? snapshot.obs->num_rows() : 0;
    QStringList keys;
    for (const auto& [key, matrix] : snapshot.obsm)
        if (matrix && matrix->rows() == rows && matrix->cols() >= 2) keys << QString::fromStdString(key);
    QString key = d->embedding_key;
    // After a run show its UMAP: X_umap, or X_umap_fathom where the file brought its own.
    if (after_pipeline)
        for (const char* result : {"X_umap_fathom", "X_umap"})
            if (keys.contains(QString::fromUtf8(result))) {
                key = QString::fromUtf8(result);
                break;
            }
    if (!keys.contains(key)) {
        key.clear();
        for (const char* preferred : {"X_umap", "X_tsne", "X_pca"})
            if (keys.contains(QString::fromUtf8(preferred))) {
                key = QString::fromUtf8(preferred);
                break;
            }
        if (key.isEmpty() && !keys.isEmpty()) key = keys.front();
    }
    d->updating_controls = true;
    d->embedding_combo->clear();
    d->embedding_combo->addItems(keys);
    d->embedding_combo->setCurrentText(key);
    d->updating_controls = false;
    refreshColorChoices();
#ifdef FATHOM_HAS_VTK
    d->view3d->setSnapshot(snapshot);
#endif
    if (key.isEmpty()) {
        d->embedding_key.clear();
        d->plot->setPositions(std::vector<float>{});
        d->plot->setEmptyHint(tr("No 2-D embedding in this dataset yet:\nrun the pipeline (Ctrl+R) to compute a UMAP"));
        log(tr("no 2-D embedding yet: run the pipeline"));
        return;
    }
    showEmbedding(key);

    // Colouring: keep the user's choice; after a run default to leiden.
    QString color = d->color_key;
    if ((!d->color_chosen_by_user || color.isEmpty()) && snapshot.obs && snapshot.obs->find("leiden"))
        color = QStringLiteral("leiden");
    if (color.startsWith(QStringLiteral("gene:")) || (snapshot.obs && snapshot.obs->find(color.toStdString())))
        colorBy(color);
    else
        colorBy(QString());
}

bool MainWindow::showEmbedding(const QString& key) {
    const auto it = d->snapshot->obsm.find(key.toStdString());
    if (it == d->snapshot->obsm.end() || !it->second || it->second->cols() < 2) return false;
    const DenseMatrix<float>& matrix = *it->second;
    const bool same_cells = matrix.rows() == d->plot->numPoints();
    const bool same_key = key == d->embedding_key;
    d->plot->setPositions(matrix.data(), matrix.rows(), matrix.cols(),
                          same_key && same_cells ? PlotView::FitPolicy::FitUnlessUserMoved : PlotView::FitPolicy::Fit);
    d->embedding_key = key;
    if (d->snapshot->obs && d->snapshot->obs->num_rows() == matrix.rows()) {
        d->plot->setCellNames(std::shared_ptr<const std::vector<std::string>>(d->snapshot->obs, &d->snapshot->obs->index()));
        show_hover_clusters(*d->plot, *d->snapshot);
    }
    if (!same_cells && !d->color_key.isEmpty()) colorBy(d->color_key);
    return true;
}

void MainWindow::refreshColorChoices() {
    d->updating_controls = true;
    d->color_combo->clear();
    d->color_combo->addItem(tr("(none)"), QString());
    if (d->snapshot->obs) {
        for (const Column& column : d->snapshot->obs->columns()) {
            if (const auto* strings = std::get_if<StringColumn>(&column.data)) {
                std::set<std::string> unique(strings->values.begin(), strings->values.end());
                if (unique.size() > k_max_plot_categories) continue;
            }
            const QString name = QString::fromStdString(column.name);
            d->color_combo->addItem(QStringLiteral("%1  [%2]").arg(name, QString::fromUtf8(column.type_name())), name);
        }
    }
    QStringList groupings;
    if (d->snapshot->obs)
        for (const Column& column : d->snapshot->obs->columns())
            if (std::holds_alternative<CategoricalColumn>(column.data) || std::holds_alternative<BoolColumn>(column.data))
                groupings << QString::fromStdString(column.name);
    d->selection->markersPanel()->setGroupingColumns(groupings);
    if (d->color_key.startsWith(QStringLiteral("gene:"))) d->color_combo->addItem(d->color_key, d->color_key);
    const int at = d->color_combo->findData(d->color_key);
    d->color_combo->setCurrentIndex(std::max(0, at));
    d->updating_controls = false;
}

bool MainWindow::colorBy(const QString& key) {
    PlotView* plot = d->plot;
    const auto finish = [this](const QString& applied) {
        d->color_key = applied;
        d->updating_controls = true;
        int at = d->color_combo->findData(applied);
        if (at < 0 && applied.startsWith(QStringLiteral("gene:"))) {
            d->color_combo->addItem(applied, applied);
            at = d->color_combo->count() - 1;
        }
        d->color_combo->setCurrentIndex(std::max(0, at));
        d->updating_controls = false;
        emit coloringApplied(applied);
    };
    if (key.isEmpty()) {
        plot->setUniformColor();
        finish(QString());
        return true;
    }
    if (key.startsWith(QStringLiteral("gene:"))) {
        const QString gene = key.mid(5).trimmed();
        if (gene.isEmpty() || !d->snapshot->dataset) {
            emit coloringFailed(key, tr("no gene name or no dataset"));
            return false;
        }
        d->watcher->cancel(QStringLiteral("gene"));  // the latest request wins
        const std::uint64_t request = ++d->gene_request;
        d->gene_timer.start();
        const Pending<GeneValues> pending = d->engine->gene_values(gene.toStdString(), d->plot->model()->valueLayer());
        d->watcher->watch(pending.handle(), QStringLiteral("gene"), [this, pending, key, request, finish](const JobStatus& status) {
            if (request != d->gene_request) return;  // superseded
            const auto values = pending.value();
            if (status.state != JobState::Succeeded || !values) {
                if (status.state == JobState::Cancelled) return;
                const QString message = QString::fromStdString(status.message);
                log(tr("colour by %1 failed: %2").arg(key, message));
                d->status_label->setText(message);
                emit coloringFailed(key, message);
                return;
            }
            if (static_cast<std::int64_t>(values->values.size()) != d->plot->numPoints()) {
                const QString message = tr("%1 has %2 values for %3 cells in the plot")
                                            .arg(key)
                                            .arg(values->values.size())
                                            .arg(d->plot->numPoints());
                log(message);
                emit coloringFailed(key, message);
                return;
            }
            const double query_ms = static_cast<double>(d->gene_timer.nsecsElapsed()) * 1e-6;
            d->gene_color_label = QStringLiteral("%1 (%2)").arg(QString::fromStdString(values->gene),
                                                                QString::fromUtf8(value_layer_label(values->layer)));
            d->plot->setContinuous(d->gene_color_label, values->values);
            log(tr("colour by %1: values in %2 ms").arg(key).arg(query_ms, 0, 'f', 1));
            finish(key);
        });
        return true;
    }
    const Column* column = d->snapshot->obs ? d->snapshot->obs->find(key.toStdString()) : nullptr;
    if (!column) {
        log(tr("colour by: no obs column '%1'").arg(key));
        emit coloringFailed(key, tr("no obs column '%1'").arg(key));
        return false;
    }
    const std::int64_t rows = d->snapshot->obs->num_rows();
    if (rows != plot->numPoints()) {
        // No embedding for these cells yet: remember the choice for when one arrives.
        d->color_key = key;
        return true;
    }
    const auto stored = d->snapshot->colors.find(key.toStdString());
    const std::vector<std::string>* stored_colors = stored == d->snapshot->colors.end() ? nullptr : &stored->second;
    QString error;
    if (!plot->model()->setObsColumn(*column, stored_colors, &error)) {
        emit coloringFailed(key, error);
        return false;
    }
    finish(key);
    return true;
}

void MainWindow::syncViewControls() {
    const PlotView* plot = d->plot;
    {
        const QSignalBlocker blocker(d->embedding_combo);
        d->embedding_combo->setCurrentText(d->embedding_key);
    }
    const auto select = [](QComboBox* combo, int value) {
        const QSignalBlocker blocker(combo);
        combo->setCurrentIndex(std::max(0, combo->findData(value)));
    };
    select(d->order_combo, static_cast<int>(plot->drawOrder()));
    select(d->density_combo, static_cast<int>(plot->densityMode()));
    select(d->theme_combo, static_cast<int>(plot->theme()));
    const QSignalBlocker size_blocker(d->size_slider), auto_blocker(d->size_auto), opacity_blocker(d->opacity_slider);
    d->size_auto->setChecked(plot->autoPointSize());
    d->size_slider->setEnabled(!plot->autoPointSize());
    if (!plot->autoPointSize()) d->size_slider->setValue(static_cast<int>(std::lround(plot->effectivePointSize())));
    d->opacity_slider->setValue(static_cast<int>(std::lround(plot->opacity() * 100.0f)));
}

// ---- recent files, drag and drop ------------------------------------------------------

QStringList MainWindow::recentFiles() const {
    return QSettings(QStringLiteral("Fathom"), QStringLiteral("Fathom")).value(QString::fromUtf8(k_recent_key)).toStringList();
}

void MainWindow::addRecentFile(const QString& path) {
    QSettings settings(QStringLiteral("Fathom"), QStringLiteral("Fathom"));
    QStringList files = settings.value(QString::fromUtf8(k_recent_key)).toStringList();
    files.removeAll(path);
    files.prepend(path);
    while (files.size() > k_max_recent_files) files.removeLast();
    settings.setValue(QString::fromUtf8(k_recent_key), files);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    d->recent_menu->clear();
    const QStringList files = recentFiles();
    for (const QString& path : files) {
        QAction* action = d->recent_menu->addAction(QFileInfo(path).fileName());
        action->setToolTip(path);
        action->setData(path);
        connect(action, &QAction::triggered, this, [this, path] { openFile(path); });
    }
    d->recent_menu->setEnabled(!files.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QMimeData* mime = event->mimeData();
    if (mime->hasUrls() && !mime->urls().isEmpty() && mime->urls().front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QMimeData* mime = event->mimeData();
    if (!mime->hasUrls() || mime->urls().isEmpty()) return;
    const QString path = mime->urls().front().toLocalFile();
    if (path.isEmpty()) return;
    event->acceptProposedAction();
    openFile(path);
}

bool MainWindow::hasUnsavedChanges() const { return d->unsaved; }

void MainWindow::resizeEvent(QResizeEvent* event) {
    QMainWindow::resizeEvent(event);
    if (!event->oldSize().isValid() || event->size().width() > event->oldSize().width())
        QTimer::singleShot(0, this, &MainWindow::restoreDockWidths);  // once the layout has the new size
}

bool MainWindow::event(QEvent* event) {
    // Separator drags reach the main window itself (the dock layout handles them there).
    const auto side_widths = [this] {
        return std::pair{d->analysis_dock ? d->analysis_dock->width() : -1, d->filter_dock ? d->filter_dock->width() : -1};
    };
    if (event->type() == QEvent::MouseButtonPress) d->widths_at_press = side_widths();
    const bool handled = QMainWindow::event(event);
    if (event->type() == QEvent::MouseButtonRelease && d->widths_at_press.first >= 0) {
        if (side_widths() != d->widths_at_press && isVisible()) {
            // Widths chosen by hand: what a larger window keeps (and gives back after a squeeze).
            d->dock_widths = {side_widths().first, side_widths().second};
        }
        d->widths_at_press = {-1, -1};
    }
    return handled;
}

void MainWindow::restoreDockWidths() {
    // The widths the docks had when the window was first shown (at least the defaults
    // below) are the ones they get back.
    if (d->dock_widths.empty()) {
        d->dock_widths = {std::max(k_analysis_width, d->analysis_dock->width()), std::max(k_filter_width, d->filter_dock->width())};
        if (!isVisible()) d->dock_widths.clear();
    }
    QList<QDockWidget*> docks;
    QList<int> widths;
    int needed = 0;
    for (const auto& [dock, preferred] : {std::pair{d->analysis_dock, d->dock_widths.empty() ? k_analysis_width : d->dock_widths[0]},
                                          std::pair{d->filter_dock, d->dock_widths.empty() ? k_filter_width : d->dock_widths[1]}}) {
        if (!dock || !dock->isVisible() || dock->isFloating() || dock->width() >= preferred) continue;
        docks << dock;
        widths << preferred;
        needed += preferred - dock->width();
    }
    if (docks.isEmpty() || d->plot->width() - needed < d->plot->minimumWidth()) return;
    resizeDocks(docks, widths, Qt::Horizontal);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (d->interactive && d->unsaved) {
        const auto answer = QMessageBox::question(
            this, tr("Fathom"),
            tr("The analysis, selections or annotations of %1 are not saved in a session.\nQuit anyway?")
                .arg(QFileInfo(d->current_path).fileName()),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
    }
    d->watcher->cancelAll();
    QMainWindow::closeEvent(event);
}

}  // namespace fathom::ui
