#include "core/data/CsrShard.hpp"

namespace fathom {

void CsrShard::check_invariants() const {
    if (row_offsets.empty() || row_offsets.front() != 0)
        throw std::logic_error("CsrShard: row_offsets must start at 0");
    const auto total = row_offsets.back();
    if (static_cast<std::int64_t>(gene_indices.size()) != total || static_cast<std::int64_t>(values.size()) != total)
        throw std::logic_error("CsrShard: gene_indices/values size != row_offsets.back()");
    for (std::size_t row = 0; row + 1 < row_offsets.size(); ++row) {
        const auto begin = row_offsets[row];
        const auto end = row_offsets[row + 1];
        if (end < begin) throw std::logic_error("CsrShard: row_offsets decrease at row " + std::to_string(row));
        for (auto entry = begin; entry < end; ++entry) {
            const auto gene = gene_indices[static_cast<std::size_t>(entry)];
            if (gene < 0 || gene >= num_genes)
                throw std::logic_error("CsrShard: gene index out of range in row " + std::to_string(row));
            if (entry > begin && gene <= gene_indices[static_cast<std::size_t>(entry - 1)])
                throw std::logic_error("CsrShard: gene indices not strictly increasing in row " + std::to_string(row));
        }
    }
}

}  // namespace fathom
