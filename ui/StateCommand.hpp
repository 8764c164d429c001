#pragma once
/// A generic undo command: a state before and after a change and the function that
/// applies a state. The selection pushes these onto the window's QUndoStack; any other
/// view state (e.g. a filter's mask) can push its own with the same stack, so Edit > Undo
/// walks back through all of them in order.
#include <QUndoCommand>
#include <functional>
#include <utility>

namespace fathom::ui {

/// Undo applies `before`, redo applies `after` (QUndoStack::push calls redo() once, so
/// the change is made by pushing the command). States are values: keep them cheap to
/// copy (e.g. shared_ptr to an immutable state).
template <typename State>
class StateCommand : public QUndoCommand {
public:
    using Apply = std::function<void(const State&)>;
    StateCommand(const QString& text, State before, State after, Apply apply, QUndoCommand* parent = nullptr)
        : QUndoCommand(text, parent), m_before(std::move(before)), m_after(std::move(after)), m_apply(std::move(apply)) {}

    void undo() override { m_apply(m_before); }
    void redo() override { m_apply(m_after); }
    const State& before() const noexcept { return m_before; }
    const State& after() const noexcept { return m_after; }

private:
    State m_before;
    State m_after;
    Apply m_apply;
};

}  // namespace fathom::ui
