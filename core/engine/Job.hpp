#pragma once
/// Jobs run by the Engine on its worker thread, and the handles that watch them.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/types/JobContext.hpp"

namespace fathom {

/// Lifecycle of a job. Succeeded, Failed and Cancelled are final.
enum class JobState { Queued, Running, Succeeded, Failed, Cancelled };
const char* job_state_name(JobState state) noexcept;

/// Why a job failed, so that callers can map failures to exit codes / UI states.
enum class FailureKind {
    None,     ///< the job did not fail
    Input,    ///< malformed or unreadable input (io::FormatError, io::ReadError)
    Option,   ///< an invalid option (std::invalid_argument from validate())
    Output,   ///< an output could not be written (io::WriteError)
    Device,   ///< a device error (GPU failure or out of memory)
    Compute,  ///< anything else
};

/// Wall and CPU time of one stage of a job, with the process's peak RSS after it.
struct StageTiming {
    std::string stage;
    double wall_seconds = 0.0;
    double cpu_seconds = 0.0;          ///< user + system CPU time of the process
    std::int64_t peak_rss_bytes = 0;   ///< process high-water mark when the stage ended
};

/// Snapshot of a job, safe to take from any thread at any time.
struct JobStatus {
    std::uint64_t id = 0;
    std::string name;                  ///< what was submitted ("open", "pipeline", ...)
    JobState state = JobState::Queued;
    std::string stage;                 ///< current stage
    double fraction = 0.0;             ///< of the current stage, [0, 1]
    std::string message;               ///< progress detail, or the error for Failed
    FailureKind failure = FailureKind::None;
    double elapsed_seconds = 0.0;      ///< since the job started running
    double eta_seconds = -1.0;         ///< of the current stage; -1 when unknown
    std::vector<StageTiming> timings;  ///< completed stages, in order
    bool finished() const noexcept {
        return state == JobState::Succeeded || state == JobState::Failed || state == JobState::Cancelled;
    }
};

namespace detail {
/// Shared state of one job (owned jointly by the engine queue and its handles).
struct Job {
    std::uint64_t id = 0;
    std::string name;
    std::function<void(JobContext&)> work;
    JobContext context;
    mutable std::mutex mutex;
    std::condition_variable finished_cv;
    JobState state = JobState::Queued;
    std::string error;
    FailureKind failure = FailureKind::None;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point stage_started;
    double stage_cpu_started = 0.0;
    std::string current_stage;
    std::vector<StageTiming> timings;
};
}  // namespace detail

/// Handle to a submitted job. Copyable; all members are thread-safe.
class JobHandle {
public:
    JobHandle() = default;
    explicit JobHandle(std::shared_ptr<detail::Job> job) : m_job(std::move(job)) {}

    bool valid() const noexcept { return static_cast<bool>(m_job); }
    std::uint64_t id() const noexcept { return m_job ? m_job->id : 0; }
    JobStatus status() const;
    /// Requests cancellation: a queued job never starts; a running one stops at its
    /// next checkpoint (within ~100 ms of work) and ends Cancelled.
    void cancel() const;
    /// Waits until the job has finished or `timeout` passed; true when finished.
    bool wait_for(std::chrono::milliseconds timeout) const;
    /// Waits without bound; returns the final status.
    JobStatus wait() const;

private:
    std::shared_ptr<detail::Job> m_job;
};

/// Process CPU time (user + system) in seconds and peak RSS in bytes.
double process_cpu_seconds();
std::int64_t process_peak_rss_bytes();

}  // namespace fathom
