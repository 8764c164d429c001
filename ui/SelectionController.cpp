#include "ui/SelectionController.hpp"

#include <QUndoStack>
#include <algorithm>

#include "ui/PlotView.hpp"
#include "ui/StateCommand.hpp"

namespace fathom::ui {

SelectionController::SelectionController(PlotView* plot, QUndoStack* undo_stack, QObject* parent)
    : QObject(parent), m_plot(plot), m_undo(undo_stack), m_selection(std::make_shared<const CellSet>()) {
    connect(m_plot, &PlotView::selectionGesture, this, &SelectionController::applyHits);
}

SharedCellSet SelectionController::selection() const { return m_selection; }
std::int64_t SelectionController::count() const { return static_cast<std::int64_t>(m_selection->size()); }
std::vector<std::uint8_t> SelectionController::mask() const { return selection_mask(*m_selection, m_plot->numPoints()); }

void SelectionController::applyHits(const CellSet& hits, SelectionMode mode) {
    auto after = std::make_shared<const CellSet>(combine_selection(*m_selection, hits, mode));
    const QString text = tr("%1 selection (%2 cells)")
                             .arg(mode == SelectionMode::Replace ? tr("Replace")
                                  : mode == SelectionMode::Add   ? tr("Add to")
                                                                 : tr("Subtract from"))
                             .arg(hits.size());
    push(std::move(after), text);
}

void SelectionController::selectAll() {
    CellSet all(static_cast<std::size_t>(m_plot->numPoints()));
    for (std::size_t cell = 0; cell < all.size(); ++cell) all[cell] = static_cast<std::uint32_t>(cell);
    push(std::make_shared<const CellSet>(std::move(all)), tr("Select all"));
}

void SelectionController::clear() { push(std::make_shared<const CellSet>(), tr("Select none")); }

void SelectionController::invert() {
    push(std::make_shared<const CellSet>(complement(*m_selection, m_plot->numPoints())), tr("Invert selection"));
}

void SelectionController::setSelection(CellSet cells, const QString& text) {
    std::sort(cells.begin(), cells.end());
    cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
    push(std::make_shared<const CellSet>(std::move(cells)), text);
}

void SelectionController::reset() { show(std::make_shared<const CellSet>()); }

void SelectionController::push(SharedCellSet after, const QString& text) {
    if (*after == *m_selection) return;
    m_undo->push(new StateCommand<SharedCellSet>(text, m_selection, std::move(after),
                                                 [this](const SharedCellSet& cells) { show(cells); }));
}

void SelectionController::show(const SharedCellSet& cells) {
    m_selection = cells;
    m_plot->setSelection(cells);
    emit selectionChanged(static_cast<qint64>(cells->size()));
}

}  // namespace fathom::ui
