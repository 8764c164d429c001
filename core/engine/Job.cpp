#include "core/engine/Job.hpp"

#include <sys/resource.h>

namespace fathom {

const char* job_state_name(JobState state) noexcept {
    switch (state) {
        case JobState::Queued: return "queued";
        case JobState::Running: return "running";
        case JobState::Succeeded: return "succeeded";
        case JobState::Failed: return "failed";
        case JobState::Cancelled: return "cancelled";
    }
    return "unknown";
}

double process_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& value) { return static_cast<double>(value.tv_sec) + value.tv_usec * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::int64_t process_peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

JobStatus JobHandle::status() const {
    JobStatus status;
    if (!m_job) return status;
    const Progress progress = m_job->context.progress();
    std::lock_guard lock(m_job->mutex);
    status.id = m_job->id;
    status.name = m_job->name;
    status.state = m_job->state;
    status.stage = progress.stage;
    status.fraction = progress.fraction;
    status.message = m_job->state == JobState::Failed ? m_job->error : progress.message;
    status.failure = m_job->failure;
    status.timings = m_job->timings;
    if (m_job->state != JobState::Queued) {
        const auto now = std::chrono::steady_clock::now();
        status.elapsed_seconds = std::chrono::duration<double>(now - m_job->started).count();
        if (m_job->state == JobState::Running && progress.fraction > 0.02) {
            const double stage_elapsed = std::chrono::duration<double>(now - m_job->stage_started).count();
            status.eta_seconds = stage_elapsed * (1.0 - progress.fraction) / progress.fraction;
        }
    }
    return status;
}

void JobHandle::cancel() const {
    if (m_job) m_job->context.cancel();
}

bool JobHandle::wait_for(std::chrono::milliseconds timeout) const {
    if (!m_job) return true;
    std::unique_lock lock(m_job->mutex);
    return m_job->finished_cv.wait_for(lock, timeout, [&] {
        return m_job->state == JobState::Succeeded || m_job->state == JobState::Failed ||
               m_job->state == JobState::Cancelled;
    });
}

JobStatus JobHandle::wait() const {
    if (m_job) {
        std::unique_lock lock(m_job->mutex);
        m_job->finished_cv.wait(lock, [&] {
            return m_job->state == JobState::Succeeded || m_job->state == JobState::Failed ||
                   m_job->state == JobState::Cancelled;
        });
    }
    return status();
}

}  // namespace fathom
