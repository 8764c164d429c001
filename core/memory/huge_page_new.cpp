// Replacement global operator new/delete (linked into the executables, see
// fathom_use_allocator in core/CMakeLists.txt).
//
// Blocks of kHugeThreshold bytes or more are mapped by this file: aligned to and rounded
// up to the 2 MiB huge-page size and marked MADV_HUGEPAGE, so the kernel backs them with
// transparent huge pages where it allows that (/sys/kernel/mm/transparent_hugepage/enabled
// set to "madvise" or "always"). The engine's large arrays (kNN lists, graph CSR,
// Leiden's level graphs, UMAP edges, shard blocks) are read at random: with 4 KiB pages
// every access risks a TLB miss.
//
// Freed large blocks are kept and handed out again (the block cache below). Every first
// touch of a fresh page is a page fault in which the kernel zeroes the page and, on a
// virtual machine, the host backs it: measured here (bench_machine --cold-gib) at 0.1 to
// 0.5 s per GiB for the first GiB or two and 4 to 6.5 s per GiB beyond, against 0.04 s per
// GiB to write memory the process already holds. A pipeline frees and allocates its
// large arrays step after step (shard blocks, kNN lists, graphs, dense tiles), and neither
// glibc (which unmaps every block over 32 MiB) nor oneTBB's allocator (measured: a 64 MiB
// block freed and allocated again is faulted in again each time) keeps them.
//
// The cache never raises the high-water mark of the large blocks: before an allocation
// maps fresh pages, cached blocks are unmapped until live + cached + fresh stays within the
// most the live blocks have ever needed. A request takes the smallest cached block that
// holds it (its tail beyond the request unmapped when that is more than a quarter), or
// else the largest cached block, grown in place or moved with its pages by mremap (the
// pages it already has are not faulted again). Blocks are not zeroed on reuse (operator
// new promises no contents). FATHOM_HUGE_PAGES=0 in the environment turns this path off
// (every block then goes to malloc). Smaller blocks go to malloc unchanged (oneTBB's
// scalable allocator where the executable links its proxy). Sanitizer builds keep the
// sanitizer's own operator new (it checks that new and delete pair up).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeThreshold = std::size_t{1} << 20;

bool huge_pages_wanted() noexcept {
    static const bool wanted = [] {
        const char* value = std::getenv("FATHOM_HUGE_PAGES");
        return value == nullptr || value[0] != '0';
    }();
    return wanted;
}

std::size_t round_up(std::size_t size) noexcept { return (size + kHugePage - 1) / kHugePage * kHugePage; }

/// A fresh mapping of `bytes` (a multiple of kHugePage) at a kHugePage-aligned address, or nullptr.
void* map_aligned(std::size_t bytes) noexcept {
    const std::size_t reserve = bytes + kHugePage;
    void* raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto begin = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > begin) ::munmap(raw, aligned - begin);
    const std::uintptr_t end = begin + reserve;
    if (end > aligned + bytes) ::munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
    void* block = reinterpret_cast<void*>(aligned);
    ::madvise(block, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
    return block;
}

