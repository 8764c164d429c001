#pragma once
/// Where tests find the shared real datasets and references.
#include <filesystem>
#include <string>

namespace fathom::test {

/// ../shared beside the project (FATHOM_SHARED_DIR), or $FATHOM_SHARED_DIR.
std::filesystem::path shared_dir();
/// shared_dir()/data/<relative>; empty path when shared/ is absent.
std::filesystem::path shared_data(const std::string& relative);
/// shared_dir()/reference/<relative>.
std::filesystem::path shared_reference(const std::string& relative);
/// A fresh empty temporary folder for one test, removed when the test process exits
/// (kept when the environment variable FATHOM_KEEP_TEST_FILES is set).
std::filesystem::path temp_dir(const std::string& label);

}  // namespace fathom::test

/// Skips the current test with a clear message when `path` does not exist.
#define FATHOM_REQUIRE_PATH(path)                                                                  \
    do {                                                                                           \
        if (!std::filesystem::exists(path))                                                        \
            GTEST_SKIP() << "shared data not found at " << (path) << " (../shared is absent); skipping"; \
    } while (0)
