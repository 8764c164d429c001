#pragma once
/// One row shard of a cells x genes sparse matrix in CSR form.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fathom {

/// Rows [row_begin, row_begin + num_rows()) of a cells x genes matrix, as CSR.
/// int64 row offsets so that a shard may hold more than 2^31 non-zeros; int32
/// gene indices; float32 values. Gene indices are sorted and unique within a row
/// (readers sort, or reject, at load time).
struct CsrShard {
    std::int64_t row_begin = 0;                ///< global index of the first row
    std::int64_t num_genes = 0;                ///< columns
    std::vector<std::int64_t> row_offsets{0};  ///< num_rows() + 1 entries, starts at 0
    std::vector<std::int32_t> gene_indices;    ///< nnz entries, sorted within each row
    std::vector<float> values;                 ///< nnz entries

    std::int64_t num_rows() const noexcept { return static_cast<std::int64_t>(row_offsets.size()) - 1; }
    std::int64_t row_end() const noexcept { return row_begin + num_rows(); }
    std::int64_t nnz() const noexcept { return row_offsets.back(); }

    /// Throws std::logic_error naming the broken invariant (for tests and debug checks).
    void check_invariants() const;
};

/// Read-only view of consecutive rows of a CSR matrix held elsewhere (no copy): row r's
/// entries are [row_offsets[r], row_offsets[r + 1]) of gene_indices and values, the
/// offsets counting from wherever those arrays start (row_offsets[0] need not be 0).
struct CsrRowsView {
    std::int64_t row_begin = 0;                  ///< global index of the first row
    std::int64_t num_genes = 0;                  ///< columns
    std::span<const std::int64_t> row_offsets;   ///< num_rows() + 1 entries, non-decreasing
    const std::int32_t* gene_indices = nullptr;  ///< indexed by row_offsets
    const float* values = nullptr;               ///< indexed by row_offsets

    std::int64_t num_rows() const noexcept { return static_cast<std::int64_t>(row_offsets.size()) - 1; }
    std::int64_t row_end() const noexcept { return row_begin + num_rows(); }
    std::int64_t nnz() const noexcept { return row_offsets.empty() ? 0 : row_offsets.back() - row_offsets.front(); }
};

/// Rows [first_row, last_row) of `shard` (local indices) as a view.
inline CsrRowsView rows_view(const CsrShard& shard, std::int64_t first_row, std::int64_t last_row) {
    return CsrRowsView{shard.row_begin + first_row, shard.num_genes,
                       std::span<const std::int64_t>(shard.row_offsets).subspan(static_cast<std::size_t>(first_row),
                                                                                static_cast<std::size_t>(last_row - first_row + 1)),
                       shard.gene_indices.data(), shard.values.data()};
}
inline CsrRowsView rows_view(const CsrShard& shard) { return rows_view(shard, 0, shard.num_rows()); }

}  // namespace fathom
