#include "app/cli/jobs.hpp"

#include <atomic>
#include <chrono>

#include "app/cli/commands.hpp"
#include "core/types/atomic_file.hpp"

namespace fathom::cli {

namespace {

std::atomic<bool> g_interrupted{false};
/// The job the handler cancels (null: none).
std::atomic<JobContext*> g_job{nullptr};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<JobContext*>::is_always_lock_free,
              "used from a signal handler");

/// The first signal cancels; a second one (the job did not stop, or the command was
/// not at a checkpoint yet, e.g. still parsing a text matrix) ends the process as the
/// default action does. signal() and raise() are async-signal-safe.
extern "C" void cancel_on_signal(int signal_number) {
    if (g_interrupted.exchange(true)) {
        remove_temporary_files_now();  // the process ends: leave no "<out>.tmp-<pid>"
        std::signal(signal_number, SIG_DFL);
        std::raise(signal_number);
        return;
    }
    if (JobContext* job = g_job.load()) job->cancel();
}

}  // namespace

InterruptScope::InterruptScope(JobContext* job) {
    g_interrupted.store(false);
    g_job.store(job);
    m_previous_interrupt = std::signal(SIGINT, cancel_on_signal);
    m_previous_terminate = std::signal(SIGTERM, cancel_on_signal);
}

InterruptScope::~InterruptScope() {
    std::signal(SIGINT, m_previous_interrupt == SIG_ERR ? SIG_DFL : m_previous_interrupt);
    std::signal(SIGTERM, m_previous_terminate == SIG_ERR ? SIG_DFL : m_previous_terminate);
    g_job.store(nullptr);
}

bool InterruptScope::interrupted() noexcept { return g_interrupted.load(); }

JobStatus wait_for_job(const JobHandle& handle, const std::function<void(const JobStatus&)>& on_status) {
    using namespace std::chrono_literals;
    while (!handle.wait_for(100ms)) {
        if (InterruptScope::interrupted()) handle.cancel();
        if (on_status) on_status(handle.status());
    }
    return handle.status();
}

int job_exit_code(const JobStatus& status) {
    switch (status.state) {
        case JobState::Succeeded: return Ok;
        case JobState::Cancelled: return Cancelled;
        default: break;
    }
    switch (status.failure) {
        case FailureKind::Input: return Input;
        case FailureKind::Option: return Usage;
        case FailureKind::Output: return Input;
        case FailureKind::Device: return Device;
        default: return Compute;
    }
}

}  // namespace fathom::cli
