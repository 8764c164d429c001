// Multi-gene column extraction: CpuBackend::gene_columns and ShardSet::gene_columns.
// This is the latency-critical path of marker-gene filters (a few genes re-read for
// every cell each time a threshold changes), so it reads as little of each row as it
// can: for the requested genes in increasing order, one interpolation guess inside the
// rest of the row, then a galloping search from the guess. On rows with uniformly
// scattered indices the guess lands within a cache line or two of the answer, so a
// gene costs about one cache miss per row instead of a binary search's log2(nnz).
#include <algorithm>
#include <stdexcept>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/ShardSet.hpp"

namespace fathom {

namespace {

/// Rows per parallel block: small enough for load balance and a cancellation check
/// well under 50 ms, large enough that scheduling costs nothing.
constexpr std::int64_t kRowsPerBlock = 2048;
/// How many rows ahead the row ends and the guessed positions are prefetched.
constexpr std::int64_t kPrefetchRows = 8;

/// Smallest p in [lo, hi) with indices[p] >= gene, or hi when there is none.
/// indices[lo, hi) is sorted, strictly increasing and not empty.
inline std::int64_t seek_gene(const std::int32_t* indices, std::int64_t lo, std::int64_t hi, std::int32_t gene) noexcept {
    const std::int32_t first = indices[lo];
    if (gene <= first) return lo;
    const std::int32_t last = indices[hi - 1];
    if (gene > last) return hi;
    if (gene == last) return hi - 1;
    // first < gene < last: the answer is in (lo, hi - 1]. Interpolate, then gallop
    // towards it keeping indices[below] < gene <= indices[above].
    const std::int64_t span = hi - 1 - lo;
    const std::int64_t guess =
        lo + static_cast<std::int64_t>(gene - first) * span / static_cast<std::int64_t>(last - first);
    std::int64_t below = lo;
    std::int64_t above = hi - 1;
    if (indices[guess] < gene) {
        below = guess;
        for (std::int64_t step = 1;; step <<= 1) {
            const std::int64_t probe = below + step;
            if (probe >= hi - 1) break;
            if (indices[probe] >= gene) {
                above = probe;
                break;
            }
            below = probe;
        }
    } else {
        above = guess;
        for (std::int64_t step = 1;; step <<= 1) {
            const std::int64_t probe = above - step;
            if (probe <= lo) break;
            if (indices[probe] < gene) {
                below = probe;
                break;
            }
            above = probe;
        }
    }
    while (above - below > 1) {
        const std::int64_t middle = below + (above - below) / 2;
        if (indices[middle] < gene)
            below = middle;
        else
            above = middle;
    }
    return above;
}

/// Prefetches the cache line where `gene` is likely stored in row [lo, hi): the
/// same interpolation seek_gene starts from, if the row's ends are already cached.
inline void prefetch_guess(const std::int32_t* indices, std::int64_t lo, std::int64_t hi, std::int32_t gene) noexcept {
    if (hi - lo < 16) return;  // a short row is one or two lines, fetched with its ends
    const std::int32_t first = indices[lo];
    const std::int32_t last = indices[hi - 1];
    if (gene <= first || gene >= last) return;
    const std::int64_t guess =
        lo + static_cast<std::int64_t>(gene - first) * (hi - 1 - lo) / static_cast<std::int64_t>(last - first);
    __builtin_prefetch(indices + guess);
}

}  // namespace

std::vector<std::vector<float>> CpuBackend::gene_columns(std::span<const std::int32_t> genes, JobContext& ctx) const {
    for (const std::int32_t gene : genes)
        if (gene < 0 || gene >= m_shard.num_genes)
            throw std::invalid_argument("Backend::gene_columns: gene " + std::to_string(gene) + " is outside [0, " +
                                        std::to_string(m_shard.num_genes) + ")");
    // Search the distinct genes in increasing order, so each search starts where the
    // previous one ended.
    std::vector<std::int32_t> sorted(genes.begin(), genes.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    const auto rows = m_shard.num_rows();
    std::vector<std::vector<float>> distinct(sorted.size(), std::vector<float>(static_cast<std::size_t>(rows), 0.0f));

    const std::int64_t* offsets = m_shard.row_offsets.data();
    const std::int32_t* indices = m_shard.gene_indices.data();
    const float* values = m_shard.values.data();
    std::vector<float*> outputs;
    for (auto& column : distinct) outputs.push_back(column.data());
    const std::size_t num_sorted = sorted.size();
    if (rows > 0 && num_sorted > 0) {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, kRowsPerBlock), [&](const tbb::blocked_range<std::int64_t>& block) {
            ctx.checkpoint();
            const std::int64_t end = block.end();
            for (std::int64_t row = block.begin(); row < end; ++row) {
                // Two-stage prefetch: the ends of a row further ahead, then the guessed
                // positions of a nearer row whose ends have arrived by now.
                if (row + 2 * kPrefetchRows < end) {
                    const std::int64_t ahead_lo = offsets[row + 2 * kPrefetchRows];
                    const std::int64_t ahead_hi = offsets[row + 2 * kPrefetchRows + 1];
                    if (ahead_hi > ahead_lo) {
                        __builtin_prefetch(indices + ahead_lo);
                        __builtin_prefetch(indices + ahead_hi - 1);
                    }
                }
                if (row + kPrefetchRows < end) {
                    const std::int64_t ahead_lo = offsets[row + kPrefetchRows];
                    const std::int64_t ahead_hi = offsets[row + kPrefetchRows + 1];
                    if (ahead_hi > ahead_lo)
                        for (std::size_t slot = 0; slot < num_sorted; ++slot)
                            prefetch_guess(indices, ahead_lo, ahead_hi, sorted[slot]);
                }
                std::int64_t lo = offsets[row];
                const std::int64_t hi = offsets[row + 1];
                for (std::size_t slot = 0; slot < num_sorted && lo < hi; ++slot) {
                    const std::int64_t at = seek_gene(indices, lo, hi, sorted[slot]);
                    if (at < hi && indices[at] == sorted[slot]) {
                        outputs[slot][row] = values[at];
                        lo = at + 1;
                    } else {
                        lo = at;
                    }
                }
            }
        });
    }

