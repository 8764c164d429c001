#pragma once
/// One row shard of a cells x genes sparse matrix in CSR form.
#include <cstdint>
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

}  // namespace fathom
