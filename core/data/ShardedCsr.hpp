#pragma once
/// A cells x genes matrix held as row shards, one per device.
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

/// Half-open row range [begin, end).
struct RowRange {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::int64_t size() const noexcept { return end - begin; }
    friend bool operator==(const RowRange&, const RowRange&) = default;
};

/// Splits [0, num_cells) into num_shards contiguous ranges whose sizes differ by at
/// most one row (the first ranges get the extra rows). num_shards >= 1; ranges may be
/// empty when num_shards > num_cells.
std::vector<RowRange> split_rows_evenly(std::int64_t num_cells, int num_shards);

/// Splits rows so that each range holds about the same number of non-zeros, given the
/// matrix's global row offsets (num_cells + 1 entries). Every range is non-empty when
/// num_cells >= num_shards.
std::vector<RowRange> split_rows_by_nnz(std::span<const std::int64_t> row_offsets, int num_shards);

/// The whole matrix as an ordered set of row shards; shard k covers the rows right
/// after shard k-1. The full matrix is never concatenated: algorithms visit shards.
class ShardedCsr {
public:
    ShardedCsr() = default;
    /// Takes ownership of the shards; throws std::invalid_argument when they are not
    /// contiguous from row 0 or disagree on the number of genes.
    ShardedCsr(MatrixShape shape, std::vector<CsrShard> shards);

    const MatrixShape& shape() const noexcept { return m_shape; }
    std::int64_t num_cells() const noexcept { return m_shape.num_cells; }
    std::int64_t num_genes() const noexcept { return m_shape.num_genes; }
    std::int64_t nnz() const noexcept;
    int num_shards() const noexcept { return static_cast<int>(m_shards.size()); }

    const CsrShard& shard(int index) const { return m_shards.at(static_cast<std::size_t>(index)); }
    CsrShard& shard(int index) { return m_shards.at(static_cast<std::size_t>(index)); }
    const std::vector<CsrShard>& shards() const noexcept { return m_shards; }
    std::vector<CsrShard>& shards() noexcept { return m_shards; }

private:
    MatrixShape m_shape;
    std::vector<CsrShard> m_shards;
};

}  // namespace fathom
