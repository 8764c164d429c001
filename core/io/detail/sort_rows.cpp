#include "core/io/detail/sort_rows.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace fathom::io::detail {

std::optional<DuplicateEntry> sort_rows(CsrShard& shard) {
    std::vector<std::pair<std::int32_t, float>> scratch;
    std::optional<DuplicateEntry> duplicate;
    auto* genes = shard.gene_indices.data();
    auto* values = shard.values.data();
    for (std::int64_t row = 0; row < shard.num_rows(); ++row) {
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

}  // namespace fathom::io::detail
