#pragma once
/// Argument checks shared by every Backend implementation, so that all of them reject
/// the same inputs with the same messages.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend/Backend.hpp"

namespace fathom::backend_checks {

/// Throws std::invalid_argument "<owner>: <problem>" unless the shard keeps CsrShard's
/// invariants: offsets start at 0 and never decrease, arrays match the last offset,
/// num_genes in [0, 2^31), gene indices in range and strictly increasing in each row
/// (every primitive indexes per-gene arrays with them). The per-entry part runs in
/// parallel and reports the smallest bad row.
void check_shard(const CsrShard& shard, const std::string& owner);

/// Throws std::invalid_argument "Backend::<primitive>: <argument> has N entries; expected M".
void check_size(const char* primitive, const char* argument, std::size_t got, std::int64_t expected);

/// Checks the per-row and per-gene spans of a request against the shard's shape.
void check_request(const char* primitive, const ColumnStatsRequest& request, std::int64_t num_rows,
                   std::int64_t num_genes);

/// Block column of every gene (-1 when not in the block); checks that the block is
/// sorted, unique and in range. block_size receives the number of block genes.
std::vector<std::int32_t> block_map(const char* primitive, GeneBlock genes, std::int64_t num_genes,
                                    std::int64_t& block_size);

/// Checks that mean and inv_std have one entry per block gene.
void check_standardization(const char* primitive, const Standardization& standardization, std::int64_t block_size);

}  // namespace fathom::backend_checks
