#pragma once
/// Rows of a CSR matrix held compactly in memory and decoded back bit for bit: the
/// form in which an out-of-core run keeps the raw counts between its passes instead of
/// reading and inflating the file again (in the spirit of BPCells' bit-packed matrices).
///
/// Layout: the entries of the rows, in row order, are cut into groups of 128. Per
/// group, the gene indices are stored as gaps (gene - previous gene - 1, the previous
/// gene being -1 at each row's start) bit-packed at the group's widest gap, and the
/// values as unsigned integers bit-packed at the group's largest value when every value
/// of the group is a non-negative integer float below 2^31 (raw counts), else as the
/// float32 bits themselves. Each group starts with two width bytes. Row lengths are kept
/// as int64 row offsets. Single-threaded; callers pack and unpack disjoint blocks in
/// parallel.
#include <cstddef>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/CsrShard.hpp"

namespace fathom {

/// Entries per packed group.
inline constexpr std::int64_t k_packed_group_entries = 128;

/// A run of rows [row_begin, row_begin + num_rows()) in packed form.
struct PackedRows {
    std::int64_t row_begin = 0;                ///< global index of the first row
    std::int64_t num_genes = 0;                ///< columns
    std::vector<std::int64_t> row_offsets{0};  ///< num_rows() + 1 entries, starts at 0
    std::vector<std::uint8_t> bytes;           ///< the groups, then 8 bytes of padding

    std::int64_t num_rows() const noexcept { return static_cast<std::int64_t>(row_offsets.size()) - 1; }
    std::int64_t nnz() const noexcept { return row_offsets.back(); }
    /// Bytes held (the packed groups and the row offsets).
    std::int64_t memory_bytes() const noexcept {
        return static_cast<std::int64_t>(bytes.capacity() + row_offsets.capacity() * sizeof(std::int64_t));
    }
};

/// Packs rows [first_row, last_row) of `rows` (gene indices strictly increasing within
/// each row and in [0, num_genes), as CsrShard promises); the result's row_begin is
/// rows.row_begin + first_row. Throws std::invalid_argument when a row's indices are not
/// strictly increasing or lie outside [0, num_genes), std::out_of_range for rows outside
/// `rows`.
PackedRows pack_rows(const CsrShard& rows, std::int64_t first_row, std::int64_t last_row);
/// Packs every row of `rows`.
PackedRows pack_rows(const CsrShard& rows);

/// The entries of rows [first_row, last_row) of `packed` (indices local to it), written
/// to genes[0 ..) and values[0 ..), which must hold the rows' entries. The same bits as
/// the CsrShard that was packed.
void unpack_rows(const PackedRows& packed, std::int64_t first_row, std::int64_t last_row, std::int32_t* genes,
                 float* values);

/// The whole of `packed` as a CsrShard (row_begin and num_genes as packed).
CsrShard unpack_rows(const PackedRows& packed);

/// Rows [first_row, last_row) of a PackedRows decoded one at a time, in order, into
/// buffers reused from row to row: for a pass that looks at each row once, without
/// making a CsrShard of the rows (the same bits as unpack_rows). Single-threaded.
class PackedRowReader {
public:
    /// Throws std::out_of_range for rows outside `packed`, which must outlive the reader.
    PackedRowReader(const PackedRows& packed, std::int64_t first_row, std::int64_t last_row);
    /// The next row's gene indices and values (valid until the next call), or false
    /// after the last row.
    bool next(std::span<const std::int32_t>& genes, std::span<const float>& values);

private:
    void next_group();

    const PackedRows& m_packed;
    std::int64_t m_row = 0, m_last_row = 0;
    const std::uint8_t* m_group = nullptr;  ///< the group decoded (or, while m_group_count = 0, the next)
    std::size_t m_group_first = 0;           ///< its first entry
    std::size_t m_group_count = 0;           ///< its entries; 0 = none decoded yet
    std::array<std::uint32_t, k_packed_group_entries> m_gaps{};
    std::array<float, k_packed_group_entries> m_values{};
    std::vector<std::int32_t> m_row_genes;
    std::vector<float> m_row_values;
};

}  // namespace fathom
