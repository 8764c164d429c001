#include "tests/support/paths.hpp"

#include <atomic>
#include <cstdlib>
#include <unistd.h>

namespace fathom::test {

std::filesystem::path shared_dir() {
    if (const char* override_dir = std::getenv("FATHOM_SHARED_DIR")) return override_dir;
    return std::filesystem::weakly_canonical(FATHOM_SHARED_DIR);
}

std::filesystem::path shared_data(const std::string& relative) { return shared_dir() / "data" / relative; }
std::filesystem::path shared_reference(const std::string& relative) { return shared_dir() / "reference" / relative; }

std::filesystem::path temp_dir(const std::string& label) {
    static std::atomic<int> counter{0};
    auto path = std::filesystem::temp_directory_path() /
                ("fathom-test-" + label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    return path;
}

}  // namespace fathom::test
