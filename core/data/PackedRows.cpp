#include "core/data/PackedRows.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace fathom {

namespace {

constexpr std::size_t k_group = static_cast<std::size_t>(k_packed_group_entries);
/// Width byte of a value group stored as float32 bits.
constexpr std::uint8_t k_raw_floats = 0xFF;
/// Zero bytes after the last group, so that every 64-bit load of a group stays inside.
constexpr std::size_t k_padding = 8;

std::size_t packed_bytes(std::size_t count, unsigned width) { return (count * width + 7) / 8; }

/// Writes `count` values (each < 2^width, width 1 ... 32) as one little-endian bit stream
/// (value i at bits [i * width, (i + 1) * width)) to `out`, which has room for
/// packed_bytes(count, width) + 8 bytes. Bits collect in a register and leave in whole
/// 64-bit words, so no store waits on the one before it.
inline void put_stream(std::uint8_t* out, const std::uint32_t* values, std::size_t count, unsigned width) {
    std::uint64_t word = 0;
    unsigned filled = 0;
    for (std::size_t index = 0; index < count; ++index) {
        const std::uint64_t value = values[index];
        word |= value << filled;
        filled += width;
        if (filled >= 64) {
            std::memcpy(out, &word, sizeof word);
            out += sizeof word;
            filled -= 64;
            word = filled ? value >> (width - filled) : 0;
        }
    }
    if (filled) std::memcpy(out, &word, sizeof word);  // the padding takes the spare bytes
}

template <unsigned Width>
void unpack_width(const std::uint8_t* base, std::size_t count, std::uint32_t* out) {
    if constexpr (Width == 0) {
        std::fill(out, out + count, 0u);
    } else {
        constexpr std::uint64_t mask = (std::uint64_t{1} << Width) - 1;
        for (std::size_t index = 0; index < count; ++index) {
            const std::size_t position = index * Width;
            std::uint64_t word;
            std::memcpy(&word, base + position / 8, sizeof word);
            out[index] = static_cast<std::uint32_t>((word >> (position % 8)) & mask);
        }
    }
}

using Unpacker = void (*)(const std::uint8_t*, std::size_t, std::uint32_t*);

template <std::size_t... Widths>
constexpr std::array<Unpacker, sizeof...(Widths)> make_unpackers(std::index_sequence<Widths...>) {
    return {&unpack_width<static_cast<unsigned>(Widths)>...};
}

/// One unpacker per width 0 ... 32.
constexpr auto k_unpackers = make_unpackers(std::make_index_sequence<33>{});

/// Throws, naming the first row whose gene index is out of order or outside
/// [0, num_genes) (rows in CSR form from `row_begin`).
[[noreturn]] void throw_bad_gene(std::int64_t row_begin, std::int64_t num_genes, const std::vector<std::int64_t>& row_offsets,
                                 const std::int32_t* gene_indices) {
    for (std::size_t row = 0; row + 1 < row_offsets.size(); ++row) {
        std::int64_t previous = -1;
        for (auto entry = row_offsets[row]; entry < row_offsets[row + 1]; ++entry) {
            const std::int64_t gene = gene_indices[entry];
            if (gene <= previous || gene >= num_genes)
                throw std::invalid_argument("pack_rows: row " + std::to_string(row_begin + static_cast<std::int64_t>(row)) +
                                            " has gene index " + std::to_string(gene) +
                                            (gene >= num_genes || gene < 0 ? " outside [0, " + std::to_string(num_genes) + ")"
                                                                           : " not after " + std::to_string(previous)));
            previous = gene;
        }
    }
    throw std::logic_error("pack_rows: a bad gene index was found but not located");
}

/// Bytes of the group of `count` entries starting at `group`.
inline std::size_t group_size(const std::uint8_t* group, std::size_t count) {
    const unsigned gap_width = group[0], value_width = group[1];
    return 2 + packed_bytes(count, gap_width) +
           (value_width == k_raw_floats ? 4 * count : packed_bytes(count, value_width));
}

}  // namespace

PackedRows pack_rows(const CsrShard& rows) { return pack_rows(rows, 0, rows.num_rows()); }

