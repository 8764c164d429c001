#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/io/RowSource.hpp"
#include "core/io/detail/input_checks.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

namespace {

bool has_hdf5_signature(const std::string& path) {
    // The HDF5 superblock signature sits at offset 0, 512, 1024, ... (user block).
    static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    std::ifstream stream(path, std::ios::binary);
    if (!stream) return false;
    stream.seekg(0, std::ios::end);
    const auto size = static_cast<std::int64_t>(stream.tellg());
    for (std::int64_t offset = 0; offset + 8 <= size; offset = offset == 0 ? 512 : offset * 2) {
        char buffer[8];
        stream.seekg(offset);
        if (!stream.read(buffer, 8)) return false;
        if (std::equal(buffer, buffer + 8, signature)) return true;
    }
    return false;
}

// True when the first line, gunzipped if need be (zlib reads plain files as they are),
// starts with the Matrix Market banner. Files named *.mtx / *.mtx.gz count too, so
// that the Matrix Market reader reports exactly what is wrong with their banner.
bool has_matrix_market_banner(const std::string& path) {
    if (path.ends_with(".mtx") || path.ends_with(".mtx.gz")) return true;
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file) return false;
    static constexpr char banner[] = "%%MatrixMarket";
    char first[sizeof(banner)] = {};
    const int got = gzread(file, first, sizeof(banner) - 1);
    gzclose_r(file);
    return got == static_cast<int>(sizeof(banner) - 1) && std::equal(first, first + sizeof(banner) - 1, banner);
}

// Names and strings must be valid UTF-8: an h5ad holding anything else cannot be read
// by anndata (h5py decodes every string as UTF-8), so such a file is refused here, with
// the first bad string named, before any output is written from it.
std::string printable(const std::string& text, std::size_t bad) {
    std::string out = "'";
    for (std::size_t index = 0; index < text.size() && index < 80; ++index) {
        const auto byte = static_cast<unsigned char>(text[index]);
        if (index >= bad || byte < 0x20) {
            static const char* digits = "0123456789abcdef";
            out += "\\x";
            out += digits[byte >> 4];
            out += digits[byte & 15];
        } else {
            out += text[index];
        }
    }
    return out + (text.size() > 80 ? "...'" : "'");
}

void require_utf8(const std::string& path, const std::string& where, const std::string& text) {
    if (const auto bad = detail::invalid_utf8_offset(text))
        throw FormatError(path, where,
                          "holds " + printable(text, *bad) + ", which is not valid UTF-8 (byte " + std::to_string(*bad) +
                              "); names and labels must be UTF-8 text (an h5ad written from it could not be read by anndata)");
}

void require_utf8(const std::string& path, const std::string& where, const std::vector<std::string>& values) {
    for (std::size_t row = 0; row < values.size(); ++row)
        if (detail::invalid_utf8_offset(values[row]))
            require_utf8(path, where + " (entry " + std::to_string(row) + ")", values[row]);
}

void require_utf8(const std::string& path, const std::string& what, const Table& table) {
    require_utf8(path, what + " index name", table.index_name());
    require_utf8(path, what + " names", table.index());
    for (const auto& column : table.columns()) {
        require_utf8(path, what + " column name", column.name);
        const std::string where = what + " column '" + column.name + "'";
        if (const auto* strings = std::get_if<StringColumn>(&column.data)) require_utf8(path, where, strings->values);
        if (const auto* categorical = std::get_if<CategoricalColumn>(&column.data))
            require_utf8(path, where + " categories", categorical->categories);
    }
}

void require_utf8(const std::string& path, const std::string& where, const UnsNode& node) {
    if (const auto* text = std::get_if<std::string>(&node.value)) require_utf8(path, where, *text);
    if (const auto* texts = std::get_if<std::vector<std::string>>(&node.value)) require_utf8(path, where, *texts);
    if (const auto* records = std::get_if<UnsRecords>(&node.value)) {
        require_utf8(path, where + " field names", records->fields);
        for (const auto& strings : records->strings) require_utf8(path, where, strings);
    }
    for (const auto& [key, child] : node.children) {
        require_utf8(path, where + " key", key);
        require_utf8(path, where + "/" + key, child);
    }
}

}  // namespace

DatasetFormat detect_format(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (!fs::exists(path, error)) throw ReadError(path, "no such file or folder");
    if (fs::is_directory(path, error)) {
        for (const char* name : {"matrix.mtx", "matrix.mtx.gz"})
            if (fs::exists(fs::path(path) / name, error)) return DatasetFormat::MatrixMarketFolder;
        throw FormatError(path, "", "folder holds no matrix.mtx or matrix.mtx.gz");
    }
    // A FIFO, socket or device would block the signature read below (stat only).
    detail::require_regular_file(path);
    if (has_hdf5_signature(path)) return detect_hdf5_layout(path);
    if (has_matrix_market_banner(path)) return DatasetFormat::MatrixMarketFile;
    throw FormatError(path, "", "unrecognised format: neither HDF5 (h5ad, 10x h5) nor Matrix Market");
}

OpenedDataset open_dataset(const std::string& path, const ReadOptions& options) {
    const DatasetFormat format = detect_format(path);
    OpenedDataset opened;
    switch (format) {
        case DatasetFormat::H5ad: opened = open_h5ad(path, options); break;
        case DatasetFormat::TenxH5V3:
        case DatasetFormat::TenxH5V2: opened = open_10x_h5(path, options); break;
        case DatasetFormat::MatrixMarketFolder:
        case DatasetFormat::MatrixMarketFile: opened = open_matrix_market(path, options); break;
        case DatasetFormat::Loom: opened = open_loom(path, options); break;
    }
    require_utf8(path, "obs", opened.meta.obs);
    require_utf8(path, "var", opened.meta.var);
    require_utf8(path, "uns", opened.meta.uns);
    for (const auto& [key, matrix] : opened.meta.obsm) require_utf8(path, "obsm key", key);
    for (const auto& [key, matrix] : opened.meta.varm) require_utf8(path, "varm key", key);
    for (const auto& [key, graph] : opened.meta.obsp) require_utf8(path, "obsp key", key);
    if (options.make_var_names_unique)
        opened.meta.num_var_names_made_unique = make_names_unique(opened.meta.var.index());
    if (options.make_obs_names_unique) make_names_unique(opened.meta.obs.index());
    return opened;
}

void RowSource::append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows) {
    if (rows.num_rows() == 0) rows.row_begin = begin;
    if (rows.row_end() != begin)
        throw std::logic_error("RowSource::append_rows: rows from " + std::to_string(begin) + " appended after row " +
                               std::to_string(rows.row_end()));
    if (rows.num_rows() == 0) {
        rows = read_rows(begin, end);  // nothing to append to: no copy
        return;
    }
    const CsrShard part = read_rows(begin, end);
    rows.num_genes = part.num_genes;
    const std::int64_t base = rows.nnz();
    for (std::size_t row = 1; row < part.row_offsets.size(); ++row) rows.row_offsets.push_back(base + part.row_offsets[row]);
    rows.gene_indices.insert(rows.gene_indices.end(), part.gene_indices.begin(), part.gene_indices.end());
    rows.values.insert(rows.values.end(), part.values.begin(), part.values.end());
}

ShardedCsr load_shards(RowSource& source, const std::vector<RowRange>& ranges) {
    std::vector<CsrShard> shards;
    shards.reserve(ranges.size());
    for (const auto& range : ranges) shards.push_back(source.read_rows(range.begin, range.end));
    return ShardedCsr(source.shape(), std::move(shards));
}

}  // namespace fathom::io
