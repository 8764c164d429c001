// JobWatcher polls real engine jobs (a JobQueue worker thread) from the GUI thread.
// Waits are bounded waits on the job handle while the event loop runs.
#include "ui/JobWatcher.hpp"

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QMouseEvent>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "core/engine/JobQueue.hpp"
#include "ui/PlotView.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;

// Simulated engine work: `steps` slices of `slice` each, reporting progress and
// honouring cancellation like a real step does.
std::function<void(JobContext&)> slow_work(int steps, std::chrono::milliseconds slice) {
    return [steps, slice](JobContext& context) {
        context.begin_stage("first half");
        for (int step = 0; step < steps; ++step) {
            if (step == steps / 2) context.begin_stage("second half");
            std::this_thread::sleep_for(slice);  // stands in for computation on the worker thread
            context.report(static_cast<double>(step + 1) / steps);
        }
    };
}

// Runs the event loop while waiting on the job with a bound; then one last poll.
JobStatus wait_processing_events(const JobHandle& handle, JobWatcher& watcher, std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!handle.wait_for(5ms) && std::chrono::steady_clock::now() < deadline)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    fathom::test::process_events_until([&] { return watcher.activeCount() == 0; }, 2000ms);
    return handle.status();
}

TEST(JobWatcher, EmitsProgressOnTheGuiThreadWhileTheEventLoopKeepsTurning) {
    JobQueue queue;
    JobWatcher watcher(nullptr, 20);
    int progress_signals = 0, finished_signals = 0, idle_signals = 0, callback_calls = 0;
    std::vector<QString> stages;
    bool all_on_gui_thread = true;
    JobState final_state = JobState::Queued;
    QObject::connect(&watcher, &JobWatcher::progressChanged, [&](const QString& label, const JobStatus&) {
        ++progress_signals;
        all_on_gui_thread &= QThread::currentThread() == QCoreApplication::instance()->thread();
        EXPECT_EQ(label, QStringLiteral("slow"));
    });
    QObject::connect(&watcher, &JobWatcher::stageChanged, [&](const QString&, const QString& stage) {
        stages.push_back(stage);
    });
    QObject::connect(&watcher, &JobWatcher::finished, [&](const QString&, const JobStatus& status) {
        ++finished_signals;
        final_state = status.state;
    });
    QObject::connect(&watcher, &JobWatcher::idle, [&] { ++idle_signals; });

    int ticks = 0;
    QTimer ticker;
    ticker.setInterval(5);
    QObject::connect(&ticker, &QTimer::timeout, [&] { ++ticks; });
    ticker.start();

    const JobHandle handle = queue.submit("slow", slow_work(40, 20ms));  // ~0.8 s of work
    watcher.watch(handle, QStringLiteral("slow"), [&](const JobStatus& status) {
        ++callback_calls;
        EXPECT_EQ(status.state, JobState::Succeeded);
    });
    EXPECT_TRUE(watcher.isWatching(QStringLiteral("slow")));
    const JobStatus status = wait_processing_events(handle, watcher, 20s);
    ticker.stop();

    EXPECT_EQ(status.state, JobState::Succeeded);
    EXPECT_EQ(finished_signals, 1);
    EXPECT_EQ(callback_calls, 1);
    EXPECT_EQ(idle_signals, 1);
    EXPECT_EQ(final_state, JobState::Succeeded);
    EXPECT_GE(progress_signals, 5) << "progress must be reported while the job runs";
    EXPECT_TRUE(all_on_gui_thread);
    ASSERT_GE(stages.size(), 2u);
    EXPECT_EQ(stages[0], QStringLiteral("first half"));
    EXPECT_EQ(stages[1], QStringLiteral("second half"));
    // The GUI thread was never blocked: a 5 ms timer kept firing during the ~0.8 s job.
    EXPECT_GE(ticks, 20);
    EXPECT_EQ(watcher.activeCount(), 0);
}

