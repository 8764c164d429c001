#pragma once
/// Matrix Market reader internals exposed for tests (the cache threshold). Not part of
/// the public API: use io::open_dataset / io::open_matrix_market.
#include <cstdint>
#include <string>

#include "core/io/RowSource.hpp"

namespace fathom::io::detail {

/// Knobs of the Matrix Market reader.
struct MatrixMarketTuning {
    /// Keep the whole matrix in memory (built during the opening pass) when its CSR form
    /// (8 bytes per row offset + 8 per entry, from the declared entry count) is at most
    /// this many bytes; 0 = never cache, every read_rows streams the file.
    std::int64_t cache_limit_bytes = std::int64_t{64} << 20;
};

/// io::open_matrix_market with explicit tuning.
OpenedDataset open_matrix_market(const std::string& path, const ReadOptions& options,
                                 const MatrixMarketTuning& tuning);

}  // namespace fathom::io::detail
