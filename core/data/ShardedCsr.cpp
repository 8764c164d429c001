#include "core/data/ShardedCsr.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fathom {

std::vector<RowRange> split_rows_evenly(std::int64_t num_cells, int num_shards) {
    if (num_shards < 1) throw std::invalid_argument("split_rows_evenly: num_shards must be >= 1");
    if (num_cells < 0) throw std::invalid_argument("split_rows_evenly: num_cells must be >= 0");
    std::vector<RowRange> ranges;
    ranges.reserve(static_cast<std::size_t>(num_shards));
    const std::int64_t base = num_cells / num_shards;
    const std::int64_t extra = num_cells % num_shards;
    std::int64_t begin = 0;
    for (int shard = 0; shard < num_shards; ++shard) {
        const std::int64_t size = base + (shard < extra ? 1 : 0);
        ranges.push_back({begin, begin + size});
        begin += size;
    }
    return ranges;
}

std::vector<RowRange> split_rows_by_nnz(std::span<const std::int64_t> row_offsets, int num_shards) {
    if (num_shards < 1) throw std::invalid_argument("split_rows_by_nnz: num_shards must be >= 1");
    if (row_offsets.empty()) throw std::invalid_argument("split_rows_by_nnz: row_offsets is empty");
    const auto num_cells = static_cast<std::int64_t>(row_offsets.size()) - 1;
    if (num_cells < num_shards) return split_rows_evenly(num_cells, num_shards);
    const std::int64_t total = row_offsets.back() - row_offsets.front();
    std::vector<RowRange> ranges;
    std::int64_t begin = 0;
    for (int shard = 0; shard < num_shards; ++shard) {
        std::int64_t end = num_cells;
        if (shard + 1 < num_shards) {
            // Target cumulative nnz for the end of this shard; keep at least one row for
            // each shard still to come.
            const std::int64_t target = row_offsets.front() + total / num_shards * (shard + 1) +
                                        (total % num_shards) * (shard + 1) / num_shards;
            auto it = std::lower_bound(row_offsets.begin() + begin + 1, row_offsets.end(), target);
            end = static_cast<std::int64_t>(it - row_offsets.begin());
            end = std::clamp(end, begin + 1, num_cells - (num_shards - shard - 1));
        }
        ranges.push_back({begin, end});
        begin = end;
    }
    return ranges;
}

ShardedCsr::ShardedCsr(MatrixShape shape, std::vector<CsrShard> shards)
    : m_shape(shape), m_shards(std::move(shards)) {
    std::int64_t next_row = 0;
    for (std::size_t index = 0; index < m_shards.size(); ++index) {
        const auto& shard = m_shards[index];
        if (shard.row_begin != next_row)
            throw std::invalid_argument("ShardedCsr: shard " + std::to_string(index) + " starts at row " +
                                        std::to_string(shard.row_begin) + ", expected " + std::to_string(next_row));
        if (shard.num_genes != shape.num_genes)
            throw std::invalid_argument("ShardedCsr: shard " + std::to_string(index) + " has " +
                                        std::to_string(shard.num_genes) + " genes, expected " +
                                        std::to_string(shape.num_genes));
        next_row = shard.row_end();
    }
    if (next_row != shape.num_cells)
        throw std::invalid_argument("ShardedCsr: shards cover " + std::to_string(next_row) + " rows, expected " +
                                    std::to_string(shape.num_cells));
}

std::int64_t ShardedCsr::nnz() const noexcept {
    std::int64_t total = 0;
    for (const auto& shard : m_shards) total += shard.nnz();
    return total;
}

}  // namespace fathom
