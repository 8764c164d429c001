// Matrix Market coordinate files, alone or in a CellRanger folder.
//
// Folder (scanpy 1.9 `read_10x_mtx`): matrix.mtx[.gz] is features x barcodes and is
// transposed to cells x genes; barcodes.tsv[.gz] gives the obs index; features.tsv[.gz]
// (v3: id, name, feature type) or genes.tsv (v2: id, name) gives var: index = column 2
// (gene symbols), var['gene_ids'] = column 1, var['feature_types'] = column 3 when
// present; only features of ReadOptions::feature_type are kept (gex_only=True).
// Single file (scanpy `read_mtx`): rows are obs as stored, obs/var index "0", "1", ...
//
// Streaming: the opening pass validates every line and counts entries per cell (int64
// per cell); when the file is sorted by cell (CellRanger writes it so) it also records
// where each cell's entries start, so read_rows seeks straight to its rows and stops
// after them. Otherwise read_rows scans the whole file keeping only the requested rows'
// entries. Small matrices (detail::MatrixMarketTuning::cache_limit_bytes of CSR, 64 MiB
// by default) are kept in memory from the opening pass, so loading them costs one pass.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "core/io/detail/input_checks.hpp"
#include "core/io/detail/line_reader.hpp"
#include "core/io/detail/matrix_market.hpp"
#include "core/io/detail/sort_rows.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