PackedRows pack_rows(const CsrShard& all_rows, std::int64_t first_row, std::int64_t last_row) {
    if (first_row < 0 || last_row < first_row || last_row > all_rows.num_rows())
        throw std::out_of_range("pack_rows: rows [" + std::to_string(first_row) + ", " + std::to_string(last_row) +
                                ") outside the shard's " + std::to_string(all_rows.num_rows()) + " rows");
    if (all_rows.gene_indices.size() != static_cast<std::size_t>(all_rows.nnz()) ||
        all_rows.values.size() != static_cast<std::size_t>(all_rows.nnz()))
        throw std::invalid_argument("pack_rows: gene_indices and values must hold row_offsets.back() entries");
    PackedRows packed;
    packed.row_begin = all_rows.row_begin + first_row;
    packed.num_genes = all_rows.num_genes;
    const std::int64_t base = all_rows.row_offsets[static_cast<std::size_t>(first_row)];
    packed.row_offsets.resize(static_cast<std::size_t>(last_row - first_row + 1));
    for (std::int64_t row = first_row; row <= last_row; ++row)
        packed.row_offsets[static_cast<std::size_t>(row - first_row)] = all_rows.row_offsets[static_cast<std::size_t>(row)] - base;
    const auto nnz = static_cast<std::size_t>(packed.nnz());
    // The selected rows' entries.
    struct View {
        std::int64_t row_begin, num_genes;
        const std::vector<std::int64_t>& row_offsets;
        const std::int32_t* gene_indices;
        const float* values;
    } rows{packed.row_begin, packed.num_genes, packed.row_offsets, all_rows.gene_indices.data() + base,
           all_rows.values.data() + base};
    // Gaps of every entry (row-aware), checked as they are made.
    std::array<std::uint32_t, k_group> gaps{}, counts{};
    // Groups are written into a per-thread scratch buffer sized for the worst case (32-bit
    // gaps and raw floats), then copied once into an exact allocation.
    thread_local std::vector<std::uint8_t> scratch;
    const std::size_t worst = (nnz / k_group + 1) * (2 + 8 * k_group) + k_padding;
    if (scratch.size() < worst) scratch.resize(worst);
    std::size_t size = 0;
    std::size_t row = 0;
    auto row_end = static_cast<std::size_t>(rows.row_offsets.size() > 1 ? rows.row_offsets[1] : 0);
    std::int64_t previous = -1;
    for (std::size_t first = 0; first < nnz; first += k_group) {
        const std::size_t count = std::min(k_group, nnz - first);
        std::uint32_t widest_gap = 0, largest = 0;
        // The group's gaps, run by run between row ends: inside a run each gap is the
        // difference of neighbours, a loop without branches. `bad` collects any index
        // out of order or range; the rows are then checked one by one for the message.
        const std::int32_t* genes = rows.gene_indices + first;
        std::uint32_t bad = 0;
        for (std::size_t index = 0; index < count;) {
            while (first + index == row_end) {
                ++row;
                row_end = static_cast<std::size_t>(rows.row_offsets[row + 1]);
                previous = -1;
            }
            const std::size_t run = std::min(count, row_end - first);
            const std::int64_t head = genes[index];
            bad |= (head <= previous || head >= rows.num_genes ? 1u : 0u);
            gaps[index] = static_cast<std::uint32_t>(head - previous - 1);
            widest_gap |= gaps[index];
            for (std::size_t at = index + 1; at < run; ++at) {
                const std::int32_t gene = genes[at], before = genes[at - 1];
                bad |= ((gene <= before) | (gene >= rows.num_genes)) ? 1u : 0u;
                gaps[at] = static_cast<std::uint32_t>(gene) - static_cast<std::uint32_t>(before) - 1u;
                widest_gap |= gaps[at];
            }
            previous = genes[run - 1];
            index = run;
        }
        if (bad) throw_bad_gene(rows.row_begin, rows.num_genes, rows.row_offsets, rows.gene_indices);
        // The values as packed integers when every one is a non-negative integer below
        // 2^31 that converts back to the same bits (-0.0, NaN and fractions keep their
        // float bits), tested without a branch per value.
        std::uint32_t integer = 1;
        for (std::size_t index = 0; index < count; ++index) {
            const float value = rows.values[first + index];
            const bool in_range = value >= 0.0f && value < 2147483648.0f;
            const auto whole = static_cast<std::int32_t>(in_range ? value : 0.0f);
            integer &= (in_range && std::bit_cast<std::uint32_t>(static_cast<float>(whole)) == std::bit_cast<std::uint32_t>(value))
                           ? 1u
                           : 0u;
            counts[index] = static_cast<std::uint32_t>(whole);
            largest |= counts[index];
        }
        const bool integers = integer != 0;
        const auto gap_width = static_cast<unsigned>(std::bit_width(widest_gap));
        const auto value_width = integers ? static_cast<unsigned>(std::bit_width(largest)) : unsigned{k_raw_floats};
        const std::size_t at = size;
        const std::size_t gap_bytes = packed_bytes(count, gap_width);
        const std::size_t value_bytes = integers ? packed_bytes(count, value_width) : 4 * count;
        std::memset(scratch.data() + at, 0, 2 + gap_bytes + value_bytes + k_padding);
        std::uint8_t* group = scratch.data() + at;
        group[0] = static_cast<std::uint8_t>(gap_width);
        group[1] = static_cast<std::uint8_t>(value_width);
        std::uint8_t* stream = group + 2;
        if (gap_width > 0) put_stream(stream, gaps.data(), count, gap_width);
        stream += gap_bytes;
        if (!integers)
            std::memcpy(stream, rows.values + first, 4 * count);
        else if (value_width > 0)
            put_stream(stream, counts.data(), count, value_width);
        size = at + 2 + gap_bytes + value_bytes;
    }
    // Copied once into an allocation of the exact size (no zero-filling pass before it).
    packed.bytes.reserve(size + k_padding);
    packed.bytes.assign(scratch.data(), scratch.data() + size);
    packed.bytes.insert(packed.bytes.end(), k_padding, std::uint8_t{0});
    return packed;
}

