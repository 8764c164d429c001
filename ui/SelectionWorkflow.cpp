#include "ui/SelectionWorkflow.hpp"

#include <QAction>
#include <QActionGroup>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QStatusBar>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "core/engine/palette.hpp"
#include "ui/FilterPanel.hpp"
#include "ui/JobWatcher.hpp"
#include "ui/MainWindow.hpp"
#include "ui/MarkersPanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionController.hpp"

namespace fathom::ui {

namespace {

/// The categorical column `name` of the snapshot's obs with its colours, or null.
const CategoricalColumn* categorical_of(const AnalysisSnapshot& snapshot, const std::string& name) {
    const Column* column = snapshot.obs ? snapshot.obs->find(name) : nullptr;
    return column ? std::get_if<CategoricalColumn>(&column->data) : nullptr;
}

CategoricalEdit edit_of(const AnalysisSnapshot& snapshot, const std::string& name, const CategoricalColumn& column) {
    CategoricalEdit edit;
    edit.categories = column.categories;
    edit.codes = column.codes;
    const auto stored = snapshot.colors.find(name);
    if (stored != snapshot.colors.end() && stored->second.size() == column.categories.size()) edit.colors = stored->second;
    else edit.colors = fathom::default_category_colors(column.categories.size());
    return edit;
}

}  // namespace

SelectionWorkflow::SelectionWorkflow(MainWindow& window, QUndoStack* undo_stack, bool interactive)
    : QObject(&window), m_window(window), m_undo(undo_stack), m_interactive(interactive),
      m_reference(std::make_shared<const CellSet>()) {
    m_controller = new SelectionController(window.plotView(), undo_stack, this);
    m_markers = new MarkersPanel;
    m_markers->setObjectName(QStringLiteral("markersPanel"));
    connect(m_markers, &MarkersPanel::computeRequested, this, [this](bool versus_reference) { computeMarkers(versus_reference); });
    connect(m_markers, &MarkersPanel::columnMarkersRequested, this, [this](const QString& column) { computeColumnMarkers(column); });
    connect(m_markers, &MarkersPanel::referenceRequested, this, &SelectionWorkflow::setReferenceFromSelection);
    connect(m_markers, &MarkersPanel::exportRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(&m_window, tr("Export markers"), QStringLiteral("markers.csv"),
                                                          tr("CSV (*.csv)"));
        if (!path.isEmpty()) exportMarkersCsv(path);
    });
    connect(m_controller, &SelectionController::selectionChanged, this, [this](qint64 count) {
        m_window.statusBar()->showMessage(tr("%1 cells selected").arg(count), 4000);
    });
}

