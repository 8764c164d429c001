#include <exception>
#include <stdexcept>

#include "core/io/errors.hpp"
#include "core/types/errors.hpp"

#include "core/engine/JobQueue.hpp"

namespace fathom {

JobQueue::JobQueue() : m_worker([this] { serve(); }) {}

JobQueue::~JobQueue() { stop(); }

void JobQueue::stop() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
        for (auto& job : m_pending) job->context.cancel();
        if (m_running) m_running->context.cancel();
    }
    m_wake.notify_all();
    if (m_worker.joinable()) m_worker.join();  // the worker ends the queued jobs Cancelled first
}

JobHandle JobQueue::submit(std::string name, std::function<void(JobContext&)> work) {
    auto job = std::make_shared<detail::Job>();
    job->name = std::move(name);
    job->work = std::move(work);
    bool stopped = false;
    {
        std::lock_guard lock(m_mutex);
        job->id = m_next_id++;
        stopped = m_stopping;
        if (!stopped) m_pending.push_back(job);
    }
    if (stopped) {
        job->context.cancel();
        run_one(*job);  // ends Cancelled without running
    } else {
        m_wake.notify_one();
    }
    return JobHandle(job);
}

void JobQueue::serve() {
    while (true) {
        std::shared_ptr<detail::Job> job;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] { return m_stopping || !m_pending.empty(); });
            if (m_pending.empty()) return;  // stopping with nothing queued
            job = m_pending.front();
            m_pending.pop_front();
            m_running = job;
        }
        run_one(*job);
        std::lock_guard lock(m_mutex);
        m_running.reset();
    }
}

void JobQueue::run_one(detail::Job& job) {
    using clock = std::chrono::steady_clock;
    const auto close_stage = [&job] {
        // Called with job.mutex held.
        if (job.current_stage.empty()) return;
        StageTiming timing;
        timing.stage = job.current_stage;
        timing.wall_seconds = std::chrono::duration<double>(clock::now() - job.stage_started).count();
        timing.cpu_seconds = process_cpu_seconds() - job.stage_cpu_started;
        timing.peak_rss_bytes = process_peak_rss_bytes();
        job.timings.push_back(timing);
        job.current_stage.clear();
    };
    {
        std::lock_guard lock(job.mutex);
        job.started = clock::now();
        job.stage_started = job.started;
        job.state = job.context.cancelled() ? JobState::Cancelled : JobState::Running;
        if (job.state == JobState::Cancelled) {
            job.work = {};  // release captured state promptly
            job.finished_cv.notify_all();
            return;
        }
    }
    job.context.set_stage_observer([&job, &close_stage](const std::string& stage) {
        std::lock_guard lock(job.mutex);
        close_stage();
        job.current_stage = stage;
        job.stage_started = clock::now();
        job.stage_cpu_started = process_cpu_seconds();
    });
    JobState final_state = JobState::Succeeded;
    FailureKind failure = FailureKind::None;
    std::string error;
    const auto failed = [&](FailureKind kind, const char* message) {
        final_state = JobState::Failed;
        failure = kind;
        error = message;
    };
    try {
        job.work(job.context);
    } catch (const Cancelled&) {
        final_state = JobState::Cancelled;
    } catch (const io::FormatError& exception) {
        failed(FailureKind::Input, exception.what());
    } catch (const io::ReadError& exception) {
        failed(FailureKind::Input, exception.what());
    } catch (const io::WriteError& exception) {
        failed(FailureKind::Output, exception.what());
    } catch (const std::invalid_argument& exception) {
        failed(FailureKind::Option, exception.what());
    } catch (const std::bad_alloc&) {
        failed(FailureKind::Compute, "out of host memory");
    } catch (const DeviceError& exception) {
        failed(FailureKind::Device, exception.what());
    } catch (const std::exception& exception) {
        failed(FailureKind::Compute, exception.what());
    } catch (...) {
        failed(FailureKind::Compute, "unknown error");
    }
    job.context.set_stage_observer({});
    std::lock_guard lock(job.mutex);
    close_stage();
    job.state = final_state;
    job.error = std::move(error);
    job.failure = failure;
    job.work = {};  // release captured state promptly
    job.finished_cv.notify_all();
}

}  // namespace fathom
