// The executables' operator new (core/memory/huge_page_new.cpp): large blocks are
// aligned to 2 MiB and advised for transparent huge pages, small ones are not.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
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

/// How many of the pages of [block, block + bytes) the process holds (mincore).
std::size_t resident_pages(const void* block, std::size_t bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> flags((bytes + page - 1) / page);
    if (::mincore(const_cast<void*>(block), bytes, flags.data()) != 0) return 0;
    std::size_t resident = 0;
    for (const unsigned char flag : flags) resident += flag & 1u;
    return resident;
}

bool cache_enabled() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return false;
#else
    const char* value = std::getenv("FATHOM_HUGE_PAGES");
    return value == nullptr || value[0] != '0';
#endif
}

TEST(HugePageNew, AFreedLargeBlockIsHandedOutAgainWithItsPages) {
    if (!cache_enabled()) GTEST_SKIP() << "the large-block path is off (sanitizer build or FATHOM_HUGE_PAGES=0)";
    constexpr std::size_t kBytes = std::size_t{40} << 20;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    char* first = static_cast<char*>(::operator new(kBytes));
    for (std::size_t offset = 0; offset < kBytes; offset += page) first[offset] = 1;  // touch every page
    const auto first_address = reinterpret_cast<std::uintptr_t>(first);
    ::operator delete(first);
    // The same size again: the freed block, every page still held (no fault, no zeroing).
    char* second = static_cast<char*>(::operator new(kBytes - 12345));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(second), first_address);
    EXPECT_EQ(resident_pages(second, kBytes), kBytes / page);
    ::operator delete(second);
}

TEST(HugePageNew, ALargerRequestGrowsACachedBlockAndKeepsItsPages) {
    if (!cache_enabled()) GTEST_SKIP() << "the large-block path is off (sanitizer build or FATHOM_HUGE_PAGES=0)";
    constexpr std::size_t kSmall = std::size_t{16} << 20;
    constexpr std::size_t kLarge = std::size_t{48} << 20;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    // Empty the cache first (each request takes a cached block while there is one; at
    // most 64 are kept): the request below then finds only the small block.
    std::vector<void*> drain;
    for (int round = 0; round < 80; ++round) drain.push_back(::operator new(kLarge));
    char* small = static_cast<char*>(::operator new(kSmall));
    std::memset(small, 7, kSmall);
    ::operator delete(small);
    char* large = static_cast<char*>(::operator new(kLarge));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large) % kHugePage, 0u);
    // The first kSmall bytes are the small block's pages, moved with their contents.
    EXPECT_EQ(resident_pages(large, kSmall), kSmall / page);
    EXPECT_EQ(large[0], 7);
    EXPECT_EQ(large[kSmall - 1], 7);
    large[kLarge - 1] = 3;  // the grown part is usable
    EXPECT_EQ(large[kLarge - 1], 3);
    ::operator delete(large);
    for (void* block : drain) ::operator delete(block);
}

TEST(HugePageNew, TheCacheNeverHoldsMoreThanTheLiveBlocksOnceNeeded) {
    if (!cache_enabled()) GTEST_SKIP() << "the large-block path is off (sanitizer build or FATHOM_HUGE_PAGES=0)";
    // Sixteen 8 MiB blocks freed, then one 32 MiB block: it grows one cached block and
    // unmaps others so that the large blocks never hold more than the most ever live.
    constexpr std::size_t kPiece = std::size_t{8} << 20;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<std::uintptr_t> pieces;
    for (int index = 0; index < 16; ++index) {
        void* piece = ::operator new(kPiece);
        std::memset(piece, 1, kPiece);
        pieces.push_back(reinterpret_cast<std::uintptr_t>(piece));
    }
    for (const std::uintptr_t piece : pieces) ::operator delete(reinterpret_cast<void*>(piece));
    char* whole = static_cast<char*>(::operator new(4 * kPiece));
    std::memset(whole, 2, 4 * kPiece);
    std::size_t still_held = 0;
    const auto begin = reinterpret_cast<std::uintptr_t>(whole);
    for (const std::uintptr_t piece : pieces)
        if (piece < begin || piece >= begin + 4 * kPiece) still_held += resident_pages(reinterpret_cast<void*>(piece), kPiece);
    // Live 32 MiB + cached <= 128 MiB, the high-water mark of this test's blocks at least.
    EXPECT_LE(still_held * page + 4 * kPiece, 16 * kPiece + (std::size_t{64} << 20));
    ::operator delete(whole);
    // Concurrent use from many threads keeps every block intact.
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int thread = 0; thread < 4; ++thread)
        threads.emplace_back([thread, &failures] {
            for (int round = 0; round < 50; ++round) {
                const std::size_t bytes = (std::size_t{1} << 20) * static_cast<std::size_t>(1 + (round * 7 + thread) % 9);
                auto* block = static_cast<unsigned char*>(::operator new(bytes));
                std::memset(block, thread + 1, bytes);
                if (block[0] != thread + 1 || block[bytes - 1] != thread + 1) ++failures;
                ::operator delete(block);
            }
        });
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
}

}  // namespace
