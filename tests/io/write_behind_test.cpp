// AppendableDataset's write-behind: while a file is written, the page cache holds a
// window of it, not all of it, and the file reads back the values appended.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "core/io/detail/hdf5.hpp"
#include "core/io/detail/hdf5_write.hpp"
#include "tests/support/page_cache.hpp"
#include "tests/support/paths.hpp"

namespace fathom::io::h5 {
namespace {

constexpr std::int64_t kValues = std::int64_t{8} << 20;  // 32 MiB of floats
constexpr std::int64_t kAppend = std::int64_t{1} << 20;

std::vector<float> random_values() {
    std::mt19937 generator(3);
    std::uniform_real_distribution<float> uniform(-1000.0f, 1000.0f);
    std::vector<float> values(static_cast<std::size_t>(kValues));
    for (float& value : values) value = uniform(generator);
    return values;
}

/// Writes the values in appends of kAppend; the fraction of the file cached before finish().
double write(const std::string& path, const std::vector<float>& values, std::int64_t write_behind, int gzip_level) {
    File file = File::create(path);
    AppendOptions options;
    options.write_behind_bytes = write_behind;
    options.gzip_level = gzip_level;
    AppendableDataset dataset = AppendableDataset::create<float>(file, "/values", options);
    for (std::int64_t at = 0; at < kValues; at += kAppend) dataset.append(values.data() + at, kAppend);
    const double resident = test::resident_fraction(path);
    dataset.finish();
    return resident;
}

class WriteBehind : public ::testing::TestWithParam<int> {};

TEST_P(WriteBehind, PageCacheHoldsAWindowOfTheFileAndTheValuesReadBack) {
    const auto folder = test::temp_dir("write_behind");
    {
        const std::string probe = (folder / "probe.bin").string();
        std::ofstream(probe, std::ios::binary) << std::string(1 << 20, 'x');
        if (const auto reason = test::page_cache_unobservable(probe)) GTEST_SKIP() << *reason;
    }
    const int gzip_level = GetParam();
    const std::vector<float> values = random_values();
    const std::string cached = (folder / "cached.h5").string(), behind = (folder / "behind.h5").string();
    // Without write-behind the file written so far is all in the page cache.
    EXPECT_GT(write(cached, values, 0, gzip_level), 0.9);
    // With a 1 MiB window: at most two windows of a file of about 30 MiB.
    EXPECT_LT(write(behind, values, std::int64_t{1} << 20, gzip_level), 0.15);
    for (const std::string& path : {cached, behind}) {
        const File file = File::open_read(path);
        EXPECT_EQ(file.read<float>("/values", 0, kValues), values) << path;
    }
}

// Stored whole from the caller's memory (h5ad's X), and compressed in batches (10x).
INSTANTIATE_TEST_SUITE_P(Io, WriteBehind, ::testing::Values(0, 1));

TEST(WriteBehindOptions, NegativeWindowIsRefusedNamingTheDataset) {
    const std::string path = (test::temp_dir("write_behind_options") / "refused.h5").string();
    File file = File::create(path);
    AppendOptions options;
    options.write_behind_bytes = -1;
    try {
        AppendableDataset::create<float>(file, "/values", options);
        FAIL() << "a negative write-behind window was accepted";
    } catch (const WriteError& error) {
        EXPECT_NE(std::string(error.what()).find("/values"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("write_behind_bytes"), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace fathom::io::h5
