#pragma once
/// What the explorer does with a selection: the selection tools (pan / lasso / rectangle,
/// replace / add / subtract) and Edit menu (undo, redo, select all / none / invert),
/// saving a selection or any cell mask as a categorical obs column, renaming and
/// merging categories, the selection's marker genes (MarkersPanel), and the barcode and
/// marker-table exports. Talks to the engine through MainWindow's public API.
#include <QObject>
#include <QString>
#include <cstdint>
#include <vector>

#include "core/engine/Engine.hpp"
#include "ui/CategoryEdits.hpp"
#include "ui/CellSelection.hpp"

class QActionGroup;
class QMenu;
class QToolBar;
class QUndoStack;

namespace fathom::ui {

class MainWindow;
class MarkersPanel;
class SelectionController;

/// One per MainWindow. All methods are for the GUI thread; engine requests return at
/// once and report through the signals.
class SelectionWorkflow : public QObject {
    Q_OBJECT
public:
    /// `interactive` = false: no dialogs (tests and scripted runs).
    SelectionWorkflow(MainWindow& window, QUndoStack* undo_stack, bool interactive);

    /// Adds the tool and mode buttons to `toolbar`, Undo / Redo and the selection
    /// commands to `edit`, and the annotation / marker / export commands to `selection`.
    void addActions(QToolBar* toolbar, QMenu* edit, QMenu* selection);

    SelectionController* controller() const { return m_controller; }
    MarkersPanel* markersPanel() const { return m_markers; }

    /// Saves the cells with mask[cell] = 1 (plot / obs order) as `category` of the obs
    /// column `column`: a new column (others "rest"), or the existing categorical column
    /// (others keep their category). Ends with annotationSaved. False when refused at once
    /// (empty names, wrong mask size, an existing column that is not categorical).
    bool saveMaskAsAnnotation(const QString& column, const QString& category, const std::vector<std::uint8_t>& mask);
    /// Renames category `index` of the categorical obs column `column` (in place).
    bool renameCategory(const QString& column, int index, const QString& name);
    /// Merges categories `indices` of `column` into one called `name` (in place).
    bool mergeCategories(const QString& column, const std::vector<int>& indices, const QString& name);
    /// Marker genes of the selection against the rest or the stored reference
    /// (markersFinished; the table shows them).
    bool computeMarkers(bool versus_reference);
    /// Marker genes of every group of the categorical obs column `column` against the rest
    /// (markersFinished; the table shows the first group, the panel's chooser the others).
    bool computeColumnMarkers(const QString& column);
    /// Stores the current selection as the reference group of computeMarkers(true).
    void setReferenceFromSelection();
    std::int64_t referenceCount() const;
    /// Forgets everything indexed by the current cells: the selection, the reference and
    /// the marker table (a new dataset is open).
    void reset();
    /// Writes the selected cells' barcodes / the markers table shown (exportFinished).
    bool exportSelectedBarcodes(const QString& path);
    bool exportMarkersCsv(const QString& path);

signals:
    void annotationSaved(bool ok, const QString& column, const QString& message);
    void markersFinished(bool ok, const QString& message);
    /// A column's markers are in the table (emitted before markersFinished).
    void columnMarkersReady(const fathom::ObsMarkers& markers);
    void exportFinished(bool ok, const QString& path, const QString& message);
    /// A line for the window's log.
    void logMessage(const QString& line);

private:
    bool submitAnnotation(const QString& column, const QString& what, CategoricalEdit edit);
    bool refuse(const QString& what, const QString& message);
    void saveSelectionDialog();
    /// The cells that pass the filter panel's filter, saved like a selection.
    void saveFilterDialog();
    void saveMaskDialog(const QString& title, const std::vector<std::uint8_t>& mask, std::int64_t count,
                        const QString& default_category);
    void renameDialog();
    void mergeDialog();
    QString categoricalColumnForDialog();

    MainWindow& m_window;
    QUndoStack* m_undo;
    bool m_interactive;
    SelectionController* m_controller;
    MarkersPanel* m_markers;
    SharedCellSet m_reference;
    std::uint64_t m_markers_request = 0;
};

}  // namespace fathom::ui
