#include "core/backend/shard_checks.hpp"

#include <atomic>
#include <limits>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace fathom::backend_checks {

void check_shard(const CsrShard& shard, const std::string& owner) {
    // CsrShard::check_invariants, with the per-entry part in parallel.
    const auto fail = [&owner](const std::string& problem) { throw std::invalid_argument(owner + ": " + problem); };
    if (shard.row_offsets.empty() || shard.row_offsets.front() != 0) fail("row_offsets must start at 0");
    if (shard.num_genes < 0 || shard.num_genes > std::numeric_limits<std::int32_t>::max())
        fail("num_genes is outside [0, 2^31)");
    const auto total = shard.row_offsets.back();
    if (static_cast<std::int64_t>(shard.gene_indices.size()) != total || static_cast<std::int64_t>(shard.values.size()) != total)
        fail("gene_indices/values size != row_offsets.back()");
    for (std::size_t row = 0; row + 1 < shard.row_offsets.size(); ++row)
        if (shard.row_offsets[row + 1] < shard.row_offsets[row]) fail("row_offsets decrease at row " + std::to_string(row));
    std::atomic<std::int64_t> bad_row{-1};
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, shard.num_rows(), 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        for (auto row = range.begin(); row < range.end(); ++row) {
            const auto begin = shard.row_offsets[static_cast<std::size_t>(row)];
            const auto end = shard.row_offsets[static_cast<std::size_t>(row) + 1];
            for (auto entry = begin; entry < end; ++entry) {
                const auto gene = shard.gene_indices[static_cast<std::size_t>(entry)];
                if (gene < 0 || gene >= shard.num_genes ||
                    (entry > begin && gene <= shard.gene_indices[static_cast<std::size_t>(entry) - 1])) {
                    // Keep the smallest bad row so the message does not depend on timing.
                    std::int64_t seen = bad_row.load();
                    while ((seen < 0 || row < seen) && !bad_row.compare_exchange_weak(seen, row)) {
                    }
                    return;
                }
            }
        }
    });
    if (bad_row.load() >= 0)
        fail("gene indices out of range or not strictly increasing in row " + std::to_string(bad_row.load()));
}

void check_size(const char* primitive, const char* argument, std::size_t got, std::int64_t expected) {
    if (static_cast<std::int64_t>(got) != expected)
        throw std::invalid_argument(std::string("Backend::") + primitive + ": " + argument + " has " +
                                    std::to_string(got) + " entries; expected " + std::to_string(expected));
}

void check_request(const char* primitive, const ColumnStatsRequest& request, std::int64_t num_rows,
                   std::int64_t num_genes) {
    if (!request.row_scale.empty()) check_size(primitive, "row_scale", request.row_scale.size(), num_rows);
    if (!request.column_max.empty()) check_size(primitive, "column_max", request.column_max.size(), num_genes);
    if (!request.row_mask.empty()) check_size(primitive, "row_mask", request.row_mask.size(), num_rows);
}

std::vector<std::int32_t> block_map(const char* primitive, GeneBlock genes, std::int64_t num_genes,
                                    std::int64_t& block_size) {
    std::vector<std::int32_t> map(static_cast<std::size_t>(num_genes), -1);
    if (genes.empty()) {
        for (std::int64_t gene = 0; gene < num_genes; ++gene) map[static_cast<std::size_t>(gene)] = static_cast<std::int32_t>(gene);
        block_size = num_genes;
        return map;
    }
    for (std::size_t column = 0; column < genes.size(); ++column) {
        const auto gene = genes[column];
        if (gene < 0 || gene >= num_genes)
            throw std::invalid_argument(std::string("Backend::") + primitive + ": block gene " + std::to_string(gene) +
                                        " is outside [0, " + std::to_string(num_genes) + ")");
        if (column > 0 && gene <= genes[column - 1])
            throw std::invalid_argument(std::string("Backend::") + primitive +
                                        ": block genes must be sorted and unique");
        map[static_cast<std::size_t>(gene)] = static_cast<std::int32_t>(column);
    }
    block_size = static_cast<std::int64_t>(genes.size());
    return map;
}

void check_standardization(const char* primitive, const Standardization& standardization, std::int64_t block_size) {
    check_size(primitive, "standardization.mean", standardization.mean.size(), block_size);
    check_size(primitive, "standardization.inv_std", standardization.inv_std.size(), block_size);
}

}  // namespace fathom::backend_checks