    // In the order asked for: a repeated gene is copied, and moved at its last use.
    std::vector<std::size_t> slot_of(genes.size());
    std::vector<std::size_t> last_use(num_sorted, 0);
    for (std::size_t index = 0; index < genes.size(); ++index) {
        slot_of[index] = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), genes[index]) - sorted.begin());
        last_use[slot_of[index]] = index;
    }
    std::vector<std::vector<float>> columns(genes.size());
    for (std::size_t index = 0; index < genes.size(); ++index) {
        auto& column = distinct[slot_of[index]];
        if (last_use[slot_of[index]] == index)
            columns[index] = std::move(column);
        else
            columns[index] = column;
    }
    return columns;
}

std::vector<std::vector<float>> ShardSet::gene_columns(std::span<const std::int32_t> genes, JobContext& ctx) const {
    std::vector<std::vector<std::vector<float>>> parts(m_backends.size());
    for_each_shard([&](int index) {
        parts[static_cast<std::size_t>(index)] = m_backends[static_cast<std::size_t>(index)]->gene_columns(genes, ctx);
    });
    parts = all_parts(
        std::move(parts),
        [](ByteWriter& out, const std::vector<std::vector<float>>& part) {
            out.put(static_cast<std::uint64_t>(part.size()));
            for (const auto& column : part) out.put_vector(std::span<const float>(column));
        },
        [](ByteReader& in) {
            std::vector<std::vector<float>> part(static_cast<std::size_t>(in.get<std::uint64_t>()));
            for (auto& column : part) column = in.get_vector<float>();
            return part;
        });
    if (parts.size() == 1) return std::move(parts.front());
    std::vector<std::vector<float>> columns(genes.size());
    const auto cells = static_cast<std::size_t>(num_cells());
    for (std::size_t gene = 0; gene < genes.size(); ++gene) {
        columns[gene].resize(cells);
        std::size_t at = 0;
        for (const auto& part : parts) {
            std::copy(part[gene].begin(), part[gene].end(), columns[gene].begin() + static_cast<std::ptrdiff_t>(at));
            at += part[gene].size();
        }
    }
    return columns;
}

}  // namespace fathom