/// `block` (of `bytes`) resized to `wanted` bytes, its pages kept, at a kHugePage-aligned
/// address; nullptr (and `block` untouched) if the kernel refuses.
void* remap_aligned(void* block, std::size_t bytes, std::size_t wanted) noexcept {
    void* grown = ::mremap(block, bytes, wanted, 0);  // in place when the range after it is free
    if (grown != MAP_FAILED) {
        ::madvise(grown, wanted, MADV_HUGEPAGE);
        return grown;
    }
    // Reserve an aligned range and move the block's pages there (MREMAP_FIXED replaces the reservation).
    void* target = map_aligned(wanted);
    if (target == nullptr) return nullptr;
    void* moved = ::mremap(block, bytes, wanted, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    if (moved == MAP_FAILED) {
        ::munmap(target, wanted);
        return nullptr;
    }
    ::madvise(moved, wanted, MADV_HUGEPAGE);
    return moved;
}

/// The mapped blocks: live ones (by address, to recognise them in delete) and cached ones.
class BlockCache {
public:
    /// A block of at least `size` bytes, or nullptr to let malloc serve it.
    void* allocate(std::size_t size) noexcept {
        const std::size_t wanted = round_up(size);
        std::unique_lock lock(m_mutex);
        if (m_live_count * 2 >= kSlots) return nullptr;  // the table is full: malloc serves it
        int best = -1;     // the smallest cached block that holds `wanted`
        int largest = -1;  // else the largest one
        for (int index = 0; index < m_cached_count; ++index) {
            const std::size_t bytes = m_cached[index].bytes;
            if (bytes >= wanted && (best < 0 || bytes < m_cached[best].bytes)) best = index;
            if (largest < 0 || bytes > m_cached[largest].bytes) largest = index;
        }
        const int chosen = best >= 0 ? best : largest;
        Block taken{};
        if (chosen >= 0) {
            taken = m_cached[chosen];
            m_cached[chosen] = m_cached[--m_cached_count];
            m_cached_bytes -= taken.bytes;
        }
        // What the block will hold: a cached block that is larger keeps its size unless
        // more than a quarter of it would go unused (then its tail is unmapped).
        const bool trim = taken.bytes > wanted && (taken.bytes - wanted) * 4 > taken.bytes;
        const std::size_t held = taken.bytes > wanted && !trim ? taken.bytes : wanted;
        m_high_water = std::max(m_high_water, m_live_bytes + held);
        // Unmap cached blocks until live + cached stays within the high-water mark.
        std::array<Block, kMaxCached> evicted{};
        int num_evicted = 0;
        while (m_cached_count > 0 && m_live_bytes + m_cached_bytes + held > m_high_water) {
            evicted[num_evicted] = m_cached[--m_cached_count];
            m_cached_bytes -= evicted[num_evicted].bytes;
            ++num_evicted;
        }
        // Counted as live before the system calls, so that other threads see the bytes.
        m_live_bytes += held;
        ++m_live_count;
        lock.unlock();
        for (int index = 0; index < num_evicted; ++index) ::munmap(evicted[index].address, evicted[index].bytes);

        void* result = nullptr;
        if (taken.address == nullptr) {
            result = map_aligned(held);
        } else if (taken.bytes >= wanted) {
            if (trim) ::munmap(static_cast<char*>(taken.address) + held, taken.bytes - held);
            result = taken.address;
        } else {
            result = remap_aligned(taken.address, taken.bytes, held);
            if (result == nullptr) {
                ::munmap(taken.address, taken.bytes);
                result = map_aligned(held);
            }
        }
        lock.lock();
        if (result == nullptr) {
            m_live_bytes -= held;
            --m_live_count;
            return nullptr;
        }
        insert(Block{result, held});
        return result;
    }

    /// Takes `address` back if it is one of this cache's blocks; false otherwise.
    bool release(void* address) noexcept {
        if (reinterpret_cast<std::uintptr_t>(address) % kHugePage != 0) return false;
        std::unique_lock lock(m_mutex);
        const std::size_t bytes = erase(address);
        if (bytes == 0) return false;
        m_live_bytes -= bytes;
        --m_live_count;
        Block freed{address, bytes};
        if (m_cached_count == kMaxCached) {
            // Full: the smallest of the cached blocks and the freed one is unmapped.
            int smallest = 0;
            for (int index = 1; index < m_cached_count; ++index)
                if (m_cached[index].bytes < m_cached[smallest].bytes) smallest = index;
            if (m_cached[smallest].bytes < freed.bytes) {
                std::swap(freed, m_cached[smallest]);
                m_cached_bytes += m_cached[smallest].bytes - freed.bytes;
            }
            lock.unlock();
            ::munmap(freed.address, freed.bytes);
            return true;
        }
        m_cached[m_cached_count++] = freed;
        m_cached_bytes += freed.bytes;
        return true;
    }

private:
    struct Block {
        void* address = nullptr;
        std::size_t bytes = 0;
    };
    static constexpr std::size_t kSlots = std::size_t{1} << 16;  // live blocks table (open addressing)
    static constexpr int kMaxCached = 64;

    static std::size_t slot_of(const void* address) noexcept {
        auto key = reinterpret_cast<std::uintptr_t>(address) / kHugePage;
        key *= 0x9e3779b97f4a7c15ULL;
        return static_cast<std::size_t>(key >> 48) & (kSlots - 1);
    }
    void insert(Block block) noexcept {
        std::size_t slot = slot_of(block.address);
        while (m_live[slot].address != nullptr) slot = (slot + 1) & (kSlots - 1);
        m_live[slot] = block;
    }
    /// Removes `address` from the live table (backward-shift deletion); its bytes, or 0.
    std::size_t erase(const void* address) noexcept {
        std::size_t slot = slot_of(address);
        while (m_live[slot].address != address) {
            if (m_live[slot].address == nullptr) return 0;
            slot = (slot + 1) & (kSlots - 1);
        }
        const std::size_t bytes = m_live[slot].bytes;
        std::size_t hole = slot;
        for (std::size_t next = (hole + 1) & (kSlots - 1); m_live[next].address != nullptr;
             next = (next + 1) & (kSlots - 1)) {
            const std::size_t home = slot_of(m_live[next].address);
            // Move `next` into the hole unless its home lies cyclically in (hole, next].
            const bool stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
            if (!stays) {
                m_live[hole] = m_live[next];
                hole = next;
            }
        }
        m_live[hole] = Block{};
        return bytes;
    }

    std::mutex m_mutex;
    std::array<Block, kSlots> m_live{};
    std::array<Block, kMaxCached> m_cached{};
    int m_cached_count = 0;
    std::size_t m_live_count = 0;
    std::size_t m_live_bytes = 0;
    std::size_t m_cached_bytes = 0;
    std::size_t m_high_water = 0;
};

BlockCache& block_cache() noexcept {
    // Never destroyed: blocks may be freed by static destructors after main returns.
    alignas(BlockCache) static unsigned char storage[sizeof(BlockCache)];
    static BlockCache* cache = new (storage) BlockCache();
    return *cache;
}

void* allocate(std::size_t size) noexcept {
    if (size >= kHugeThreshold && huge_pages_wanted())
        if (void* block = block_cache().allocate(size)) return block;
    return std::malloc(size == 0 ? 1 : size);
}

void release(void* block) noexcept {
    if (block == nullptr) return;
    if (huge_pages_wanted() && block_cache().release(block)) return;
    std::free(block);
}

void* allocate_or_throw(std::size_t size) {
    for (;;) {
        if (void* block = allocate(size)) return block;
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

void* allocate_or_null(std::size_t size) noexcept {
    try {
        return allocate_or_throw(size);
    } catch (...) {
        return nullptr;
    }
}

}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate_or_null(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate_or_null(size); }
void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, std::size_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t) noexcept { release(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }

#endif  // sanitizers
