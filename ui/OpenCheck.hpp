#pragma once
/// The explorer's crash-safe open: before a data file is loaded into the explorer's own
/// process, a separate process (`fathom-cli info --read-all FILE`) reads it whole, with a
/// time bound. A fault inside a reader's dependency (libhdf5 on a damaged file) then ends
/// that process, not the explorer with the user's unsaved work; the file is refused with
/// a message and what is open stays as it was.
#include <QObject>
#include <QProcess>
#include <QString>
#include <QTimer>

namespace fathom::ui {

/// Runs one check at a time; start() again cancels the running one.
class OpenCheck : public QObject {
    Q_OBJECT
public:
    /// How a check ended.
    enum class Outcome {
        Passed,   ///< the checker ran to its end (an ordinary read error included: the open reports it)
        Refused,  ///< the checker crashed or hung: the file must not be opened in-process
        Skipped,  ///< no checker to run (not found, or turned off): open as before, with the note
    };
    explicit OpenCheck(QObject* parent = nullptr);
    ~OpenCheck() override;

    /// The checker: $FATHOM_OPEN_CHECK_PROGRAM when set (packagers, tests), else the
    /// fathom-cli beside the explorer's executable; empty when there is none.
    static QString checkerProgram();
    /// Seconds a check may take: $FATHOM_OPEN_CHECK_TIMEOUT when set (0 turns the check
    /// off), else 300.
    static int timeoutSeconds();

    /// Checks `path`; finished() follows (also for Skipped, from the event loop).
    void start(const QString& path);
    /// Stops a running check without finished().
    void cancel();
    bool isRunning() const { return m_process.state() != QProcess::NotRunning; }

signals:
    /// `message`: for Refused, why (names the file); for Skipped, the note; else empty.
    void finished(fathom::ui::OpenCheck::Outcome outcome, const QString& message);

private:
    void onFinished(int exit_code, QProcess::ExitStatus status);
    void onTimeout();

    QProcess m_process;
    QTimer m_timer;
    QString m_path;
    int m_timeout_seconds = 0;
};

}  // namespace fathom::ui
