#include "core/engine/detail/PackedMatrix.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fathom::detail {

void PackedMatrix::add(const CsrShard& rows) {
    if (!m_chunks.empty() && rows.row_begin < m_chunks.back().row_begin + m_chunks.back().num_rows())
        throw std::logic_error("PackedMatrix::add: rows from " + std::to_string(rows.row_begin) +
                               " overlap the rows held");
    const std::int64_t num_rows = rows.num_rows();
    const std::int64_t num_chunks = (num_rows + k_packed_chunk_rows - 1) / k_packed_chunk_rows;
    std::vector<PackedRows> chunks(static_cast<std::size_t>(num_chunks));
    tbb::parallel_for(std::int64_t{0}, num_chunks, [&](std::int64_t chunk) {
        const std::int64_t first = chunk * k_packed_chunk_rows;
        chunks[static_cast<std::size_t>(chunk)] = pack_rows(rows, first, std::min(num_rows, first + k_packed_chunk_rows));
    });
    for (PackedRows& chunk : chunks) {
        m_bytes += chunk.memory_bytes();
        m_nnz += chunk.nnz();
        m_chunks.push_back(std::move(chunk));
    }
}

bool PackedMatrix::holds(std::int64_t begin, std::int64_t end) const {
    if (begin >= end) return true;
    auto chunk = std::upper_bound(m_chunks.begin(), m_chunks.end(), begin,
                                  [](std::int64_t row, const PackedRows& packed) { return row < packed.row_begin; });
    if (chunk == m_chunks.begin()) return false;
    --chunk;
    // Contiguous chunks from the one holding `begin` until `end`.
    std::int64_t covered = chunk->row_begin;
    for (; chunk != m_chunks.end() && chunk->row_begin == covered && covered < end; ++chunk) covered += chunk->num_rows();
    return covered >= end && begin >= m_chunks.front().row_begin;
}

std::vector<std::int64_t> PackedMatrix::row_offsets() const {
    if (!holds(0, m_shape.num_cells))
        throw std::logic_error("PackedMatrix::row_offsets: not every row of the matrix is held");
    std::vector<std::int64_t> offsets{0};
    offsets.reserve(static_cast<std::size_t>(m_shape.num_cells + 1));
    for (const PackedRows& chunk : m_chunks) {
        const std::int64_t base = offsets.back();
        for (std::size_t row = 1; row < chunk.row_offsets.size(); ++row) offsets.push_back(base + chunk.row_offsets[row]);
    }
    return offsets;
}

std::span<const PackedRows> PackedMatrix::chunks(std::int64_t begin, std::int64_t end) const {
    if (begin < 0 || end < begin || end > m_shape.num_cells || !holds(begin, end))
        throw std::out_of_range("PackedMatrix::chunks: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") are not held");
    if (begin == end) return {};
    const auto first = std::upper_bound(m_chunks.begin(), m_chunks.end(), begin,
                                        [](std::int64_t row, const PackedRows& packed) { return row < packed.row_begin; }) - 1;
    const auto last = std::lower_bound(first, m_chunks.end(), end,
                                       [](const PackedRows& packed, std::int64_t row) { return packed.row_begin < row; });
    return {&*first, static_cast<std::size_t>(last - first)};
}

CsrShard PackedMatrix::read_rows(std::int64_t begin, std::int64_t end) const {
    CsrShard out;
    out.row_begin = begin;
    out.num_genes = m_shape.num_genes;
    append_rows(begin, end, out);
    return out;
}

void PackedMatrix::append_rows(std::int64_t begin, std::int64_t end, CsrShard& out) const {
    if (begin < 0 || end < begin || end > m_shape.num_cells || !holds(begin, end))
        throw std::out_of_range("PackedMatrix::read_rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") are not held");
    if (out.num_rows() == 0) out.row_begin = begin;
    if (out.row_end() != begin)
        throw std::logic_error("PackedMatrix::append_rows: rows from " + std::to_string(begin) + " appended after row " +
                               std::to_string(out.row_end()));
    out.num_genes = m_shape.num_genes;
    if (begin == end) return;
    // The chunks overlapping [begin, end), each with its local rows and output entries.
    struct Part {
        const PackedRows* chunk;
        std::int64_t first_row, last_row, entry;
    };
    std::vector<Part> parts;
    auto chunk = std::upper_bound(m_chunks.begin(), m_chunks.end(), begin,
                                  [](std::int64_t row, const PackedRows& packed) { return row < packed.row_begin; }) - 1;
    out.row_offsets.reserve(out.row_offsets.size() + static_cast<std::size_t>(end - begin));
    for (; chunk != m_chunks.end() && chunk->row_begin < end; ++chunk) {
        const std::int64_t first = std::max(begin, chunk->row_begin) - chunk->row_begin;
        const std::int64_t last = std::min(end, chunk->row_begin + chunk->num_rows()) - chunk->row_begin;
        parts.push_back({&*chunk, first, last, out.row_offsets.back()});
        const std::int64_t base = out.row_offsets.back() - chunk->row_offsets[static_cast<std::size_t>(first)];
        for (std::int64_t row = first + 1; row <= last; ++row)
            out.row_offsets.push_back(base + chunk->row_offsets[static_cast<std::size_t>(row)]);
    }
    out.gene_indices.resize(static_cast<std::size_t>(out.nnz()));
    out.values.resize(static_cast<std::size_t>(out.nnz()));
    tbb::parallel_for(std::size_t{0}, parts.size(), [&](std::size_t index) {
        const Part& part = parts[index];
        unpack_rows(*part.chunk, part.first_row, part.last_row, out.gene_indices.data() + part.entry,
                    out.values.data() + part.entry);
    });
}

std::vector<std::int64_t> PackedRowSource::row_offsets() { return m_matrix->row_offsets(); }

}  // namespace fathom::detail
