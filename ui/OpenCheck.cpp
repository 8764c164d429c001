#include "ui/OpenCheck.hpp"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

namespace fathom::ui {

namespace {

/// The last non-empty line the checker wrote to stderr (a sanitizer or abort message).
QString last_line(const QByteArray& output) {
    const QStringList lines = QString::fromLocal8Bit(output).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return lines.isEmpty() ? QString() : lines.back().trimmed();
}

}  // namespace

OpenCheck::OpenCheck(QObject* parent) : QObject(parent) {
    m_timer.setSingleShot(true);
    m_process.setProcessChannelMode(QProcess::SeparateChannels);
    m_process.setStandardOutputFile(QProcess::nullDevice());
    connect(&m_process, &QProcess::finished, this, &OpenCheck::onFinished);
    connect(&m_timer, &QTimer::timeout, this, &OpenCheck::onTimeout);
    connect(&m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;  // crashes and timeouts end in onFinished
        m_timer.stop();
        emit finished(Outcome::Skipped, tr("%1: the separate check could not start (%2); opened without it")
                                             .arg(m_path, m_process.errorString()));
    });
}

OpenCheck::~OpenCheck() { cancel(); }

QString OpenCheck::checkerProgram() {
    const QByteArray chosen = qgetenv("FATHOM_OPEN_CHECK_PROGRAM");
    if (!chosen.isEmpty()) return QString::fromLocal8Bit(chosen);
    const QFileInfo beside(QCoreApplication::applicationDirPath() + QStringLiteral("/fathom-cli"));
    return beside.isFile() && beside.isExecutable() ? beside.absoluteFilePath() : QString();
}

int OpenCheck::timeoutSeconds() {
    bool ok = false;
    const int chosen = qEnvironmentVariableIntValue("FATHOM_OPEN_CHECK_TIMEOUT", &ok);
    return ok && chosen >= 0 ? chosen : 300;
}

void OpenCheck::start(const QString& path) {
    cancel();
    m_path = path;
    m_timeout_seconds = timeoutSeconds();
    const QString program = checkerProgram();
    if (m_timeout_seconds == 0 || program.isEmpty()) {
        const QString note = m_timeout_seconds == 0
                                 ? tr("%1: opened without the separate check (FATHOM_OPEN_CHECK_TIMEOUT=0)").arg(path)
                                 : tr("%1: opened without the separate check (no fathom-cli beside the explorer)").arg(path);
        QTimer::singleShot(0, this, [this, note] { emit finished(Outcome::Skipped, note); });
        return;
    }
    // The explorer opens with the reader's defaults; `info` reads the same objects
    // (annotations, names) and, with --read-all, every row of the matrix.
    m_process.start(program, {QStringLiteral("info"), QStringLiteral("--read-all"), path});
    m_timer.start(m_timeout_seconds * 1000);
}

void OpenCheck::cancel() {
    m_timer.stop();
    if (m_process.state() == QProcess::NotRunning) return;
    m_process.blockSignals(true);
    m_process.kill();
    m_process.waitForFinished(5000);
    m_process.blockSignals(false);
}

void OpenCheck::onFinished(int exit_code, QProcess::ExitStatus status) {
    m_timer.stop();
    if (status == QProcess::NormalExit) {
        // 0, or a reader's refusal (exit 3 and the like): the in-process open reports it
        // with the same message, through the ordinary failure path.
        Q_UNUSED(exit_code);
        emit finished(Outcome::Passed, QString());
        return;
    }
    const QString detail = last_line(m_process.readAllStandardError());
    emit finished(Outcome::Refused,
                  tr("%1: reading this file crashed the separate process that checks files before they are opened "
                     "(the file is damaged, or makes a library it needs fail). It was not opened; what was open "
                     "stays as it was.%2")
                      .arg(m_path, detail.isEmpty() ? QString() : QStringLiteral("\n") + detail));
}

void OpenCheck::onTimeout() {
    if (m_process.state() == QProcess::NotRunning) return;
    m_process.blockSignals(true);
    m_process.kill();
    m_process.waitForFinished(5000);
    m_process.blockSignals(false);
    emit finished(Outcome::Refused,
                  tr("%1: the separate process that checks files before they are opened did not finish within %2 s "
                     "(a damaged file can make a library it needs hang). It was not opened; what was open stays as "
                     "it was. For a very large file, allow more time with FATHOM_OPEN_CHECK_TIMEOUT=SECONDS.")
                      .arg(m_path)
                      .arg(m_timeout_seconds));
}

}  // namespace fathom::ui