void SelectionWorkflow::addActions(QToolBar* toolbar, QMenu* edit, QMenu* selection) {
    PlotView* plot = m_window.plotView();
    toolbar->addSeparator();
    auto* tools = new QActionGroup(this);
    const auto add_tool = [&](const QString& text, const QString& name, const QKeySequence& key, PlotView::Tool tool) {
        QAction* action = toolbar->addAction(tr("%1 (%2)").arg(text, key.toString()));
        action->setObjectName(name);
        action->setCheckable(true);
        action->setShortcut(key);
        action->setToolTip(tr("%1 (%2)").arg(text, key.toString()));
        action->setChecked(plot->tool() == tool);
        tools->addAction(action);
        connect(action, &QAction::triggered, plot, [plot, tool] { plot->setTool(tool); });
    };
    add_tool(tr("Pan"), QStringLiteral("toolPan"), QKeySequence(Qt::Key_P), PlotView::Tool::Pan);
    add_tool(tr("Lasso"), QStringLiteral("toolLasso"), QKeySequence(Qt::Key_L), PlotView::Tool::Lasso);
    add_tool(tr("Rectangle"), QStringLiteral("toolRectangle"), QKeySequence(Qt::Key_B), PlotView::Tool::Rectangle);
    auto* modes = new QActionGroup(this);
    const auto add_mode = [&](const QString& text, const QString& name, const QString& tip, SelectionMode mode) {
        QAction* action = toolbar->addAction(text);
        action->setObjectName(name);
        action->setCheckable(true);
        action->setToolTip(tip);
        action->setChecked(plot->selectionMode() == mode);
        modes->addAction(action);
        connect(action, &QAction::triggered, plot, [plot, mode] { plot->setSelectionMode(mode); });
    };
    add_mode(tr("New"), QStringLiteral("modeReplace"), tr("A selection gesture replaces the selection"), SelectionMode::Replace);
    add_mode(tr("Add"), QStringLiteral("modeAdd"), tr("A selection gesture adds cells (or hold Shift)"), SelectionMode::Add);
    add_mode(tr("Subtract"), QStringLiteral("modeSubtract"), tr("A selection gesture removes cells (or hold Alt or Ctrl)"),
             SelectionMode::Subtract);

    QAction* undo = m_undo->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = m_undo->createRedoAction(this, tr("&Redo"));
    // Ctrl+Shift+Z and Ctrl+Y; QKeySequence::Redo is Ctrl+Shift+Z on Linux, and binding it
    // twice makes the shortcut ambiguous (neither fires).
    redo->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    QAction* all = edit->addAction(tr("Select &all"), m_controller, &SelectionController::selectAll);
    all->setShortcut(QKeySequence::SelectAll);
    QAction* none = edit->addAction(tr("Select &none"), m_controller, &SelectionController::clear);
    none->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
    QAction* invert = edit->addAction(tr("&Invert selection"), m_controller, &SelectionController::invert);
    invert->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));

    selection->addAction(tr("&Save selection as obs column..."), this, &SelectionWorkflow::saveSelectionDialog);
    selection->addAction(tr("Save &filtered cells as obs column..."), this, &SelectionWorkflow::saveFilterDialog);
    selection->addAction(tr("&Rename category..."), this, &SelectionWorkflow::renameDialog);
    selection->addAction(tr("&Merge categories..."), this, &SelectionWorkflow::mergeDialog);
    selection->addSeparator();
    selection->addAction(tr("Markers of selection vs &rest"), this, [this] { computeMarkers(false); });
    selection->addAction(tr("Set selection as markers r&eference"), this, &SelectionWorkflow::setReferenceFromSelection);
    selection->addAction(tr("Markers of selection vs re&ference"), this, [this] { computeMarkers(true); });
    selection->addSeparator();
    selection->addAction(tr("Export selected &barcodes..."), this, [this] {
        const QString path = QFileDialog::getSaveFileName(&m_window, tr("Export selected barcodes"),
                                                          QStringLiteral("selected_barcodes.txt"), tr("Text (*.txt)"));
        if (!path.isEmpty()) exportSelectedBarcodes(path);
    });
}

bool SelectionWorkflow::refuse(const QString& what, const QString& message) {
    emit logMessage(tr("%1: %2").arg(what, message));
    m_window.statusBar()->showMessage(tr("%1: %2").arg(what, message), 8000);
    if (m_interactive) QMessageBox::warning(&m_window, tr("Fathom"), tr("%1:\n%2").arg(what, message));
    return false;
}

// ---- annotations --------------------------------------------------------------------

bool SelectionWorkflow::submitAnnotation(const QString& column, const QString& what, CategoricalEdit edit) {
    const auto snapshot = m_window.snapshot();
    ObsAnnotation annotation;
    annotation.name = column.toStdString();
    annotation.categories = std::move(edit.categories);
    annotation.codes = std::move(edit.codes);
    annotation.colors = std::move(edit.colors);
    annotation.cells = snapshot->cells;  // the codes follow this snapshot's obs rows
    const JobHandle handle = m_window.engine().set_obs_annotation(std::move(annotation));
    m_window.jobWatcher()->watch(handle, QStringLiteral("annotate"), [this, column, what](const JobStatus& status) {
        if (status.state != JobState::Succeeded) {
            const QString message = QString::fromStdString(status.message);
            refuse(what, message);
            emit annotationSaved(false, column, message);
            return;
        }
        m_window.refreshObs(column);
        emit logMessage(tr("%1: obs['%2'] updated").arg(what, column));
        emit annotationSaved(true, column, QString());
    });
    return true;
}

