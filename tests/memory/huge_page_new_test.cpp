// The executables' operator new (core/memory/huge_page_new.cpp): large blocks are
// aligned to 2 MiB and advised for transparent huge pages, small ones are not.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

/// The VmFlags line of the mapping of /proc/self/smaps that holds `address` ("" if none).
std::string vm_flags_of(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    const auto target = reinterpret_cast<std::uintptr_t>(address);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        std::uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream header(line);
        if (header >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
            inside = target >= begin && target < end;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
    std::istringstream words(flags);
    std::string word;
    while (words >> word)
        if (word == flag) return true;
    return false;
}

TEST(HugePageNew, LargeBlocksAreAlignedAndAdvisedForHugePages) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "sanitizer builds keep the sanitizer's operator new";
#endif
    if (const char* value = std::getenv("FATHOM_HUGE_PAGES"); value != nullptr && value[0] == '0')
        GTEST_SKIP() << "FATHOM_HUGE_PAGES=0 turns the huge-page path off";
    std::vector<double> large(std::size_t{3} << 20);  // 24 MiB
    std::iota(large.begin(), large.end(), 0.0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % kHugePage, 0u);
    const std::string flags = vm_flags_of(large.data());
    ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the block";
    EXPECT_TRUE(has_flag(flags, "hg")) << "the block's mapping is not advised MADV_HUGEPAGE: " << flags;
    EXPECT_EQ(large[12345], 12345.0);
    EXPECT_EQ(large.back(), static_cast<double>(large.size() - 1));
}

TEST(HugePageNew, SmallBlocksAndEveryFormOfNewAndDeleteStillWork) {
    auto small = std::make_unique<int[]>(100);
    small[99] = 7;
    EXPECT_EQ(small[99], 7);
    std::vector<char> empty_then_grown;
    for (int round = 0; round < 24; ++round) empty_then_grown.resize(std::size_t{1} << round, 'x');  // crosses the threshold
    EXPECT_EQ(empty_then_grown.back(), 'x');
    int* nothrow_block = new (std::nothrow) int[1 << 20];  // 4 MiB through the nothrow form
    ASSERT_NE(nothrow_block, nullptr);
    nothrow_block[(1 << 20) - 1] = 3;
    EXPECT_EQ(nothrow_block[(1 << 20) - 1], 3);
    delete[] nothrow_block;
    struct alignas(64) Wide {
        double values[8];
    };
    std::vector<Wide> over_aligned(std::size_t{1} << 16);  // 4 MiB through the aligned form (library default)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(over_aligned.data()) % 64, 0u);
    void* zero = ::operator new(0);
    EXPECT_NE(zero, nullptr);
    ::operator delete(zero);
}

}  // namespace
