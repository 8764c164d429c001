#pragma once
/// A std::vector whose resize leaves trivial values uninitialised, for large buffers that
/// a parallel loop fills completely: their pages are then first touched (faulted in and
/// zeroed by the kernel) by the threads that fill them, not by one thread in resize
/// followed by a second pass. Value-taking calls (assign(n, v), resize(n, v)) still
/// initialise.
#include <memory>
#include <utility>
#include <vector>

namespace fathom {

template <class T>
struct UninitializedAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <class U>
    explicit UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
    /// Default construction: default-initialisation (nothing, for trivial types).
    template <class U>
    void construct(U* place) noexcept {
        ::new (static_cast<void*>(place)) U;
    }
    template <class U, class... Args>
    void construct(U* place, Args&&... args) {
        ::new (static_cast<void*>(place)) U(std::forward<Args>(args)...);
    }
};

template <class T>
using UninitializedVector = std::vector<T, UninitializedAllocator<T>>;

}  // namespace fathom