bool SelectionWorkflow::saveMaskAsAnnotation(const QString& column, const QString& category,
                                             const std::vector<std::uint8_t>& mask) {
    const QString what = tr("save as obs column");
    const auto snapshot = m_window.snapshot();
    if (!snapshot->obs) return refuse(what, tr("no dataset is open"));
    if (column.trimmed().isEmpty()) return refuse(what, tr("the column name is empty"));
    if (static_cast<std::int64_t>(mask.size()) != snapshot->obs->num_rows())
        return refuse(what, tr("%1 flags for %2 cells").arg(mask.size()).arg(snapshot->obs->num_rows()));
    const std::string name = column.toStdString();
    const Column* existing = snapshot->obs->find(name);
    const CategoricalColumn* categorical = categorical_of(*snapshot, name);
    if (existing && !categorical)
        return refuse(what, tr("obs column '%1' exists and is not categorical; choose another name").arg(column));
    try {
        CategoricalEdit edit;
        if (categorical) {
            const CategoricalEdit current = edit_of(*snapshot, name, *categorical);
            edit = annotate_cells(&current, mask, category.toStdString());
        } else {
            edit = annotate_cells(nullptr, mask, category.toStdString());
        }
        return submitAnnotation(column, what, std::move(edit));
    } catch (const std::invalid_argument& error) {
        return refuse(what, QString::fromUtf8(error.what()));
    }
}

bool SelectionWorkflow::renameCategory(const QString& column, int index, const QString& name) {
    const QString what = tr("rename category");
    const auto snapshot = m_window.snapshot();
    const CategoricalColumn* categorical = categorical_of(*snapshot, column.toStdString());
    if (!categorical) return refuse(what, tr("obs column '%1' is not categorical").arg(column));
    try {
        return submitAnnotation(column, what,
                                rename_category(edit_of(*snapshot, column.toStdString(), *categorical), index, name.toStdString()));
    } catch (const std::invalid_argument& error) {
        return refuse(what, QString::fromUtf8(error.what()));
    }
}

bool SelectionWorkflow::mergeCategories(const QString& column, const std::vector<int>& indices, const QString& name) {
    const QString what = tr("merge categories");
    const auto snapshot = m_window.snapshot();
    const CategoricalColumn* categorical = categorical_of(*snapshot, column.toStdString());
    if (!categorical) return refuse(what, tr("obs column '%1' is not categorical").arg(column));
    try {
        return submitAnnotation(column, what,
                                merge_categories(edit_of(*snapshot, column.toStdString(), *categorical), indices, name.toStdString()));
    } catch (const std::invalid_argument& error) {
        return refuse(what, QString::fromUtf8(error.what()));
    }
}

// ---- markers and exports ----------------------------------------------------------------

void SelectionWorkflow::setReferenceFromSelection() {
    m_reference = m_controller->selection();
    m_markers->setReferenceCount(static_cast<qint64>(m_reference->size()));
    emit logMessage(tr("markers reference: %1 cells").arg(m_reference->size()));
}

void SelectionWorkflow::reset() {
    ++m_markers_request;  // a result still on its way belongs to the previous cells
    m_reference = std::make_shared<const CellSet>();
    m_controller->reset();
    m_markers->clear();
}

std::int64_t SelectionWorkflow::referenceCount() const { return static_cast<std::int64_t>(m_reference->size()); }

bool SelectionWorkflow::computeMarkers(bool versus_reference) {
    const QString what = tr("markers");
    if (m_controller->count() == 0) {
        m_markers->setStatus(tr("select cells first"));
        return refuse(what, tr("no cells are selected"));
    }
    if (versus_reference && m_reference->empty()) return refuse(what, tr("no reference selection is set"));
    const std::int64_t num_cells = m_window.plotView()->numPoints();
    std::vector<std::uint8_t> reference;
    if (versus_reference) reference = selection_mask(*m_reference, num_cells);
    MaskMarkersOptions options;
    options.method = m_markers->method();
    Pending<MaskMarkers> pending;
    try {
        pending = m_window.engine().mask_markers(m_controller->mask(), std::move(reference), options);
    } catch (const std::invalid_argument& error) {
        return refuse(what, QString::fromUtf8(error.what()));
    }
    const std::uint64_t request = ++m_markers_request;
    m_markers->setStatus(tr("computing markers of %1 cells...").arg(m_controller->count()));
    m_window.jobWatcher()->watch(pending.handle(), QStringLiteral("markers"), [this, pending, request, what](const JobStatus& status) {
        if (request != m_markers_request) return;  // a newer request replaces this one
        const auto result = pending.value();
        if (status.state != JobState::Succeeded || !result) {
            const QString message = status.state == JobState::Cancelled ? tr("cancelled") : QString::fromStdString(status.message);
            m_markers->setStatus(tr("markers failed: %1").arg(message));
            emit logMessage(tr("markers failed: %1").arg(message));
            emit markersFinished(false, message);
            return;
        }
        m_markers->setResult(*result);
        emit logMessage(tr("markers: %1 selected vs %2 %3 cells in %4 s")
                            .arg(result->num_group_cells)
                            .arg(result->num_reference_cells)
                            .arg(QString::fromStdString(result->reference))
                            .arg(status.elapsed_seconds, 0, 'f', 2));
        emit markersFinished(true, QString());
    });
    return true;
}

