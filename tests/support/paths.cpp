#include "tests/support/paths.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <vector>
#include <unistd.h>

namespace fathom::test {

std::filesystem::path shared_dir() {
    if (const char* override_dir = std::getenv("FATHOM_SHARED_DIR")) return override_dir;
    return std::filesystem::weakly_canonical(FATHOM_SHARED_DIR);
}

std::filesystem::path shared_data(const std::string& relative) { return shared_dir() / "data" / relative; }
std::filesystem::path shared_reference(const std::string& relative) { return shared_dir() / "reference" / relative; }

namespace {

/// The folders made by temp_dir in this process, removed when it exits (kept when
/// FATHOM_KEEP_TEST_FILES is set, for looking at a failure).
struct TempFolders {
    std::mutex mutex;
    std::vector<std::filesystem::path> paths;
    ~TempFolders() {
        if (std::getenv("FATHOM_KEEP_TEST_FILES")) return;
        for (const auto& path : paths) {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    }
};

TempFolders& temp_folders() {
    static TempFolders folders;
    return folders;
}

}  // namespace

std::filesystem::path temp_dir(const std::string& label) {
    static std::atomic<int> counter{0};
    TempFolders& folders = temp_folders();  // constructed first, so destroyed after any user
    auto path = std::filesystem::temp_directory_path() /
                ("fathom-test-" + label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    std::lock_guard lock(folders.mutex);
    folders.paths.push_back(path);
    return path;
}

}  // namespace fathom::test
