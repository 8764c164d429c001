#pragma once
/// Growing a large vector with its pages first touched by every thread. A page touched
/// for the first time is a fault in which the kernel maps and zeroes it; resize() alone
/// pays that on one thread. On this project's virtual machines the fault is the host
/// backing the page: 1 GiB of fresh pages took 0.41-4.6 s on one thread and 0.23-0.29 s
/// touched by two (a loop writing one byte per 4 KiB page of a fresh mapping, rounds
/// alternating the order), and bench_machine --cold-gib measures up to 6.5 s per GiB on one.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstddef>
#include <type_traits>
#include <vector>

namespace fathom {

/// `values` resized to `size` (new elements zero), the new pages touched first in
/// parallel within the reserved capacity; resize() then writes its zeros over memory
/// already mapped. Shrinking and growth inside pages already touched cost what resize() does.
template <typename T, typename Allocator>
void resize_touched_in_parallel(std::vector<T, Allocator>& values, std::size_t size) {
    static_assert(std::is_trivially_copyable_v<T>);
    constexpr std::size_t k_page = 4096;
    constexpr std::size_t k_parallel_bytes = std::size_t{16} << 20;  // below this, one thread
    if (size <= values.size() || (size - values.size()) * sizeof(T) < k_parallel_bytes) {
        values.resize(size);
        return;
    }
    values.reserve(size);
    auto* const begin = reinterpret_cast<unsigned char*>(values.data() + values.size());
    const std::size_t bytes = (size - values.size()) * sizeof(T);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, (bytes + k_page - 1) / k_page, 256),
                      [&](const tbb::blocked_range<std::size_t>& pages) {
                          for (std::size_t page = pages.begin(); page != pages.end(); ++page)
                              *static_cast<volatile unsigned char*>(begin + page * k_page) = 0;
                      });
    values.resize(size);
}

}  // namespace fathom
