#include "ui/JobWatcher.hpp"

namespace fathom::ui {

JobWatcher::JobWatcher(QObject* parent, int interval_ms) : QObject(parent) {
    qRegisterMetaType<fathom::JobStatus>("fathom::JobStatus");
    m_timer.setInterval(std::max(1, interval_ms));
    connect(&m_timer, &QTimer::timeout, this, &JobWatcher::pollNow);
}

void JobWatcher::watch(const JobHandle& handle, const QString& label, FinishedCallback on_finished) {
    if (!handle.valid()) return;
    m_jobs.push_back({handle, label, std::move(on_finished)});
    if (!m_timer.isActive()) m_timer.start();
}

void JobWatcher::cancelAll() {
    for (const Watched& job : m_jobs) job.handle.cancel();
}

void JobWatcher::cancel(const QString& label) {
    for (const Watched& job : m_jobs)
        if (job.label == label) job.handle.cancel();
}

int JobWatcher::activeCount() const { return static_cast<int>(m_jobs.size()); }

bool JobWatcher::isWatching(const QString& label) const {
    for (const Watched& job : m_jobs)
        if (job.label == label) return true;
    return false;
}

int JobWatcher::intervalMs() const { return m_timer.interval(); }

void JobWatcher::pollNow() {
    // Take the finished ones out first: a finished callback may start (watch) new jobs.
    std::vector<std::pair<Watched, JobStatus>> done;
    for (auto it = m_jobs.begin(); it != m_jobs.end();) {
        const JobStatus status = it->handle.status();
        if (status.stage != it->stage) {
            it->stage = status.stage;
            emit stageChanged(it->label, QString::fromStdString(status.stage));
        }
        if (status.state != it->state || status.fraction != it->fraction || status.message != it->message) {
            it->state = status.state;
            it->fraction = status.fraction;
            it->message = status.message;
            emit progressChanged(it->label, status);
        }
        if (status.finished()) {
            done.emplace_back(std::move(*it), status);
            it = m_jobs.erase(it);
        } else {
            ++it;
        }
    }
    for (auto& [job, status] : done) {
        emit finished(job.label, status);
        if (job.on_finished) job.on_finished(status);
    }
    if (m_jobs.empty()) {
        m_timer.stop();
        if (!done.empty()) emit idle();
    }
}

}  // namespace fathom::ui
