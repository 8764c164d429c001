#pragma once
/// The raw matrix rows of an out-of-core run kept in memory in packed form (PackedRows)
/// after the first streamed pass, so that the later passes (the HVG block, export, gene
/// queries) decode them instead of reading and inflating the file again. Held only while
/// it fits the memory budget.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/data/PackedRows.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::detail {

/// Rows packed in chunks of this many (the unit of parallel packing and unpacking).
/// A chunk's bytes (about 3 MB per 1,000 rows of 2,000 entries) are one allocation,
/// which the allocator rounds up to whole 2 MiB huge pages: chunks of a few thousand
/// rows keep that rounding to a few percent of the packed bytes.
inline constexpr std::int64_t k_packed_chunk_rows = 4096;

/// Contiguous runs of packed rows (one run per shard of this process), in row order.
class PackedMatrix {
public:
    explicit PackedMatrix(MatrixShape shape) : m_shape(shape) {}

    /// Packs `rows` (a block of a shard, after the last block added, in row order) in
    /// chunks of k_packed_chunk_rows rows, in parallel.
    void add(const CsrShard& rows);
    /// Bytes held.
    std::int64_t memory_bytes() const noexcept { return m_bytes; }
    /// Entries held.
    std::int64_t nnz() const noexcept { return m_nnz; }
    /// Whether every row of [begin, end) is held.
    bool holds(std::int64_t begin, std::int64_t end) const;
    /// Row offsets of every row (num_cells + 1); throws std::logic_error unless every
    /// row is held.
    std::vector<std::int64_t> row_offsets() const;
    /// Rows [begin, end) (all held) as a CsrShard with row_begin = begin, unpacked in
    /// parallel; the same bits as the rows that were added.
    CsrShard read_rows(std::int64_t begin, std::int64_t end) const;
    /// The same rows appended to `rows` (its rows must end at `begin`), unpacked in place.
    void append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows) const;
    /// The packed runs holding rows [begin, end) (all held), in row order: the first may
    /// start before `begin`, the last end after `end`. Throws std::out_of_range unless
    /// every row is held.
    std::span<const PackedRows> chunks(std::int64_t begin, std::int64_t end) const;
    const MatrixShape& shape() const noexcept { return m_shape; }

private:
    MatrixShape m_shape;
    std::vector<PackedRows> m_chunks;  ///< by row_begin
    std::int64_t m_bytes = 0;
    std::int64_t m_nnz = 0;
};

/// A RowSource over a PackedMatrix holding every row of the matrix.
class PackedRowSource final : public io::RowSource {
public:
    explicit PackedRowSource(std::shared_ptr<const PackedMatrix> matrix) : m_matrix(std::move(matrix)) {}
    MatrixShape shape() const override { return m_matrix->shape(); }
    std::int64_t nnz() const override { return m_matrix->nnz(); }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override { return m_matrix->read_rows(begin, end); }
    void append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows) override {
        m_matrix->append_rows(begin, end, rows);
    }
    /// From the packed rows; throws std::logic_error unless every row is held.
    std::vector<std::int64_t> row_offsets() override;
    std::unique_ptr<io::RowSource> clone() const override { return std::make_unique<PackedRowSource>(m_matrix); }
    /// The packed rows read.
    const PackedMatrix& matrix() const noexcept { return *m_matrix; }

private:
    std::shared_ptr<const PackedMatrix> m_matrix;
};

}  // namespace fathom::detail
