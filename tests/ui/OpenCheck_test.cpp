// The explorer's crash-safe open (ui/OpenCheck): a file is read by a separate process
// before it is loaded in-process. A checker that crashes or hangs (stand-ins for a fault
// inside libhdf5 on a damaged file: scripts that kill themselves or sleep) makes the file
// refused with a message naming it, and leaves the open dataset and its unsaved work as
// they were; the real checker (fathom-cli info --read-all) lets good and ordinarily
// malformed files through to the usual open.
#include "ui/OpenCheck.hpp"

#include <gtest/gtest.h>

#include <QElapsedTimer>
#include <QFile>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/support/paths.hpp"
#include "ui/MainWindow.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using namespace std::chrono_literals;
using fathom::test::process_events_until;

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const QByteArray& value) : m_name(name), m_had(qEnvironmentVariableIsSet(name)) {
        if (m_had) m_old = qgetenv(name);
        qputenv(name, value);
    }
    ~ScopedEnv() {
        if (m_had) qputenv(m_name, m_old);
        else qunsetenv(m_name);
    }

private:
    const char* m_name;
    bool m_had;
    QByteArray m_old;
};

/// An executable shell script in `folder`.
std::filesystem::path script(const std::filesystem::path& folder, const std::string& name, const std::string& body) {
    const auto path = folder / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
}

/// 400 cells x 300 genes from fathom-cli synth; empty when it cannot be made.
std::filesystem::path small_dataset(const std::filesystem::path& folder) {
    const auto file = folder / "synth400.h5ad";
    const std::string command = std::string(FATHOM_CLI_PATH) + " synth --cells 400 --genes 300 --seed 3 --out '" +
                                file.string() + "' --quiet > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file)) return {};
    return file;
}

struct CheckResult {
    OpenCheck::Outcome outcome;
    QString message;
};

std::optional<CheckResult> run_check(const QString& path) {
    OpenCheck check;
    std::optional<CheckResult> result;
    QObject::connect(&check, &OpenCheck::finished,
                     [&](OpenCheck::Outcome outcome, const QString& message) { result = CheckResult{outcome, message}; });
    check.start(path);
    process_events_until([&] { return result.has_value(); }, 60s);
    return result;
}

TEST(OpenCheck, ACrashingCheckerRefusesTheFileNamingIt) {
    const auto folder = test::temp_dir("open-check-crash");
    const auto crash = script(folder, "crash.sh", "echo 'H5HG_read: fault' >&2\nkill -SEGV $$");
    ScopedEnv program("FATHOM_OPEN_CHECK_PROGRAM", QByteArray::fromStdString(crash.string()));
    const QString file = QString::fromStdString((folder / "damaged.h5ad").string());
    const auto result = run_check(file);
    ASSERT_TRUE(result.has_value()) << "the check never finished";
    EXPECT_EQ(result->outcome, OpenCheck::Outcome::Refused);
    EXPECT_TRUE(result->message.contains(file)) << result->message.toStdString();
    EXPECT_TRUE(result->message.contains(QStringLiteral("crashed"))) << result->message.toStdString();
    EXPECT_TRUE(result->message.contains(QStringLiteral("H5HG_read: fault"))) << result->message.toStdString();
}

TEST(OpenCheck, AHangingCheckerIsStoppedAtTheTimeLimitAndRefusesTheFile) {
    const auto folder = test::temp_dir("open-check-hang");
    const auto hang = script(folder, "hang.sh", "exec sleep 60");
    ScopedEnv program("FATHOM_OPEN_CHECK_PROGRAM", QByteArray::fromStdString(hang.string()));
    ScopedEnv timeout("FATHOM_OPEN_CHECK_TIMEOUT", "1");
    const QString file = QString::fromStdString((folder / "cyclic.h5ad").string());
    QElapsedTimer clock;
    clock.start();
    const auto result = run_check(file);
    ASSERT_TRUE(result.has_value()) << "the check never finished";
    EXPECT_LT(clock.elapsed(), 20000);
    EXPECT_EQ(result->outcome, OpenCheck::Outcome::Refused);
    EXPECT_TRUE(result->message.contains(file)) << result->message.toStdString();
    EXPECT_TRUE(result->message.contains(QStringLiteral("within 1 s"))) << result->message.toStdString();
}

