#pragma once
/// Watches engine jobs from the GUI thread: polls JobHandle::status() on a QTimer and
/// emits Qt signals (so engine threads never touch widgets, DESIGN.md "Engine").
#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <vector>

#include "core/engine/Job.hpp"

Q_DECLARE_METATYPE(fathom::JobStatus)

namespace fathom::ui {

/// Polls the watched jobs every interval; emits progressChanged when a job's stage,
/// fraction or message changed, stageChanged on a new stage, and finished exactly once
/// per job when it ends (Succeeded, Failed or Cancelled).
class JobWatcher : public QObject {
    Q_OBJECT
public:
    /// Called once on the GUI thread with the final status.
    using FinishedCallback = std::function<void(const JobStatus&)>;

    explicit JobWatcher(QObject* parent = nullptr, int interval_ms = 50);

    /// Starts watching `handle` (ignored when invalid). `label` names the job in signals.
    void watch(const JobHandle& handle, const QString& label, FinishedCallback on_finished = {});
    /// Requests cancellation of every watched job (they still end through finished()).
    void cancelAll();
    /// Requests cancellation of the watched jobs with this label.
    void cancel(const QString& label);
    /// Jobs still watched.
    int activeCount() const;
    bool isWatching(const QString& label) const;
    int intervalMs() const;
    /// Polls at once (also what the timer does).
    void pollNow();

signals:
    void progressChanged(const QString& label, const fathom::JobStatus& status);
    void stageChanged(const QString& label, const QString& stage);
    void finished(const QString& label, const fathom::JobStatus& status);
    /// No job is left (emitted after the last finished()).
    void idle();

private:
    struct Watched {
        JobHandle handle;
        QString label;
        FinishedCallback on_finished;
        JobState state = JobState::Queued;
        std::string stage;
        double fraction = -1.0;
        std::string message;
    };
    std::vector<Watched> m_jobs;
    QTimer m_timer;
};

}  // namespace fathom::ui
