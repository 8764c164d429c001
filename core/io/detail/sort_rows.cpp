#include "core/io/detail/sort_rows.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace fathom::io::detail {

namespace {

/// Sorts rows [first_row, last_row); the first duplicate of those rows, if any.
std::optional<DuplicateEntry> sort_row_range(CsrShard& shard, std::int64_t first_row, std::int64_t last_row) {
    std::vector<std::pair<std::int32_t, float>> scratch;
    std::optional<DuplicateEntry> duplicate;
    auto* genes = shard.gene_indices.data();
    auto* values = shard.values.data();
    for (std::int64_t row = first_row; row < last_row; ++row) {
        const auto begin = static_cast<std::size_t>(shard.row_offsets[static_cast<std::size_t>(row)]);
        const auto end = static_cast<std::size_t>(shard.row_offsets[static_cast<std::size_t>(row) + 1]);
        if (end - begin < 2) continue;
        bool ascending = true, descending = true;
        for (std::size_t entry = begin + 1; entry < end && (ascending || descending); ++entry) {
            ascending = ascending && genes[entry - 1] < genes[entry];
            descending = descending && genes[entry - 1] > genes[entry];
        }
        if (ascending) continue;
        if (descending) {
            std::reverse(genes + begin, genes + end);
            std::reverse(values + begin, values + end);
            continue;
        }
        scratch.clear();
        for (std::size_t entry = begin; entry < end; ++entry) scratch.emplace_back(genes[entry], values[entry]);
        std::stable_sort(scratch.begin(), scratch.end(),
                         [](const auto& left, const auto& right) { return left.first < right.first; });
        for (std::size_t entry = begin; entry < end; ++entry) {
            genes[entry] = scratch[entry - begin].first;
            values[entry] = scratch[entry - begin].second;
            if (!duplicate && entry > begin && genes[entry] == genes[entry - 1])
                duplicate = DuplicateEntry{row, genes[entry]};
        }
    }
    return duplicate;
}

}  // namespace

std::optional<DuplicateEntry> sort_rows(CsrShard& shard) { return sort_row_range(shard, 0, shard.num_rows()); }

std::optional<DuplicateEntry> sort_rows_parallel(CsrShard& shard, std::int64_t first_row) {
    // Fixed row blocks, each with its own first duplicate; the earliest block's wins.
    constexpr std::int64_t k_block_rows = 512;
    const std::int64_t rows = shard.num_rows() - first_row;
    if (rows <= 0) return std::nullopt;
    const std::int64_t blocks = (rows + k_block_rows - 1) / k_block_rows;
    std::vector<std::optional<DuplicateEntry>> found(static_cast<std::size_t>(blocks));
    tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
        const std::int64_t begin = first_row + block * k_block_rows;
        found[static_cast<std::size_t>(block)] = sort_row_range(shard, begin, std::min(shard.num_rows(), begin + k_block_rows));
    });
    for (const auto& duplicate : found)
        if (duplicate) return duplicate;
    return std::nullopt;
}

}  // namespace fathom::io::detail