void unpack_rows(const PackedRows& packed, std::int64_t first_row, std::int64_t last_row, std::int32_t* genes,
                 float* values) {
    if (first_row < 0 || last_row < first_row || last_row > packed.num_rows())
        throw std::out_of_range("unpack_rows: rows [" + std::to_string(first_row) + ", " + std::to_string(last_row) +
                                ") outside the " + std::to_string(packed.num_rows()) + " packed rows");
    const auto begin = static_cast<std::size_t>(packed.row_offsets[static_cast<std::size_t>(first_row)]);
    const auto end = static_cast<std::size_t>(packed.row_offsets[static_cast<std::size_t>(last_row)]);
    if (begin == end) return;
    const std::size_t nnz = static_cast<std::size_t>(packed.nnz());
    // Walk the groups' headers to the one holding entry `begin`.
    const std::uint8_t* group = packed.bytes.data();
    std::size_t first = 0;
    while (first + k_group <= begin) {
        group += group_size(group, k_group);
        first += k_group;
    }
    std::array<std::uint32_t, k_group> gaps{}, counts{};
    auto row = static_cast<std::size_t>(first_row);
    auto row_end = static_cast<std::size_t>(packed.row_offsets[row + 1]);
    std::int64_t previous = -1;
    for (; first < end; first += k_group) {
        const std::size_t count = std::min(k_group, nnz - first);
        const unsigned gap_width = group[0], value_width = group[1];
        const std::uint8_t* stream = group + 2;
        k_unpackers[gap_width](stream, count, gaps.data());
        stream += packed_bytes(count, gap_width);
        const bool raw = value_width == k_raw_floats;
        if (!raw) k_unpackers[value_width](stream, count, counts.data());
        const std::size_t from = std::max(first, begin), to = std::min(first + count, end);
        for (std::size_t entry = from; entry < to; ++entry) {
            while (entry == row_end) {
                ++row;
                row_end = static_cast<std::size_t>(packed.row_offsets[row + 1]);
                previous = -1;
            }
            previous += 1 + static_cast<std::int64_t>(gaps[entry - first]);
            genes[entry - begin] = static_cast<std::int32_t>(previous);
        }
        if (raw)
            std::memcpy(values + (from - begin), stream + 4 * (from - first), 4 * (to - from));
        else
            for (std::size_t entry = from; entry < to; ++entry)
                values[entry - begin] = static_cast<float>(counts[entry - first]);
        group += group_size(group, count);
    }
}