namespace {

namespace fs = std::filesystem;

enum class Field { Integer, Real, Pattern };

/// The banner and size line.
struct Header {
    Field field = Field::Integer;
    std::int64_t rows = 0, cols = 0, entries = 0;
    std::int64_t size_line = 0;    ///< line number of the size line
    std::int64_t data_offset = 0;  ///< decompressed offset of the line after the size line
    std::int64_t data_line = 0;    ///< its line number
};

/// How error messages name things: file = what the user opened (folder or file),
/// object = "<matrix file name>: line N" in a folder, "line N" for a single file.
struct Naming {
    std::string dataset;
    std::string prefix;
    std::string line(std::int64_t number) const { return prefix + "line " + std::to_string(number); }
    [[noreturn]] void fail(std::int64_t line_number, const std::string& problem) const {
        throw FormatError(dataset, line(line_number), problem);
    }
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view next_token(std::string_view& line) {
    std::size_t start = 0;
    while (start < line.size() && is_blank(line[start])) ++start;
    std::size_t stop = start;
    while (stop < line.size() && !is_blank(line[stop])) ++stop;
    const auto token = line.substr(start, stop - start);
    line.remove_prefix(stop);
    return token;
}

/// Blank lines and '%' comment lines carry no entry.
bool skippable(std::string_view line) {
    for (char c : line) {
        if (c == '%') return true;
        if (!is_blank(c)) return false;
    }
    return true;
}

/// A token quoted for a message, cut short and with control bytes escaped (binary input).
std::string quoted(std::string_view text) {
    std::string out = "'";
    for (std::size_t index = 0; index < text.size() && index < 60; ++index) {
        const auto c = static_cast<unsigned char>(text[index]);
        if (c < 0x20 || c >= 0x7f) {
            static const char* digits = "0123456789abcdef";
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (text.size() > 60) out += "...";
    return out + "'";
}

bool parse_int(std::string_view token, std::int64_t& value) {
    if (!token.empty() && token.front() == '+') token.remove_prefix(1);
    const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
    return result.ec == std::errc() && result.ptr == token.data() + token.size() && !token.empty();
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Reads the banner, comments and size line; the reader is left at the first entry.
Header read_header(detail::LineReader& reader, const Naming& naming, std::int64_t max_genes, bool genes_are_rows) {
    const char* expected = "expected the banner '%%MatrixMarket matrix coordinate <integer|real|pattern> general'";
    std::string_view line;
    if (!reader.next(line)) naming.fail(1, "empty file; " + std::string(expected));
    std::string_view rest = line;
    const auto banner = next_token(rest);
    if (banner != "%%MatrixMarket") naming.fail(1, std::string(expected) + ", found " + quoted(line));
    const std::string object = lower(next_token(rest)), format = lower(next_token(rest)), field = lower(next_token(rest)),
                      symmetry = lower(next_token(rest));
    if (object != "matrix" || field.empty() || symmetry.empty() || !next_token(rest).empty())
        naming.fail(1, std::string(expected) + ", found " + quoted(line));
    if (format != "coordinate")
        naming.fail(1, "format '" + format + "' is not supported; only sparse 'coordinate' Matrix Market is read");
    Header header;
    if (field == "integer") header.field = Field::Integer;
    else if (field == "real" || field == "double") header.field = Field::Real;
    else if (field == "pattern") header.field = Field::Pattern;
    else naming.fail(1, "field '" + field + "' is not supported (integer, real or pattern)");
    if (symmetry != "general")
        naming.fail(1, "symmetry '" + symmetry + "' is not supported; expression matrices are 'general'");

    bool found_size_line = false;
    while (!found_size_line && reader.next(line)) found_size_line = !skippable(line);
    if (!found_size_line) naming.fail(reader.line_number() + 1, "file ends before the size line");
    header.size_line = reader.line_number();
    rest = line;
    std::int64_t sizes[3];
    for (auto& size : sizes) {
        const auto token = next_token(rest);
        if (!parse_int(token, size) || size < 0)
            naming.fail(header.size_line, "expected the size line '<rows> <columns> <entries>' (non-negative integers), found " +
                                              quoted(line));
    }
    if (!next_token(rest).empty())
        naming.fail(header.size_line, "expected the size line '<rows> <columns> <entries>', found " + quoted(line));
    header.rows = sizes[0];
    header.cols = sizes[1];
    header.entries = sizes[2];
    const std::int64_t genes = genes_are_rows ? header.rows : header.cols;
    if (genes > max_genes)
        naming.fail(header.size_line, std::to_string(genes) + " " + (genes_are_rows ? "rows" : "columns") +
                                          " (genes) exceed the 2^31 - 1 supported");
    const bool too_many = header.entries > 0 && (header.rows == 0 || header.entries / header.rows > header.cols ||
                                                 (header.entries / header.rows == header.cols && header.entries % header.rows != 0));
    if (too_many)
        naming.fail(header.size_line, "declares " + std::to_string(header.entries) + " entries, more than rows x columns = " +
                                          std::to_string(header.rows) + " x " + std::to_string(header.cols));
    const std::int64_t cells = genes_are_rows ? header.cols : header.rows;
    if (cells == 0 || genes == 0)
        naming.fail(header.size_line, "empty matrix: " + std::to_string(cells) + " cells x " + std::to_string(genes) +
                                          " genes (the size line declares " + std::to_string(header.rows) + " rows x " +
                                          std::to_string(header.cols) + " columns)");
    // The reader's index holds four int64 per cell and one per gene before any entry.
    detail::check_declared_size(naming.dataset, naming.line(header.size_line),
                                std::to_string(cells) + " cells x " + std::to_string(genes) + " genes",
                                4 * (static_cast<std::uint64_t>(cells) + 1) + static_cast<std::uint64_t>(genes), 8);
    header.data_offset = reader.next_offset();
    header.data_line = header.size_line + 1;
    return header;
}

/// One parsed entry: 1-based file row and column, value.
struct Entry {
    std::int64_t row = 0, col = 0;
    float value = 1.0f;
    bool integral = true;  ///< value is a non-negative integer
};

/// Parses and validates one entry line; on failure throws naming the line.
void parse_entry(std::string_view line, const Header& header, const Naming& naming, std::int64_t line_number,
                 Entry& entry) {
    std::string_view rest = line;
    const auto row_token = next_token(rest);
    const auto col_token = next_token(rest);
    const bool pattern = header.field == Field::Pattern;
    const char* fields = pattern ? "2 fields (row column)" : "3 fields (row column value)";
    if (col_token.empty()) naming.fail(line_number, std::string("expected ") + fields + ", found " + quoted(line));
    if (!parse_int(row_token, entry.row))
        naming.fail(line_number, "row index " + quoted(row_token) + " is not an integer");
    if (!parse_int(col_token, entry.col))
        naming.fail(line_number, "column index " + quoted(col_token) + " is not an integer");
    if (entry.row < 1 || entry.row > header.rows)
        naming.fail(line_number, "row index " + std::to_string(entry.row) + " outside 1.." + std::to_string(header.rows));
    if (entry.col < 1 || entry.col > header.cols)
        naming.fail(line_number, "column index " + std::to_string(entry.col) + " outside 1.." + std::to_string(header.cols));
    if (pattern) {
        entry.value = 1.0f;
        entry.integral = true;
    } else {
        auto value_token = next_token(rest);
        if (value_token.empty()) naming.fail(line_number, std::string("expected ") + fields + ", found " + quoted(line));
        if (header.field == Field::Integer) {
            std::int64_t value = 0;
            if (!parse_int(value_token, value)) {
                double as_real = 0.0;
                const auto parsed = std::from_chars(value_token.data(), value_token.data() + value_token.size(), as_real);
                naming.fail(line_number, "value " + quoted(value_token) +
                                             (parsed.ec == std::errc() ? " is not an integer (the banner says integer)"
                                                                       : " is not a number"));
            }
            if (value < 0)
                naming.fail(line_number, "negative value " + std::to_string(value) + " in an integer (count) matrix");
            entry.value = static_cast<float>(value);
            entry.integral = true;
        } else {
            if (!value_token.empty() && value_token.front() == '+') value_token.remove_prefix(1);
            double value = 0.0;
            const auto parsed = std::from_chars(value_token.data(), value_token.data() + value_token.size(), value);
            if (parsed.ptr != value_token.data() + value_token.size() || value_token.empty() ||
                (parsed.ec != std::errc() && parsed.ec != std::errc::result_out_of_range))
                naming.fail(line_number, "value " + quoted(value_token) + " is not a number");
            if (parsed.ec == std::errc::result_out_of_range || !std::isfinite(value))
                naming.fail(line_number, "value " + quoted(value_token) + " is not finite");
            entry.value = static_cast<float>(value);
            if (!std::isfinite(entry.value))
                naming.fail(line_number, "value " + quoted(value_token) + " overflows float32");
            entry.integral = value >= 0.0 && value == std::floor(value);
        }
    }
    if (!next_token(rest).empty())
        naming.fail(line_number, std::string("expected ") + fields + ", found more: " + quoted(line));
}

/// Everything the sources over one matrix share (immutable after open).
struct MtxIndex {
    std::string matrix_path;
    Naming naming;
    Header header;
    bool cells_are_columns = false;       ///< folder: file columns are cells (transposed)
    std::int64_t num_cells = 0;
    std::int64_t num_genes = 0;           ///< after feature selection
    std::vector<std::int32_t> gene_map;   ///< file gene -> kept gene or -1; empty = identity
    std::vector<std::int32_t> kept_genes; ///< kept gene -> file gene (when gene_map is set)
    std::vector<std::int64_t> row_offsets;///< num_cells + 1, kept entries
    bool sorted_by_cell = false;
    std::vector<std::int64_t> cell_offset, cell_line;  ///< num_cells + 1 when sorted
    std::shared_ptr<const CsrShard> cache;             ///< the whole matrix, or null

    std::int64_t cell_of(const Entry& entry) const { return (cells_are_columns ? entry.col : entry.row) - 1; }
    std::int64_t file_gene_of(const Entry& entry) const { return (cells_are_columns ? entry.row : entry.col) - 1; }
    std::int32_t gene_of(std::int64_t file_gene) const {
        return gene_map.empty() ? static_cast<std::int32_t>(file_gene) : gene_map[static_cast<std::size_t>(file_gene)];
    }
    std::int64_t file_gene_from(std::int32_t gene) const {
        return kept_genes.empty() ? gene : kept_genes[static_cast<std::size_t>(gene)];
    }
};

/// Lines holding the entry at 1-based file (row, col), by a fresh scan (error path only).
std::vector<std::int64_t> find_entry_lines(const MtxIndex& index, std::int64_t row, std::int64_t col) {
    detail::LineReader reader(index.matrix_path, index.naming.dataset, index.naming.prefix);
    reader.seek(index.header.data_offset, index.header.data_line);
    std::vector<std::int64_t> lines;
    std::string_view line;
    Entry entry;
    while (reader.next(line)) {
        if (skippable(line)) continue;
        parse_entry(line, index.header, index.naming, reader.line_number(), entry);
        if (entry.row == row && entry.col == col) lines.push_back(reader.line_number());
    }
    return lines;
}

[[noreturn]] void fail_duplicate(const MtxIndex& index, std::int64_t cell, std::int64_t file_gene) {
    const std::int64_t row = (index.cells_are_columns ? file_gene : cell) + 1;
    const std::int64_t col = (index.cells_are_columns ? cell : file_gene) + 1;
    const auto lines = find_entry_lines(index, row, col);
    std::string where;
    for (std::size_t position = 0; position + 1 < lines.size(); ++position)
        where += (where.empty() ? "" : ", ") + std::to_string(lines[position]);
    index.naming.fail(lines.empty() ? index.header.data_line : lines.back(),
                      "duplicate entry for row " + std::to_string(row) + ", column " + std::to_string(col) +
                          (where.empty() ? std::string() : " (also on line " + where + ")"));
}

/// Statistics of the opening pass.
struct ScanStats {
    bool all_integral = true;
    std::int64_t max_value = 0;
};

/// The opening pass: validates every entry, counts kept entries per cell, indexes cell
/// starts when sorted, and builds the cache when the matrix is small.
ScanStats scan(detail::LineReader& reader, MtxIndex& index, std::int64_t cache_limit_bytes) {
    const Header& header = index.header;
    const std::int64_t num_file_genes = index.cells_are_columns ? header.rows : header.cols;
    std::vector<std::int64_t> counts(static_cast<std::size_t>(index.num_cells) + 1, 0);
    bool sorted = true;
    std::int64_t previous_cell = -1;
    index.cell_offset.assign(static_cast<std::size_t>(index.num_cells) + 1, -1);
    index.cell_line.assign(static_cast<std::size_t>(index.num_cells) + 1, -1);
    // While sorted by cell, a duplicate (row, col) is a gene seen twice in the current cell.
    std::vector<std::int64_t> gene_last_cell(static_cast<std::size_t>(num_file_genes), -1);

    const double csr_bytes = 8.0 * static_cast<double>(index.num_cells + 1) + 8.0 * static_cast<double>(header.entries);
    const bool caching = cache_limit_bytes > 0 && csr_bytes <= static_cast<double>(cache_limit_bytes);
    std::vector<std::int64_t> cache_cells;
    std::vector<std::int32_t> cache_genes;
    std::vector<float> cache_values;
    if (caching) {
        cache_cells.reserve(static_cast<std::size_t>(header.entries));
        cache_genes.reserve(static_cast<std::size_t>(header.entries));
        cache_values.reserve(static_cast<std::size_t>(header.entries));
    }

    ScanStats stats;
    std::int64_t seen = 0;
    std::string_view line;
    Entry entry;
    try {
        while (reader.next(line)) {
            if (skippable(line)) continue;
            const std::int64_t line_number = reader.line_number();
            if (++seen > header.entries)
                index.naming.fail(line_number, "more entries than the " + std::to_string(header.entries) +
                                                   " declared on the size line (line " +
                                                   std::to_string(header.size_line) + ")");
            parse_entry(line, header, index.naming, line_number, entry);
            const std::int64_t cell = index.cell_of(entry);
            const std::int64_t file_gene = index.file_gene_of(entry);
            if (sorted) {
                if (cell < previous_cell) {
                    sorted = false;
                    std::vector<std::int64_t>().swap(index.cell_offset);
                    std::vector<std::int64_t>().swap(index.cell_line);
                    std::vector<std::int64_t>().swap(gene_last_cell);
                } else {
                    if (cell != previous_cell) {
                        index.cell_offset[static_cast<std::size_t>(cell)] = reader.line_offset();
                        index.cell_line[static_cast<std::size_t>(cell)] = line_number;
                        previous_cell = cell;
                    }
                    auto& last = gene_last_cell[static_cast<std::size_t>(file_gene)];
                    if (last == cell) fail_duplicate(index, cell, file_gene);
                    last = cell;
                }
            }
            const std::int32_t gene = index.gene_of(file_gene);
            if (gene < 0) continue;
            ++counts[static_cast<std::size_t>(cell)];
            stats.all_integral = stats.all_integral && entry.integral;
            if (header.field == Field::Integer)
                stats.max_value = std::max(stats.max_value, static_cast<std::int64_t>(entry.value));
            if (caching) {
                cache_cells.push_back(cell);
                cache_genes.push_back(gene);
                cache_values.push_back(entry.value);
            }
        }
    } catch (const FormatError&) {
        // A parse error in a damaged gzip stream: report the damage, not the garbled text.
        reader.check_rest_of_stream();
        throw;
    }
    if (seen < header.entries)
        index.naming.fail(header.size_line, "declares " + std::to_string(header.entries) + " entries but the file holds " +
                                                std::to_string(seen) + " (ends at line " +
                                                std::to_string(reader.line_number()) + ")");

    index.row_offsets.assign(static_cast<std::size_t>(index.num_cells) + 1, 0);
    for (std::size_t cell = 0; cell < static_cast<std::size_t>(index.num_cells); ++cell)
        index.row_offsets[cell + 1] = index.row_offsets[cell] + counts[cell];

    index.sorted_by_cell = sorted;
    if (sorted) {
        // Cells without entries start where the next cell with entries starts.
        index.cell_offset.back() = reader.next_offset();
        index.cell_line.back() = reader.line_number() + 1;
        for (auto cell = static_cast<std::ptrdiff_t>(index.num_cells) - 1; cell >= 0; --cell) {
            const auto at = static_cast<std::size_t>(cell);
            if (index.cell_offset[at] < 0) {
                index.cell_offset[at] = index.cell_offset[at + 1];
                index.cell_line[at] = index.cell_line[at + 1];
            }
        }
    }

    if (caching) {
        auto shard = std::make_shared<CsrShard>();
        shard->num_genes = index.num_genes;
        shard->row_offsets = index.row_offsets;
        shard->gene_indices.resize(cache_genes.size());
        shard->values.resize(cache_values.size());
        std::vector<std::int64_t> cursor(index.row_offsets.begin(), index.row_offsets.end() - 1);
        for (std::size_t entry_index = 0; entry_index < cache_cells.size(); ++entry_index) {
            const auto position = static_cast<std::size_t>(cursor[static_cast<std::size_t>(cache_cells[entry_index])]++);
            shard->gene_indices[position] = cache_genes[entry_index];
            shard->values[position] = cache_values[entry_index];
        }
        if (const auto duplicate = detail::sort_rows(*shard))
            fail_duplicate(index, duplicate->row, index.file_gene_from(duplicate->gene));
        index.cache = std::move(shard);
    }
    return stats;
}

/// RowSource over a Matrix Market file: serves rows from the cache, or streams the
/// file keeping only the requested rows' entries.
class MatrixMarketSource final : public RowSource {
public:
    explicit MatrixMarketSource(std::shared_ptr<const MtxIndex> index) : m_index(std::move(index)) {}

    MatrixShape shape() const override { return {m_index->num_cells, m_index->num_genes}; }
    std::int64_t nnz() const override { return m_index->row_offsets.back(); }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    std::vector<std::int64_t> row_offsets() override { return m_index->row_offsets; }
    std::unique_ptr<RowSource> clone() const override { return std::make_unique<MatrixMarketSource>(m_index); }

private:
    std::shared_ptr<const MtxIndex> m_index;
    std::unique_ptr<detail::LineReader> m_reader;  ///< opened on the first streaming read
};

CsrShard MatrixMarketSource::read_rows(std::int64_t begin, std::int64_t end) {
    const MtxIndex& index = *m_index;
    if (begin < 0 || end < begin || end > index.num_cells)
        throw std::out_of_range("MatrixMarketSource::read_rows: [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") outside the matrix's " + std::to_string(index.num_cells) +
                                " rows");
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = index.num_genes;
    const auto first = static_cast<std::size_t>(begin), last = static_cast<std::size_t>(end);
    const std::int64_t base = index.row_offsets[first];
    shard.row_offsets.resize(last - first + 1);
    for (std::size_t row = first; row <= last; ++row) shard.row_offsets[row - first] = index.row_offsets[row] - base;
    const auto count = static_cast<std::size_t>(shard.nnz());
    if (index.cache) {
        const auto from = index.cache->gene_indices.begin() + base;
        shard.gene_indices.assign(from, from + static_cast<std::ptrdiff_t>(count));
        const auto values_from = index.cache->values.begin() + base;
        shard.values.assign(values_from, values_from + static_cast<std::ptrdiff_t>(count));
        return shard;
    }
    if (begin == end || count == 0) {
        shard.gene_indices.clear();
        shard.values.clear();
        return shard;
    }
    shard.gene_indices.resize(count);
    shard.values.resize(count);

    if (!m_reader) m_reader = std::make_unique<detail::LineReader>(index.matrix_path, index.naming.dataset, index.naming.prefix);
    if (index.sorted_by_cell)
        m_reader->seek(index.cell_offset[first], index.cell_line[first]);
    else
        m_reader->seek(index.header.data_offset, index.header.data_line);

    auto changed = [&](std::int64_t line_number) {
        index.naming.fail(line_number, "the file changed since it was opened (entry counts per cell differ)");
    };
    std::vector<std::int64_t> cursor(shard.row_offsets.begin(), shard.row_offsets.end() - 1);
    std::string_view line;
    Entry entry;
    try {
        while (m_reader->next(line)) {
            if (skippable(line)) continue;
            parse_entry(line, index.header, index.naming, m_reader->line_number(), entry);
            const std::int64_t cell = index.cell_of(entry);
            if (cell >= end) {
                if (index.sorted_by_cell) break;
                continue;
            }
            if (cell < begin) continue;
            const std::int32_t gene = index.gene_of(index.file_gene_of(entry));
            if (gene < 0) continue;
            const auto row = static_cast<std::size_t>(cell - begin);
            if (cursor[row] >= shard.row_offsets[row + 1]) changed(m_reader->line_number());
            const auto position = static_cast<std::size_t>(cursor[row]++);
            shard.gene_indices[position] = gene;
            shard.values[position] = entry.value;
        }
    } catch (const FormatError&) {
        // A parse error in a damaged gzip stream: report the damage, not the garbled text.
        m_reader->check_rest_of_stream();
        throw;
    }
    for (std::size_t row = 0; row < cursor.size(); ++row)
        if (cursor[row] != shard.row_offsets[row + 1]) changed(m_reader->line_number());
    if (const auto duplicate = detail::sort_rows(shard))
        fail_duplicate(index, begin + duplicate->row, index.file_gene_from(duplicate->gene));
    return shard;
}

/// First existing name in `names` inside `folder`, or empty.
std::string first_existing(const fs::path& folder, std::initializer_list<const char*> names) {
    std::error_code error;
    for (const char* name : names)
        if (fs::is_regular_file(folder / name, error)) return name;
    return {};
}

/// Tab-separated lines of a barcodes / features file, blank lines skipped (as pandas
/// read_csv does); only the first `max_fields` fields of each line are kept.
struct TsvRecords {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::int64_t> line_numbers;
};

TsvRecords read_tsv(const fs::path& path, const std::string& dataset, const std::string& name, std::size_t max_fields) {
    detail::LineReader reader(path.string(), dataset, name);
    TsvRecords records;
    std::string_view line;
    while (reader.next(line)) {
        if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
        std::vector<std::string> fields;
        std::size_t start = 0;
        while (fields.size() < max_fields) {
            const auto tab = line.find('\t', start);
            fields.emplace_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
            if (tab == std::string_view::npos) break;
            start = tab + 1;
        }
        records.rows.push_back(std::move(fields));
        records.line_numbers.push_back(reader.line_number());
    }
    return records;
}

/// Barcodes: the first column, except for files whose first column is the 1-based
/// line number (yeast_844cells' "1<TAB>AAAAGATTATGA"), where the second column is the barcode.
std::vector<std::string> barcodes_from(TsvRecords& records) {
    bool numbered = !records.rows.empty();
    for (std::size_t row = 0; row < records.rows.size() && numbered; ++row)
        numbered = records.rows[row].size() >= 2 && records.rows[row][0] == std::to_string(row + 1);
    std::vector<std::string> barcodes;
    barcodes.reserve(records.rows.size());
    for (auto& fields : records.rows) barcodes.push_back(std::move(fields[numbered ? 1 : 0]));
    return barcodes;
}

std::vector<std::string> numbered_names(std::int64_t count) {
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(count));
    for (std::int64_t index = 0; index < count; ++index) names.push_back(std::to_string(index));
    return names;
}

}  // namespace

namespace detail {

OpenedDataset open_matrix_market(const std::string& path, const ReadOptions& options, const MatrixMarketTuning& tuning) {
    std::error_code error;
    if (!fs::exists(path, error)) throw ReadError(path, "no such file or folder");
    const bool folder = fs::is_directory(path, error);

    auto index = std::make_shared<MtxIndex>();
    index->naming.dataset = path;
    index->cells_are_columns = folder;
    std::vector<std::string> barcodes, gene_names, gene_ids, feature_types;
    std::string barcodes_name, features_name, matrix_name;
    TsvRecords feature_records;
    bool has_types = false;

    if (folder) {
        const fs::path dir(path);
        // scanpy 1.9 read_10x_mtx: genes.tsv means the legacy (CellRanger 2) layout.
        const bool legacy = !first_existing(dir, {"genes.tsv", "genes.tsv.gz"}).empty();
        matrix_name = legacy ? first_existing(dir, {"matrix.mtx", "matrix.mtx.gz"})
                             : first_existing(dir, {"matrix.mtx.gz", "matrix.mtx"});
        if (matrix_name.empty()) throw FormatError(path, "matrix.mtx.gz", "missing: the folder holds no matrix.mtx[.gz]");
        barcodes_name = legacy ? first_existing(dir, {"barcodes.tsv", "barcodes.tsv.gz"})
                               : first_existing(dir, {"barcodes.tsv.gz", "barcodes.tsv"});
        if (barcodes_name.empty())
            throw FormatError(path, "barcodes.tsv.gz", "missing: the folder holds " + matrix_name + " but no barcodes.tsv[.gz]");
        features_name = legacy ? first_existing(dir, {"genes.tsv", "genes.tsv.gz"})
                               : first_existing(dir, {"features.tsv.gz", "features.tsv"});
        if (features_name.empty())
            throw FormatError(path, "features.tsv.gz",
                              "missing: the folder holds " + matrix_name + " but neither features.tsv[.gz] nor genes.tsv");

        auto barcode_records = read_tsv(dir / barcodes_name, path, barcodes_name, 2);
        barcodes = barcodes_from(barcode_records);
        feature_records = read_tsv(dir / features_name, path, features_name, 3);
        has_types = !legacy && !feature_records.rows.empty() && feature_records.rows.front().size() >= 3;
        for (std::size_t row = 0; row < feature_records.rows.size(); ++row) {
            auto& fields = feature_records.rows[row];
            const auto line_number = feature_records.line_numbers[row];
            if (fields.size() < 2)
                throw FormatError(path, features_name + ": line " + std::to_string(line_number),
                                  "expected at least 2 tab-separated columns (id, name), found 1");
            if (has_types && fields.size() < 3)
                throw FormatError(path, features_name + ": line " + std::to_string(line_number),
                                  "expected 3 tab-separated columns (id, name, feature type) as on line " +
                                      std::to_string(feature_records.line_numbers.front()) + ", found 2");
        }
        index->matrix_path = (dir / matrix_name).string();
        index->naming.prefix = matrix_name + ": ";
    } else {
        matrix_name = fs::path(path).filename().string();
        index->matrix_path = path;
    }

    detail::LineReader reader(index->matrix_path, path, folder ? matrix_name : std::string());
    index->header = read_header(reader, index->naming, std::numeric_limits<std::int32_t>::max(), folder);
    const Header& header = index->header;
    const std::int64_t num_file_genes = folder ? header.rows : header.cols;
    index->num_cells = folder ? header.cols : header.rows;

    if (folder) {
        const std::string declared = matrix_name + " declares " + std::to_string(header.rows) + " x " +
                                     std::to_string(header.cols) + " (features x barcodes) on line " +
                                     std::to_string(header.size_line);
        if (static_cast<std::int64_t>(barcodes.size()) != index->num_cells)
            throw FormatError(path, barcodes_name, "has " + std::to_string(barcodes.size()) + " barcodes; " + declared);
        if (static_cast<std::int64_t>(feature_records.rows.size()) != num_file_genes)
            throw FormatError(path, features_name,
                              "has " + std::to_string(feature_records.rows.size()) + " features; " + declared);
        // gex_only: keep feature_type == options.feature_type when the file has types.
        std::vector<std::int64_t> kept;
        for (std::size_t feature = 0; feature < feature_records.rows.size(); ++feature)
            if (!has_types || options.feature_type.empty() || feature_records.rows[feature][2] == options.feature_type)
                kept.push_back(static_cast<std::int64_t>(feature));
        if (kept.empty() && num_file_genes > 0)
            throw FormatError(path, features_name,
                              "no feature of type '" + options.feature_type +
                                  "'; keep all with ReadOptions::feature_type = \"\" (fathom-cli --feature-type \"\")");
        if (static_cast<std::int64_t>(kept.size()) < num_file_genes) {
            index->gene_map.assign(static_cast<std::size_t>(num_file_genes), -1);
            for (std::size_t gene = 0; gene < kept.size(); ++gene) {
                index->gene_map[static_cast<std::size_t>(kept[gene])] = static_cast<std::int32_t>(gene);
                index->kept_genes.push_back(static_cast<std::int32_t>(kept[gene]));
            }
        }
        for (auto feature : kept) {
            auto& fields = feature_records.rows[static_cast<std::size_t>(feature)];
            gene_ids.push_back(std::move(fields[0]));
            gene_names.push_back(std::move(fields[1]));
            if (has_types) feature_types.push_back(std::move(fields[2]));
        }
        index->num_genes = static_cast<std::int64_t>(kept.size());
    } else {
        index->num_genes = num_file_genes;
    }

    const ScanStats stats = scan(reader, *index, tuning.cache_limit_bytes);

    OpenedDataset opened;
    Dataset& meta = opened.meta;
    meta.path = path;
    meta.format = folder ? DatasetFormat::MatrixMarketFolder : DatasetFormat::MatrixMarketFile;
    meta.shape = {index->num_cells, index->num_genes};
    meta.nnz = index->row_offsets.back();
    switch (header.field) {
        case Field::Integer:
            meta.stored_type = stats.max_value <= std::numeric_limits<std::int32_t>::max() ? ValueType::Int32 : ValueType::Int64;
            break;
        case Field::Real: meta.stored_type = ValueType::Float64; break;
        case Field::Pattern: meta.stored_type = ValueType::Other; break;
    }
    meta.integer_counts_known = true;
    meta.integer_counts = stats.all_integral;
    meta.matrix_layout = "coo";
    meta.matrix_name = matrix_name;
    if (folder) {
        meta.obs = Table(std::move(barcodes));
        meta.var = Table(std::move(gene_names));
        meta.var.set("gene_ids", StringColumn{std::move(gene_ids)});
        if (has_types) meta.var.set("feature_types", StringColumn{std::move(feature_types)});
    } else {
        meta.obs = Table(numbered_names(index->num_cells));
        meta.var = Table(numbered_names(index->num_genes));
    }
    opened.source = std::make_unique<MatrixMarketSource>(std::move(index));
    return opened;
}

}  // namespace detail

OpenedDataset open_matrix_market(const std::string& path, const ReadOptions& options) {
    return detail::open_matrix_market(path, options, detail::MatrixMarketTuning{});
}

}  // namespace fathom::io