bool SelectionWorkflow::computeColumnMarkers(const QString& column) {
    const QString what = tr("markers");
    MaskMarkersOptions options;
    options.method = m_markers->method();
    const Pending<ObsMarkers> pending = m_window.engine().obs_markers(column.toStdString(), options);
    const std::uint64_t request = ++m_markers_request;
    m_markers->setStatus(tr("computing markers of the groups of %1...").arg(column));
    m_window.jobWatcher()->watch(pending.handle(), QStringLiteral("markers"), [this, pending, request, column](const JobStatus& status) {
        if (request != m_markers_request) return;
        const auto result = pending.value();
        if (status.state != JobState::Succeeded || !result) {
            const QString message = status.state == JobState::Cancelled ? tr("cancelled") : QString::fromStdString(status.message);
            m_markers->setStatus(tr("markers failed: %1").arg(message));
            emit logMessage(tr("markers failed: %1").arg(message));
            emit markersFinished(false, message);
            return;
        }
        m_markers->setColumnResult(*result);
        emit columnMarkersReady(*result);
        emit logMessage(tr("markers: %1 groups of %2 vs rest (%3) in %4 s")
                            .arg(result->groups.size())
                            .arg(column, QString::fromUtf8(value_layer_label(result->layer)))
                            .arg(status.elapsed_seconds, 0, 'f', 2));
        emit markersFinished(true, QString());
    });
    return true;
}

bool SelectionWorkflow::exportSelectedBarcodes(const QString& path) {
    if (m_controller->count() == 0) return refuse(tr("export barcodes"), tr("no cells are selected"));
    const JobHandle handle = m_window.engine().export_barcodes(path.toStdString(), m_controller->mask());
    const qint64 count = m_controller->count();
    m_window.jobWatcher()->watch(handle, QStringLiteral("export"), [this, path, count](const JobStatus& status) {
        const bool ok = status.state == JobState::Succeeded;
        const QString message = QString::fromStdString(status.message);
        if (ok) emit logMessage(tr("export: wrote %1 barcodes to %2").arg(count).arg(path));
        else refuse(tr("export barcodes"), message);
        emit exportFinished(ok, path, message);
    });
    return true;
}

bool SelectionWorkflow::exportMarkersCsv(const QString& path) {
    if (!m_markers->hasResult()) return refuse(tr("export markers"), tr("no marker table is shown"));
    const JobHandle handle = m_window.engine().export_markers_csv(path.toStdString(), m_markers->model()->markers());
    m_window.jobWatcher()->watch(handle, QStringLiteral("export"), [this, path](const JobStatus& status) {
        const bool ok = status.state == JobState::Succeeded;
        const QString message = QString::fromStdString(status.message);
        if (ok) emit logMessage(tr("export: wrote markers to %1").arg(path));
        else refuse(tr("export markers"), message);
        emit exportFinished(ok, path, message);
    });
    return true;
}

// ---- dialogs ----------------------------------------------------------------------------

QString SelectionWorkflow::categoricalColumnForDialog() {
    const auto snapshot = m_window.snapshot();
    QStringList columns;
    if (snapshot->obs)
        for (const Column& column : snapshot->obs->columns())
            if (std::holds_alternative<CategoricalColumn>(column.data)) columns << QString::fromStdString(column.name);
    if (columns.isEmpty()) {
        refuse(tr("categories"), tr("obs has no categorical column"));
        return {};
    }
    const int current = std::max<int>(0, static_cast<int>(columns.indexOf(m_window.colorKey())));
    bool ok = false;
    const QString column = QInputDialog::getItem(&m_window, tr("Categories"), tr("obs column:"), columns, current, false, &ok);
    return ok ? column : QString();
}