PackedRowReader::PackedRowReader(const PackedRows& packed, std::int64_t first_row, std::int64_t last_row)
    : m_packed(packed), m_row(first_row), m_last_row(last_row) {
    if (first_row < 0 || last_row < first_row || last_row > packed.num_rows())
        throw std::out_of_range("PackedRowReader: rows [" + std::to_string(first_row) + ", " + std::to_string(last_row) +
                                ") outside the " + std::to_string(packed.num_rows()) + " packed rows");
    // Walk the groups' headers to the one holding the first row's first entry.
    const auto begin = static_cast<std::size_t>(packed.row_offsets[static_cast<std::size_t>(first_row)]);
    m_group = packed.bytes.data();
    while (m_group_first + k_group <= begin) {
        m_group += group_size(m_group, k_group);
        m_group_first += k_group;
    }
}

void PackedRowReader::next_group() {
    if (m_group_count > 0) {
        m_group += group_size(m_group, m_group_count);
        m_group_first += m_group_count;
    }
    m_group_count = std::min(k_group, static_cast<std::size_t>(m_packed.nnz()) - m_group_first);
    const unsigned gap_width = m_group[0], value_width = m_group[1];
    const std::uint8_t* stream = m_group + 2;
    k_unpackers[gap_width](stream, m_group_count, m_gaps.data());
    stream += packed_bytes(m_group_count, gap_width);
    if (value_width == k_raw_floats) {
        std::memcpy(m_values.data(), stream, 4 * m_group_count);
    } else {
        std::array<std::uint32_t, k_group> counts;
        k_unpackers[value_width](stream, m_group_count, counts.data());
        for (std::size_t index = 0; index < m_group_count; ++index) m_values[index] = static_cast<float>(counts[index]);
    }
}

bool PackedRowReader::next(std::span<const std::int32_t>& genes, std::span<const float>& values) {
    if (m_row >= m_last_row) return false;
    const auto begin = static_cast<std::size_t>(m_packed.row_offsets[static_cast<std::size_t>(m_row)]);
    const auto end = static_cast<std::size_t>(m_packed.row_offsets[static_cast<std::size_t>(m_row) + 1]);
    ++m_row;
    const std::size_t length = end - begin;
    if (m_row_genes.size() < length) {
        m_row_genes.resize(length);
        m_row_values.resize(length);
    }
    std::int64_t previous = -1;
    for (std::size_t entry = begin; entry < end;) {
        if (m_group_count == 0 || entry >= m_group_first + m_group_count) next_group();
        const std::size_t to = std::min(end, m_group_first + m_group_count);
        const std::size_t offset = entry - m_group_first;
        for (std::size_t at = entry; at < to; ++at) {
            previous += 1 + static_cast<std::int64_t>(m_gaps[at - m_group_first]);
            m_row_genes[at - begin] = static_cast<std::int32_t>(previous);
        }
        std::memcpy(m_row_values.data() + (entry - begin), m_values.data() + offset, 4 * (to - entry));
        entry = to;
    }
    genes = std::span<const std::int32_t>(m_row_genes.data(), length);
    values = std::span<const float>(m_row_values.data(), length);
    return true;
}

CsrShard unpack_rows(const PackedRows& packed) {
    CsrShard rows;
    rows.row_begin = packed.row_begin;
    rows.num_genes = packed.num_genes;
    rows.row_offsets = packed.row_offsets;
    rows.gene_indices.resize(static_cast<std::size_t>(packed.nnz()));
    rows.values.resize(static_cast<std::size_t>(packed.nnz()));
    unpack_rows(packed, 0, packed.num_rows(), rows.gene_indices.data(), rows.values.data());
    return rows;
}

}  // namespace fathom
