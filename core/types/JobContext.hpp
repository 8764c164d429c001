#pragma once
/// Progress reporting and cooperative cancellation for one job, passed explicitly to
/// every long-running step (never global).
#include <atomic>
#include <cstdint>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>

namespace fathom {

/// Thrown by JobContext::checkpoint() once cancellation was requested. Steps let it
/// propagate; the engine ends the job as Cancelled (a normal end, not a failure).
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

/// Snapshot of a job's progress.
struct Progress {
    std::string step;        ///< current top-level step, e.g. "pca" (timed by the engine)
    std::string stage;       ///< "step" or "step: sub-stage" as shown to users
    double fraction = 0.0;   ///< of the current (sub-)stage, in [0, 1]
    std::string message;     ///< optional detail ("epoch 40/200")
};

/// Shared between the worker that runs a step and the threads that watch it.
/// All members are thread-safe. Steps call checkpoint() about every 50 ms of work and
/// report() as they go. The engine names top-level steps with begin_step() (each one
/// is timed); algorithms name their sub-stages with begin_stage().
class JobContext {
public:
    JobContext() = default;
    JobContext(const JobContext&) = delete;
    JobContext& operator=(const JobContext&) = delete;

    /// Requests cancellation; the next checkpoint() throws Cancelled.
    void cancel() noexcept { m_cancelled.store(true, std::memory_order_relaxed); }
    bool cancelled() const noexcept { return m_cancelled.load(std::memory_order_relaxed); }
    /// Throws Cancelled when cancellation was requested.
    void checkpoint() const {
        if (cancelled()) throw Cancelled();
    }

    /// Starts a top-level step at fraction 0 and notifies the stage observer.
    void begin_step(std::string step);
    /// Starts a named sub-stage of the current step at fraction 0 (not timed).
    void begin_stage(std::string stage);
    /// Fraction of the current stage done, clamped to [0, 1]; also checks for cancel.
    void report(double fraction, std::string message = {});
    Progress progress() const;

    /// Optional observer called (on the worker thread) on every begin_step(); used by
    /// the engine to time steps.
    void set_stage_observer(std::function<void(const std::string&)> observer);

private:
    std::atomic<bool> m_cancelled{false};
    mutable std::mutex m_mutex;
    Progress m_progress;
    std::function<void(const std::string&)> m_stage_observer;
};

/// Calls `body(begin, end)` on consecutive sub-ranges of [0, total) of `grain` items,
/// checking for cancellation and reporting progress between them. For loops that are
/// not parallel; parallel loops check `ctx.checkpoint()` inside their chunks.
template <typename Body>
void for_each_block(JobContext& ctx, std::int64_t total, std::int64_t grain, Body&& body) {
    for (std::int64_t begin = 0; begin < total; begin += grain) {
        ctx.checkpoint();
        const std::int64_t end = begin + grain < total ? begin + grain : total;
        body(begin, end);
        ctx.report(static_cast<double>(end) / static_cast<double>(total));
    }
}

}  // namespace fathom
