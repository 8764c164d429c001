// Replacement global operator new/delete (linked into the executables, see
// fathom_use_allocator in core/CMakeLists.txt).
//
// Blocks of kHugeThreshold bytes or more are aligned to and rounded up to the 2 MiB
// huge-page size and marked MADV_HUGEPAGE, so the kernel backs them with transparent
// huge pages where it allows that (/sys/kernel/mm/transparent_hugepage/enabled set to
// "madvise" or "always"). The engine's large arrays (kNN lists, graph CSR, Leiden's
// level graphs, UMAP edges, shard blocks) are read at random: with 4 KiB pages every
// access risks a TLB miss, and every first touch is a page fault, which costs several
// microseconds on a virtual machine. Smaller blocks and everything else go to malloc
// unchanged (oneTBB's scalable allocator where the executable links its proxy). Every
// block is released with free(), whichever path made it. FATHOM_HUGE_PAGES=0 in the
// environment turns the huge-page path off. Sanitizer builds keep the sanitizer's own
// operator new (it checks that new and delete pair up).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <sys/mman.h>

#include <cstdlib>
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

void* allocate(std::size_t size) noexcept {
    if (size >= kHugeThreshold && huge_pages_wanted()) {
        const std::size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
        void* block = std::aligned_alloc(kHugePage, rounded);
        if (block != nullptr) ::madvise(block, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
        return block;
    }
    return std::malloc(size == 0 ? 1 : size);
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
void operator delete(void* block) noexcept { std::free(block); }
void operator delete[](void* block) noexcept { std::free(block); }
void operator delete(void* block, std::size_t) noexcept { std::free(block); }
void operator delete[](void* block, std::size_t) noexcept { std::free(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { std::free(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { std::free(block); }

#endif  // sanitizers
