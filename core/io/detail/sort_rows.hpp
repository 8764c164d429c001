#pragma once
/// Per-row sorting of CSR entries for readers whose files do not guarantee sorted
/// indices (10x HDF5, Matrix Market). Not part of the public API.
#include <cstdint>
#include <optional>

#include "core/data/CsrShard.hpp"

namespace fathom::io::detail {

/// A gene index stored twice in one row: local row (0-based within the shard) and gene.
struct DuplicateEntry {
    std::int64_t row = 0;
    std::int32_t gene = 0;
};

/// Sorts each row of `shard` by gene index (values follow their index). Rows already
/// ascending are left alone and strictly descending rows (CellRanger 3 writes some) are
/// reversed, so the common cases cost one comparison per entry. Returns the first
/// duplicate gene index found in a row, or nullopt when every row is strictly increasing.
std::optional<DuplicateEntry> sort_rows(CsrShard& shard);
/// The same for rows [first_row, num_rows()) only, in parallel (oneTBB); the duplicate
/// returned is the one of the first such row (row local to the shard), as sort_rows finds.
std::optional<DuplicateEntry> sort_rows_parallel(CsrShard& shard, std::int64_t first_row = 0);

}  // namespace fathom::io::detail