TEST(OpenCheck, TheRealCheckerPassesGoodAndOrdinarilyMalformedFiles) {
    const auto folder = test::temp_dir("open-check-real");
    const auto good = small_dataset(folder);
    if (good.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset";
    ScopedEnv program("FATHOM_OPEN_CHECK_PROGRAM", FATHOM_CLI_PATH);
    auto result = run_check(QString::fromStdString(good.string()));
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->outcome, OpenCheck::Outcome::Passed) << result->message.toStdString();
    // A reader's refusal (exit 3) is not a crash: the in-process open reports it as usual.
    const auto truncated = folder / "truncated.h5ad";
    std::filesystem::copy_file(good, truncated);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(good) / 2);
    result = run_check(QString::fromStdString(truncated.string()));
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->outcome, OpenCheck::Outcome::Passed) << result->message.toStdString();
}

TEST(OpenCheck, ZeroTimeoutOrNoCheckerSkipsWithANote) {
    ScopedEnv timeout("FATHOM_OPEN_CHECK_TIMEOUT", "0");
    const auto result = run_check(QStringLiteral("/tmp/any.h5ad"));
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->outcome, OpenCheck::Outcome::Skipped);
    EXPECT_TRUE(result->message.contains(QStringLiteral("FATHOM_OPEN_CHECK_TIMEOUT=0")));
}

TEST(OpenCheck, TheExplorerKeepsItsDatasetWhenTheCheckOfAnotherFileCrashes) {
    const auto folder = test::temp_dir("open-check-window");
    const auto good = small_dataset(folder);
    if (good.empty()) GTEST_SKIP() << "fathom-cli synth (" FATHOM_CLI_PATH ") could not make a dataset";
    MainWindow window(EngineConfig{}, false);
    std::optional<std::pair<bool, QString>> opened;
    QObject::connect(&window, &MainWindow::datasetOpened,
                     [&](bool ok, const QString& message, int) { opened = std::make_pair(ok, message); });
    {
        ScopedEnv program("FATHOM_OPEN_CHECK_PROGRAM", FATHOM_CLI_PATH);
        ASSERT_TRUE(window.openFile(QString::fromStdString(good.string())));
        ASSERT_TRUE(process_events_until([&] { return opened.has_value(); }, 60s));
        ASSERT_TRUE(opened->first) << opened->second.toStdString();
    }
    EXPECT_TRUE(window.logText().contains(QStringLiteral("checking"))) << window.logText().toStdString();
    const auto before = window.snapshot();
    ASSERT_TRUE(before->dataset);
    const bool unsaved = window.hasUnsavedChanges();

    const auto crash = script(folder, "crash.sh", "kill -ABRT $$");
    ScopedEnv program("FATHOM_OPEN_CHECK_PROGRAM", QByteArray::fromStdString(crash.string()));
    const auto other = folder / "other.h5ad";
    std::filesystem::copy_file(good, other);
    opened.reset();
    ASSERT_TRUE(window.openFile(QString::fromStdString(other.string())));
    ASSERT_TRUE(process_events_until([&] { return opened.has_value(); }, 60s));
    EXPECT_FALSE(opened->first);
    EXPECT_TRUE(opened->second.contains(QString::fromStdString(other.string()))) << opened->second.toStdString();
    // Nothing of the open dataset was touched.
    EXPECT_EQ(window.snapshot(), before);
    EXPECT_EQ(window.snapshot()->dataset->shape.num_cells, 400);
    EXPECT_EQ(window.hasUnsavedChanges(), unsaved);
    EXPECT_FALSE(window.busy());
}

}  // namespace
}  // namespace fathom::ui