void SelectionWorkflow::saveSelectionDialog() {
    if (m_controller->count() == 0) {
        refuse(tr("save as obs column"), tr("no cells are selected"));
        return;
    }
    saveMaskDialog(tr("Save selection"), m_controller->mask(), m_controller->count(), QStringLiteral("selected"));
}

void SelectionWorkflow::saveFilterDialog() {
    const FilterPanel* panel = m_window.filterPanel();
    const auto mask = panel ? panel->mask() : nullptr;
    if (!mask) {
        refuse(tr("save filtered cells as obs column"), tr("no filter is applied"));
        return;
    }
    const auto count = static_cast<std::int64_t>(std::count_if(mask->begin(), mask->end(), [](std::uint8_t in) { return in != 0; }));
    saveMaskDialog(tr("Save filtered cells"), *mask, count, QStringLiteral("matching"));
}

void SelectionWorkflow::saveMaskDialog(const QString& title, const std::vector<std::uint8_t>& mask, std::int64_t count,
                                       const QString& default_category) {
    const auto snapshot = m_window.snapshot();
    QStringList columns{QStringLiteral("selection")};
    if (snapshot->obs)
        for (const Column& column : snapshot->obs->columns())
            if (std::holds_alternative<CategoricalColumn>(column.data) && column.name != "selection")
                columns << QString::fromStdString(column.name);
    bool ok = false;
    const QString column = QInputDialog::getItem(&m_window, title, tr("obs column (new, or an existing categorical column):"),
                                                 columns, 0, true, &ok);
    if (!ok || column.trimmed().isEmpty()) return;
    const QString category = QInputDialog::getText(&m_window, title, tr("category of the %1 cells:").arg(count),
                                                   QLineEdit::Normal, default_category, &ok);
    if (!ok) return;
    saveMaskAsAnnotation(column.trimmed(), category.trimmed(), mask);
}

void SelectionWorkflow::renameDialog() {
    const QString column = categoricalColumnForDialog();
    if (column.isEmpty()) return;
    const auto* categorical = categorical_of(*m_window.snapshot(), column.toStdString());
    if (!categorical) return;
    QStringList categories;
    for (const auto& category : categorical->categories) categories << QString::fromStdString(category);
    bool ok = false;
    const QString category = QInputDialog::getItem(&m_window, tr("Rename category"), tr("category:"), categories, 0, false, &ok);
    if (!ok) return;
    const QString name = QInputDialog::getText(&m_window, tr("Rename category"), tr("new name of '%1':").arg(category),
                                               QLineEdit::Normal, category, &ok);
    if (ok) renameCategory(column, static_cast<int>(categories.indexOf(category)), name.trimmed());
}

void SelectionWorkflow::mergeDialog() {
    const QString column = categoricalColumnForDialog();
    if (column.isEmpty()) return;
    const auto* categorical = categorical_of(*m_window.snapshot(), column.toStdString());
    if (!categorical) return;
    QDialog dialog(&m_window);
    dialog.setWindowTitle(tr("Merge categories of %1").arg(column));
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(new QLabel(tr("Categories to merge:"), &dialog));
    auto* list = new QListWidget(&dialog);
    list->setSelectionMode(QAbstractItemView::MultiSelection);
    for (const auto& category : categorical->categories) list->addItem(QString::fromStdString(category));
    layout->addWidget(list);
    layout->addWidget(new QLabel(tr("Name of the merged category:"), &dialog));
    auto* name = new QLineEdit(&dialog);
    layout->addWidget(name);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    connect(list, &QListWidget::itemSelectionChanged, name, [list, name] {
        const auto selected = list->selectedItems();
        if (!selected.isEmpty() && name->text().isEmpty()) name->setText(selected.front()->text());
    });
    if (dialog.exec() != QDialog::Accepted) return;
    std::vector<int> indices;
    for (const QModelIndex& index : list->selectionModel()->selectedIndexes()) indices.push_back(index.row());
    mergeCategories(column, indices, name->text().trimmed());
}

}  // namespace fathom::ui
