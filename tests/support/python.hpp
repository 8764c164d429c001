#pragma once
/// Running commands and Debian's /usr/bin/python3 (anndata 0.8, h5py, scipy) from tests.
#include <optional>
#include <string>
#include <vector>

namespace fathom::test {

/// What a command printed on stdout and how it ended.
struct CommandResult {
    int exit_code = -1;   ///< WEXITSTATUS, or -1 when it did not exit normally
    std::string output;   ///< stdout (add "2>&1" to the command for stderr too)
};

/// Runs `command` through /bin/sh and captures its stdout.
CommandResult run_command(const std::string& command);

/// Single-quotes `text` for /bin/sh.
std::string shell_quote(const std::string& text);

/// Empty when /usr/bin/python3 exists and imports every module; else why not.
std::optional<std::string> python_missing(const std::vector<std::string>& modules);

/// Writes `script` to a temporary file and runs it with /usr/bin/python3 and `args`
/// (quoted). stderr is captured into output too.
CommandResult run_python(const std::string& script, const std::vector<std::string>& args = {});

}  // namespace fathom::test

/// Skips the test with a clear message when Debian's python3 or a module is missing.
#define FATHOM_REQUIRE_PYTHON(...)                                                               \
    do {                                                                                         \
        if (auto fathom_missing_ = ::fathom::test::python_missing({__VA_ARGS__}))                \
            GTEST_SKIP() << *fathom_missing_ << "; skipping the Python cross-check";              \
    } while (0)
