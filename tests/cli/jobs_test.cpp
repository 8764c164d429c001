// fathom-cli's one Ctrl-C handling (app/cli/jobs.hpp), in-process: while an
// InterruptScope is alive SIGINT / SIGTERM cancel the job (a JobContext given to the
// scope, or an engine job followed by wait_for_job) instead of ending the process; the
// previous handlers come back afterwards; job statuses map to the documented exit codes.
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <thread>

#include "app/cli/commands.hpp"
#include "app/cli/jobs.hpp"
#include "core/engine/Engine.hpp"

namespace fathom::cli {
namespace {

using namespace std::chrono_literals;

volatile std::sig_atomic_t g_previous_handler_calls = 0;
extern "C" void count_signal(int) { g_previous_handler_calls = g_previous_handler_calls + 1; }

TEST(CliJobs, ASignalCancelsTheScopesJobContextAndTheProcessLivesOn) {
    for (const int signal_number : {SIGINT, SIGTERM}) {
        JobContext ctx;
        {
            const InterruptScope interrupt(&ctx);
            EXPECT_FALSE(InterruptScope::interrupted());
            ASSERT_EQ(std::raise(signal_number), 0);
            EXPECT_TRUE(InterruptScope::interrupted());
            EXPECT_TRUE(ctx.cancelled());
            EXPECT_THROW(ctx.checkpoint(), fathom::Cancelled);
        }
        // A new scope starts uninterrupted.
        const InterruptScope next;
        EXPECT_FALSE(InterruptScope::interrupted());
    }
}

TEST(CliJobs, ThePreviousHandlersComeBack) {
    const auto previous = std::signal(SIGINT, count_signal);
    {
        const InterruptScope interrupt;
        ASSERT_EQ(std::raise(SIGINT), 0);
        EXPECT_EQ(g_previous_handler_calls, 0);
    }
    ASSERT_EQ(std::raise(SIGINT), 0);
    EXPECT_EQ(g_previous_handler_calls, 1);
    std::signal(SIGINT, previous);
}

TEST(CliJobs, WaitForJobCancelsAnEngineJobOnceInterrupted) {
    // A job whose first step waits for its cancel, so the signal surely arrives while it runs.
    EngineConfig config;
    config.step_observer = [](const std::string&, JobContext& ctx) {
        while (!ctx.cancelled()) std::this_thread::sleep_for(1ms);
    };
    Engine engine(config);
    const InterruptScope interrupt;
    const JobHandle handle = engine.open("/no/such/file.h5ad");
    ASSERT_EQ(std::raise(SIGINT), 0);
    const JobStatus status = wait_for_job(handle);
    EXPECT_EQ(status.state, JobState::Cancelled) << status.message;
    EXPECT_EQ(job_exit_code(status), Cancelled);
}

TEST(CliJobs, ExitCodesOfJobStatuses) {
    JobStatus status;
    status.state = JobState::Succeeded;
    EXPECT_EQ(job_exit_code(status), Ok);
    status.state = JobState::Cancelled;
    EXPECT_EQ(job_exit_code(status), 130);
    status.state = JobState::Failed;
    const std::pair<FailureKind, int> cases[] = {{FailureKind::Input, 3},  {FailureKind::Output, 3},
                                                 {FailureKind::Option, 2}, {FailureKind::Device, 5},
                                                 {FailureKind::Compute, 4}};
    for (const auto& [kind, code] : cases) {
        status.failure = kind;
        EXPECT_EQ(job_exit_code(status), code);
    }
}

}  // namespace
}  // namespace fathom::cli
