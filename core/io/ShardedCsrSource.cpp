#include "core/io/ShardedCsrSource.hpp"

#include <stdexcept>

namespace fathom::io {

CsrShard ShardedCsrSource::read_rows(std::int64_t begin, std::int64_t end) {
    if (begin < 0 || end < begin || end > m_matrix->num_cells())
        throw std::out_of_range("ShardedCsrSource::read_rows: [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") outside the matrix's rows");
    CsrShard out;
    out.row_begin = begin;
    out.num_genes = m_matrix->num_genes();
    out.row_offsets.reserve(static_cast<std::size_t>(end - begin + 1));
    for (const auto& shard : m_matrix->shards()) {
        const std::int64_t first = std::max(begin, shard.row_begin);
        const std::int64_t last = std::min(end, shard.row_end());
        if (first >= last) continue;
        const auto local_first = static_cast<std::size_t>(first - shard.row_begin);
        const auto local_last = static_cast<std::size_t>(last - shard.row_begin);
        const auto entry_first = shard.row_offsets[local_first];
        const auto entry_last = shard.row_offsets[local_last];
        const std::int64_t shift = out.row_offsets.back() - entry_first;
        for (auto row = local_first + 1; row <= local_last; ++row) out.row_offsets.push_back(shard.row_offsets[row] + shift);
        out.gene_indices.insert(out.gene_indices.end(), shard.gene_indices.begin() + entry_first,
                                shard.gene_indices.begin() + entry_last);
        out.values.insert(out.values.end(), shard.values.begin() + entry_first, shard.values.begin() + entry_last);
    }
    return out;
}

std::vector<std::int64_t> ShardedCsrSource::row_offsets() {
    std::vector<std::int64_t> offsets{0};
    offsets.reserve(static_cast<std::size_t>(m_matrix->num_cells() + 1));
    for (const auto& shard : m_matrix->shards())
        for (std::size_t row = 1; row < shard.row_offsets.size(); ++row)
            offsets.push_back(offsets.back() + shard.row_offsets[row] - shard.row_offsets[row - 1]);
    return offsets;
}

}  // namespace fathom::io
