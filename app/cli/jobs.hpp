#pragma once
/// How fathom-cli runs work that Ctrl-C may stop, the same for every command: while an
/// InterruptScope is alive, SIGINT and SIGTERM cancel the running job instead of killing
/// the process, so that temporary outputs are removed on the way out and the command
/// ends with ExitCode::Cancelled (130). Engine jobs are followed with wait_for_job();
/// work run in the command's own thread (io writers) passes a JobContext to the scope.
#include <csignal>
#include <functional>

#include "core/engine/Job.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::cli {

/// SIGINT / SIGTERM handling for the lifetime of the object (one at a time): the first
/// signal cancels, a second one ends the process as the default action does.
class InterruptScope {
public:
    /// Installs the handlers and clears interrupted(). `job`, when given, is cancelled
    /// from the handler itself (JobContext::cancel is a lock-free atomic store).
    explicit InterruptScope(JobContext* job = nullptr);
    /// Puts the previous handlers back.
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

    /// A signal arrived since the current scope began.
    static bool interrupted() noexcept;

private:
    using Handler = void (*)(int);
    Handler m_previous_interrupt = SIG_DFL;
    Handler m_previous_terminate = SIG_DFL;
};

/// Waits for `handle`, calling `on_status` with its status about every 100 ms while it
/// runs, and cancels it once InterruptScope::interrupted(). Returns the final status.
JobStatus wait_for_job(const JobHandle& handle, const std::function<void(const JobStatus&)>& on_status = {});

/// The exit code of a finished job (ExitCode in commands.hpp): Ok, Cancelled, or its
/// failure kind's (Input and Output 3, Option 2, Device 5, anything else 4).
int job_exit_code(const JobStatus& status);

}  // namespace fathom::cli
