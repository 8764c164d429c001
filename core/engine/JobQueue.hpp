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
    ~JobQueue();  ///< cancels queued and running jobs, then joins the worker
    JobQueue(const JobQueue&) = delete;
    JobQueue& operator=(const JobQueue&) = delete;

    /// Queues `work`; returns at once. `work` reports progress through its JobContext.
    JobHandle submit(std::string name, std::function<void(JobContext&)> work);

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
