#pragma once
/// The explorer's cell selection: owns the current selection, turns PlotView's lasso and
/// rectangle gestures into undoable changes on the window's QUndoStack (StateCommand),
/// and shows the selection in the plot.
#include <QObject>
#include <QString>
#include <cstdint>
#include <vector>

#include "ui/CellSelection.hpp"

class QUndoStack;

namespace fathom::ui {

class PlotView;

/// Selection state of one plot. All methods are for the GUI thread.
class SelectionController : public QObject {
    Q_OBJECT
public:
    /// Listens to `plot`'s selection gestures; pushes commands onto `undo_stack`
    /// (neither is owned; both must outlive the controller).
    SelectionController(PlotView* plot, QUndoStack* undo_stack, QObject* parent = nullptr);

    /// The selected cells, ascending (never null).
    SharedCellSet selection() const;
    std::int64_t count() const;
    /// num_cells flags (the plot's cells), 1 = selected.
    std::vector<std::uint8_t> mask() const;

    /// Combines `hits` with the selection by `mode` as one undoable step (nothing is
    /// pushed when the selection does not change).
    void applyHits(const CellSet& hits, SelectionMode mode);
    /// Undoable: every cell of the plot / none / the cells not selected.
    void selectAll();
    void clear();
    void invert();
    /// Undoable: replaces the selection (e.g. cells from a mask); `text` names the step.
    void setSelection(CellSet cells, const QString& text);
    /// Drops the selection without an undo step (the cells changed: a new dataset or
    /// analysis); the caller clears the undo stack, whose states refer to the old cells.
    void reset();

signals:
    /// The selection changed (by a command, its undo or redo, or reset()).
    void selectionChanged(qint64 count);

private:
    void push(SharedCellSet after, const QString& text);
    void show(const SharedCellSet& cells);

    PlotView* m_plot;
    QUndoStack* m_undo;
    SharedCellSet m_selection;
};

}  // namespace fathom::ui
