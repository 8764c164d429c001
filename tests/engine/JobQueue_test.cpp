#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "core/engine/JobQueue.hpp"
#include "core/io/errors.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

TEST(JobQueue, SubmitReturnsAtOnceAndRunsToSuccess) {
    JobQueue queue;
    std::atomic<bool> release{false};
    auto handle = queue.submit("spin", [&](JobContext& ctx) {
        ctx.begin_step("waiting");
        while (!release.load()) ctx.checkpoint();
        ctx.begin_step("done");
    });
    // The job is queued or running but cannot have finished: it waits for release.
    EXPECT_FALSE(handle.status().finished());
    release = true;
    ASSERT_TRUE(handle.wait_for(10s));
    const auto status = handle.status();
    EXPECT_EQ(status.state, JobState::Succeeded);
    ASSERT_EQ(status.timings.size(), 2u);
    EXPECT_EQ(status.timings[0].stage, "waiting");
    EXPECT_EQ(status.timings[1].stage, "done");
    EXPECT_GT(status.timings[1].peak_rss_bytes, 0);
}

TEST(JobQueue, CancelStopsARunningJobAtItsNextCheckpoint) {
    JobQueue queue;
    std::atomic<bool> started{false};
    auto handle = queue.submit("endless", [&](JobContext& ctx) {
        ctx.begin_step("loop");
        started = true;
        while (true) ctx.report(0.5);
    });
    while (!started.load()) std::this_thread::yield();
    handle.cancel();
    ASSERT_TRUE(handle.wait_for(10s));
    EXPECT_EQ(handle.status().state, JobState::Cancelled);
}

TEST(JobQueue, CancelledQueuedJobNeverRuns) {
    JobQueue queue;
    std::atomic<bool> release{false};
    std::atomic<bool> second_ran{false};
    auto first = queue.submit("blocker", [&](JobContext& ctx) {
        while (!release.load()) ctx.checkpoint();
    });
    auto second = queue.submit("never", [&](JobContext&) { second_ran = true; });
    second.cancel();
    release = true;
    ASSERT_TRUE(second.wait_for(10s));
    EXPECT_EQ(second.status().state, JobState::Cancelled);
    EXPECT_FALSE(second_ran.load());
    EXPECT_EQ(first.wait().state, JobState::Succeeded);
}

TEST(JobQueue, ExceptionsEndTheJobFailedWithTheirMessage) {
    JobQueue queue;
    auto handle = queue.submit("bad", [](JobContext&) {
        throw io::FormatError("pbmc.h5ad", "/X/indptr", "has 2701 entries; expected 2700");
    });
    const auto status = handle.wait();
    EXPECT_EQ(status.state, JobState::Failed);
    EXPECT_NE(status.message.find("/X/indptr"), std::string::npos);
    EXPECT_EQ(status.failure, FailureKind::Input);
    // The queue keeps serving after a failure.
    auto next = queue.submit("ok", [](JobContext&) {});
    EXPECT_EQ(next.wait().state, JobState::Succeeded);
}

TEST(JobQueue, FailureKindsFollowTheExceptionType) {
    JobQueue queue;
    auto option = queue.submit("option", [](JobContext&) { throw std::invalid_argument("PcaOptions::num_components must be >= 1"); });
    auto output = queue.submit("output", [](JobContext&) { throw io::WriteError("out.h5ad", "disk full"); });
    auto compute = queue.submit("compute", [](JobContext&) { throw std::runtime_error("did not converge"); });
    EXPECT_EQ(option.wait().failure, FailureKind::Option);
    EXPECT_EQ(output.wait().failure, FailureKind::Output);
    EXPECT_EQ(compute.wait().failure, FailureKind::Compute);
    auto fine = queue.submit("fine", [](JobContext&) {});
    EXPECT_EQ(fine.wait().failure, FailureKind::None);
}

TEST(JobQueue, JobsRunInSubmissionOrder) {
    JobQueue queue;
    std::vector<int> order;
    std::mutex mutex;
    std::vector<JobHandle> handles;
    for (int index = 0; index < 5; ++index)
        handles.push_back(queue.submit("n", [&, index](JobContext&) {
            std::lock_guard lock(mutex);
            order.push_back(index);
        }));
    for (auto& handle : handles) handle.wait();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(JobQueue, DestructorCancelsRunningWork) {
    std::atomic<bool> started{false};
    JobHandle handle;
    {
        JobQueue queue;
        handle = queue.submit("endless", [&](JobContext& ctx) {
            started = true;
            while (true) ctx.checkpoint();
        });
        while (!started.load()) std::this_thread::yield();
    }
    EXPECT_EQ(handle.status().state, JobState::Cancelled);
}

TEST(JobQueue, StopEndsEveryJobAndLaterOnesNeverRun) {
    JobQueue queue;
    const JobHandle running = queue.submit("spin", [](JobContext& ctx) {
        while (true) ctx.checkpoint();
    });
    bool ran = false;
    const JobHandle queued = queue.submit("queued", [&](JobContext&) { ran = true; });
    queue.stop();  // returns once the worker has ended both
    EXPECT_EQ(running.status().state, JobState::Cancelled);
    EXPECT_EQ(queued.status().state, JobState::Cancelled);
    queue.stop();  // idempotent
    const JobHandle late = queue.submit("late", [&](JobContext&) { ran = true; });
    EXPECT_TRUE(late.wait_for(0ms)) << "ends at once";
    EXPECT_EQ(late.status().state, JobState::Cancelled);
    EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace fathom