TEST(JobWatcher, CancelEndsTheJobCancelled) {
    JobQueue queue;
    JobWatcher watcher(nullptr, 10);
    const JobHandle handle = queue.submit("endless", [](JobContext& context) {
        context.begin_stage("spin");
        const auto give_up = std::chrono::steady_clock::now() + 30s;
        while (std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(2ms);
            context.checkpoint();
        }
    });
    JobState seen = JobState::Queued;
    watcher.watch(handle, QStringLiteral("endless"), [&](const JobStatus& status) { seen = status.state; });
    fathom::test::process_events_until([&] { return handle.status().state == JobState::Running; }, 5000ms);
    watcher.cancel(QStringLiteral("endless"));
    const JobStatus status = wait_processing_events(handle, watcher, 10s);
    EXPECT_EQ(status.state, JobState::Cancelled);
    EXPECT_EQ(seen, JobState::Cancelled);
}

TEST(JobWatcher, FailedJobReportsItsMessageAndKind) {
    JobQueue queue;
    JobWatcher watcher;
    const JobHandle handle = queue.submit("bad", [](JobContext&) {
        throw std::invalid_argument("PipelineSettings::num_pcs must be >= 1");
    });
    JobStatus seen;
    watcher.watch(handle, QStringLiteral("bad"), [&](const JobStatus& status) { seen = status; });
    wait_processing_events(handle, watcher, 10s);
    EXPECT_EQ(seen.state, JobState::Failed);
    EXPECT_EQ(seen.failure, FailureKind::Option);
    EXPECT_NE(seen.message.find("num_pcs"), std::string::npos);
}

TEST(JobWatcher, PlotRepaintsAndPansWhileALongJobRuns) {
    FATHOM_REQUIRE_GL();
    PlotView view;
    view.resize(400, 300);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    std::mt19937 generator(1);
    std::normal_distribution<float> noise(0.0f, 3.0f);
    std::vector<float> xy(2 * 50000);
    for (float& coordinate : xy) coordinate = noise(generator);
    view.setPositions(xy);
    fathom::test::process_events_until([&] { return view.uploadComplete(); }, 10000ms);

    JobQueue queue;
    JobWatcher watcher;
    const JobHandle handle = queue.submit("long", slow_work(50, 20ms));  // ~1 s
    watcher.watch(handle, QStringLiteral("long"));
    int frames = 0;
    QObject::connect(&view, &PlotView::frameRendered, [&] { ++frames; });
    const double center_before = view.transform().center().x;
    QPointF cursor(100, 150);
    QMouseEvent press(QEvent::MouseButtonPress, cursor, view.mapToGlobal(cursor), Qt::LeftButton, Qt::LeftButton, {});
    QCoreApplication::sendEvent(&view, &press);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    int pans = 0;
    while (!handle.wait_for(1ms) && std::chrono::steady_clock::now() < deadline) {
        cursor += QPointF(1.0, 0.0);  // drag right one pixel per turn
        QMouseEvent move(QEvent::MouseMove, cursor, view.mapToGlobal(cursor), Qt::NoButton, Qt::LeftButton, {});
        QCoreApplication::sendEvent(&view, &move);
        ++pans;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    }
    QMouseEvent release(QEvent::MouseButtonRelease, cursor, view.mapToGlobal(cursor), Qt::LeftButton, Qt::NoButton, {});
    QCoreApplication::sendEvent(&view, &release);
    EXPECT_TRUE(handle.status().finished());
    EXPECT_GE(frames, 3) << "the plot must keep repainting while the job runs";
    EXPECT_GE(view.stats().scene_renders, 3);
    EXPECT_LT(view.transform().center().x, center_before) << "dragging right moves the view left";
    EXPECT_NEAR(view.transform().center().x, center_before - pans / view.transform().pixels_per_unit(), 1e-6);
}

}  // namespace
}  // namespace fathom::ui
