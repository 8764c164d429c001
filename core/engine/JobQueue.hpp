#pragma once
/// A job queue served by one worker thread (the Engine owns two: compute and queries).
/// Callers poll JobHandle::status(); worker threads never call back into UI code.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/engine/Job.hpp"

namespace fathom {

/// Runs submitted jobs one at a time, in submission order, on a worker thread.
/// Errors never escape: a job that throws ends Failed with the exception's message
/// (which names the file, object or option at fault); Cancelled ends it Cancelled.
class JobQueue {
public:
    JobQueue();
    ~JobQueue();  ///< stop()
    JobQueue(const JobQueue&) = delete;
    JobQueue& operator=(const JobQueue&) = delete;

    /// Queues `work`; returns at once. `work` reports progress through its JobContext.
    /// After stop() the job ends Cancelled at once, without running.
    JobHandle submit(std::string name, std::function<void(JobContext&)> work);
    /// Cancels the queued and running jobs and joins the worker once they have ended
    /// (each job releases its `work`, and what it captured, on the worker). Idempotent;
    /// call it from the thread that owns the queue, never from a job. The Engine calls it
    /// while it still holds its state, so that no job ever releases the last reference
    /// to that state (whose destruction would join the worker from the worker itself).
    void stop();

private:
    void serve();
    static void run_one(detail::Job& job);

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::shared_ptr<detail::Job>> m_pending;
    std::shared_ptr<detail::Job> m_running;
    bool m_stopping = false;
    std::uint64_t m_next_id = 1;
    std::thread m_worker;
};

}  // namespace fathom
