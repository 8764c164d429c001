#pragma once
/// One pipeline step's state: the Options it last ran with, the versions of the inputs
/// it ran on, its Result and its own version. A step re-runs exactly when its Options or
/// an upstream version changed; the versions come from one counter per engine, so a
/// result that was recomputed never has the version of the one it replaced.
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace fathom::detail {

template <typename Options, typename Result>
class StepState {
public:
    /// Makes the result current for `options` on `inputs` (the versions of the upstream
    /// steps): keeps it when it already is, else drops it, runs `compute()` (which
    /// returns a Result) and takes a new version from `clock`. Marks the step active
    /// (part of the latest run). Returns true when it ran.
    template <typename Compute>
    bool update(const Options& options, std::vector<std::uint64_t> inputs, std::uint64_t& clock, Compute&& compute) {
        if (current_for(options, inputs)) {
            m_active = true;
            return false;
        }
        clear();
        auto result = std::make_shared<const Result>(compute());
        m_options = options;
        m_inputs = std::move(inputs);
        m_result = std::move(result);
        m_version = ++clock;
        m_active = true;
        return true;
    }
    /// True when update() with these arguments would keep the result (not run).
    bool current_for(const Options& options, const std::vector<std::uint64_t>& inputs) const {
        return m_result && m_options && *m_options == options && m_inputs == inputs;
    }
    /// Not part of the latest run (switched off, or a run stopped before it): the
    /// result is kept for a later run but not shown.
    void deactivate() { m_active = false; }
    void clear() {
        m_options.reset();
        m_inputs.clear();
        m_result.reset();
        m_version = 0;
        m_active = false;
    }

    /// Has a result and the latest run asked for (and reached) it.
    bool active() const { return m_active && m_result != nullptr; }
    /// The result, whether active or not (null before the first run).
    const std::shared_ptr<const Result>& result() const { return m_result; }
    /// The result when active(), else null.
    const Result* current() const { return active() ? m_result.get() : nullptr; }
    /// The Options of the result (unset before the first run).
    const std::optional<Options>& options() const { return m_options; }
    /// 0 before the first run; a new value each time the step ran.
    std::uint64_t version() const { return m_version; }

private:
    std::optional<Options> m_options;
    std::vector<std::uint64_t> m_inputs;
    std::shared_ptr<const Result> m_result;
    std::uint64_t m_version = 0;
    bool m_active = false;
};

}  // namespace fathom::detail
