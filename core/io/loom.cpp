// Loom 3.0 (linnarssonlab.org/loompy/format): /matrix is a dense genes x cells dataset
// (chunked), /layers/<name> more matrices of that shape, /row_attrs/<name> one value per
// gene, /col_attrs/<name> one per cell (strings: fixed-length ASCII with XML character
// references for other characters, or variable-length UTF-8).
//
// Read as scanpy 1.9's read_loom(X_name='spliced', obs_names='CellID', var_names='Gene')
// reads it: X = layers/spliced when the file has it (velocyto's output), else /matrix,
// transposed to cells x genes; obs index = col_attrs/CellID, var index = row_attrs/Gene
// (0, 1, ... when absent); the other 1-D attributes become obs / var columns, the 2-D
// ones obsm / varm. ReadOptions::matrix "layers/<name>" reads a layer ("layers/matrix"
// is /matrix when X is the spliced layer, as read_loom names it).
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/data/counts.hpp"
#include "core/io/detail/hdf5.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

namespace {

/// Cells read per block: the genes x block slab stays about 2^24 values (64 MiB).
std::int64_t block_cells(std::int64_t num_genes) {
    return std::max<std::int64_t>(64, (std::int64_t{1} << 24) / std::max<std::int64_t>(1, num_genes) / 64 * 64);
}

/// Columns [cell_begin, cell_end) of the genes x cells dataset, genes-major
/// (values[gene * count + cell]).
std::vector<float> read_cell_slab(const h5::File& file, const std::string& object, std::int64_t num_genes,
                                  std::int64_t cell_begin, std::int64_t cell_end) {
    const auto count = cell_end - cell_begin;
    std::vector<float> values(static_cast<std::size_t>(num_genes * count));
    if (values.empty()) return values;
    const h5::Handle dataset = file.open_dataset(object);  // with its storage checks
    h5::Handle space(H5Dget_space(dataset.get()), H5Sclose);
    const hsize_t start[2] = {0, static_cast<hsize_t>(cell_begin)};
    const hsize_t extent[2] = {static_cast<hsize_t>(num_genes), static_cast<hsize_t>(count)};
    if (!space || H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0)
        file.fail(object, "cannot select cells " + std::to_string(cell_begin) + " to " + std::to_string(cell_end));
    h5::Handle memory(H5Screate_simple(2, extent, nullptr), H5Sclose);
    if (H5Dread(dataset.get(), H5T_NATIVE_FLOAT, memory.get(), space.get(), H5P_DEFAULT, values.data()) < 0)
        file.fail(object, "read failed (truncated file, unsupported filter or incompatible type)");
    return values;
}

/// Cells [begin, end) as CSR rows (zeros dropped); NaN / Inf are refused.
CsrShard slab_rows(const h5::File& file, const std::string& object, std::int64_t num_genes, std::int64_t begin,
                   std::int64_t end) {
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = num_genes;
    const std::int64_t block = block_cells(num_genes);
    for (std::int64_t first = begin; first < end; first += block) {
        const std::int64_t last = std::min(end, first + block);
        const std::int64_t count = last - first;
        const std::vector<float> slab = read_cell_slab(file, object, num_genes, first, last);
        for (std::int64_t cell = 0; cell < count; ++cell) {
            for (std::int64_t gene = 0; gene < num_genes; ++gene) {
                const float value = slab[static_cast<std::size_t>(gene * count + cell)];
                if (value == 0.0f) continue;
                if (!std::isfinite(value))
                    file.fail(object, "non-finite value at gene " + std::to_string(gene) + ", cell " +
                                          std::to_string(first + cell));
                shard.gene_indices.push_back(static_cast<std::int32_t>(gene));
                shard.values.push_back(value);
            }
            shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
        }
    }
    return shard;
}

class LoomRowSource final : public RowSource {
public:
    LoomRowSource(std::string path, std::string object, MatrixShape shape, std::vector<std::int64_t> offsets)
        : m_path(std::move(path)), m_object(std::move(object)), m_shape(shape), m_offsets(std::move(offsets)),
          m_file(h5::File::open_read(m_path)) {}

    MatrixShape shape() const override { return m_shape; }
    std::int64_t nnz() const override { return m_offsets.back(); }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
        if (begin < 0 || end < begin || end > m_shape.num_cells)
            throw std::out_of_range("LoomRowSource::read_rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                    ") outside the " + std::to_string(m_shape.num_cells) + " cells");
        return slab_rows(m_file, m_object, m_shape.num_genes, begin, end);
    }
    std::vector<std::int64_t> row_offsets() override { return m_offsets; }
    std::unique_ptr<RowSource> clone() const override {
        return std::make_unique<LoomRowSource>(m_path, m_object, m_shape, m_offsets);
    }

private:
    std::string m_path, m_object;
    MatrixShape m_shape;
    std::vector<std::int64_t> m_offsets;
    h5::File m_file;
};

/// loompy's attribute strings: XML character references (&#233; &#xE9; and &amp; &lt;
/// &gt; &quot; &apos;) back to UTF-8, as html.unescape does for these forms.
std::string unescape(const std::string& text) {
    if (text.find('&') == std::string::npos) return text;
    std::string out;
    for (std::size_t index = 0; index < text.size();) {
        const std::size_t semicolon = text[index] == '&' ? text.find(';', index) : std::string::npos;
        if (semicolon != std::string::npos && semicolon - index <= 10) {
            const std::string entity = text.substr(index + 1, semicolon - index - 1);
            std::uint32_t code = 0;
            bool known = true;
            if (entity == "amp") code = '&';
            else if (entity == "lt") code = '<';
            else if (entity == "gt") code = '>';
            else if (entity == "quot") code = '"';
            else if (entity == "apos") code = '\'';
            else if (entity.size() > 1 && entity[0] == '#') {
                try {
                    code = static_cast<std::uint32_t>(entity[1] == 'x' || entity[1] == 'X' ? std::stoul(entity.substr(2), nullptr, 16)
                                                                                           : std::stoul(entity.substr(1)));
                } catch (const std::exception&) {
                    known = false;
                }
                known = known && code > 0 && code <= 0x10FFFF;
            } else {
                known = false;
            }
            if (known) {
                if (code < 0x80) {
                    out += static_cast<char>(code);
                } else if (code < 0x800) {
                    out += static_cast<char>(0xC0 | (code >> 6));
                    out += static_cast<char>(0x80 | (code & 0x3F));
                } else if (code < 0x10000) {
                    out += static_cast<char>(0xE0 | (code >> 12));
                    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                    out += static_cast<char>(0x80 | (code & 0x3F));
                } else {
                    out += static_cast<char>(0xF0 | (code >> 18));
                    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
                    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                    out += static_cast<char>(0x80 | (code & 0x3F));
                }
                index = semicolon + 1;
                continue;
            }
        }
        out += text[index++];
    }
    return out;
}

/// One attribute group (/row_attrs or /col_attrs) as a table indexed by `index_name`
/// (0, 1, ... when absent), 2-D attributes into `matrices`.
Table read_attributes(const h5::File& file, const std::string& group, std::int64_t length, const std::string& index_name,
                      std::map<std::string, DenseMatrix<float>>* matrices) {
    std::vector<std::string> index;
    std::vector<Column> columns;
    if (file.is_group(group)) {
        for (const auto& name : file.members(group)) {
            const std::string object = h5::join(group, name);
            if (!file.is_dataset(object)) continue;
            const h5::Info info = file.dataset_info(object);
            if (info.dims.empty() || info.dims[0] != length)
                file.fail(object, "has " + (info.dims.empty() ? std::string("no") : std::to_string(info.dims[0])) +
                                      " entries; expected " + std::to_string(length) + " (the " +
                                      (group == "/row_attrs" ? "genes" : "cells") + " of /matrix)");
            if (info.dims.size() == 2 && info.type_class != h5::TypeClass::String) {
                // scanpy's read_loom: a 2-D attribute with more than one column goes to obsm / varm.
                const std::int64_t width = info.dims[1];
                if (width > 1 && matrices) {
                    const auto values = file.read_all<float>(object);
                    matrices->emplace(name, DenseMatrix<float>(length, width, values));
                    continue;
                }
                if (width != 1) continue;
            } else if (info.dims.size() != 1) {
                continue;
            }
            if (info.type_class == h5::TypeClass::String) {
                std::vector<std::string> values = file.read_strings(object);
                for (auto& value : values) value = unescape(value);
                if (name == index_name) index = std::move(values);
                else columns.push_back({name, StringColumn{std::move(values)}});
            } else if (info.type_class == h5::TypeClass::Integer) {
                const auto values = file.read_all<std::int64_t>(object);
                if (name == index_name) {
                    for (auto value : values) index.push_back(std::to_string(value));
                } else {
                    columns.push_back({name, IntColumn{values, {}}});
                }
            } else if (info.type_class == h5::TypeClass::Float) {
                columns.push_back({name, FloatColumn{file.read_all<double>(object)}});
            }
        }
    }
    if (index.empty())
        for (std::int64_t row = 0; row < length; ++row) index.push_back(std::to_string(row));
    Table table(std::move(index));
    for (auto& column : columns) table.set(column.name, std::move(column.data));
    return table;
}

}  // namespace

OpenedDataset open_loom(const std::string& path, const ReadOptions& options) {
    const h5::File file = h5::File::open_read(path);
    if (!file.is_dataset("/matrix")) file.fail("/matrix", "missing: a loom file's main matrix (genes x cells)");
    // Which matrix: scanpy's X_name='spliced' default, or a layer.
    std::string object = file.is_dataset("/layers/spliced") ? "/layers/spliced" : "/matrix";
    std::string name = object == "/matrix" ? "matrix" : "layers/spliced";
    if (options.matrix.starts_with("layers/") && options.matrix.size() > 7) {
        const std::string layer = options.matrix.substr(7);
        if (file.is_dataset("/layers/" + layer)) object = "/layers/" + layer;
        else if (layer == "matrix") object = "/matrix";
        else file.fail("/layers/" + layer, "missing (a loom layer; the file's layers are under /layers)");
        name = options.matrix;
    } else if (options.matrix != "X" && !options.matrix.empty()) {
        throw std::invalid_argument("ReadOptions::matrix must be \"X\" or \"layers/<name>\" for a loom file; got \"" +
                                    options.matrix + "\"");
    }
    const h5::Info info = file.dataset_info(object);
    if (info.dims.size() != 2) file.fail(object, "expected a 2-D dataset (genes x cells), found rank " + std::to_string(info.dims.size()));
    if (info.type_class != h5::TypeClass::Integer && info.type_class != h5::TypeClass::Float)
        file.fail(object, "expected numeric values");
    const h5::Info main = file.dataset_info("/matrix");
    if (main.dims != info.dims) file.fail(object, "shape differs from /matrix");
    const MatrixShape shape{info.dims[1], info.dims[0]};
    if (shape.num_genes > std::numeric_limits<std::int32_t>::max())
        file.fail(object, "has more genes than 32-bit gene indices hold");

    // One pass for the row offsets (balancing shards needs them) and the integer test.
    std::vector<std::int64_t> offsets{0};
    bool integer = true;
    const std::int64_t block = block_cells(shape.num_genes);
    for (std::int64_t first = 0; first < shape.num_cells; first += block) {
        const CsrShard rows = slab_rows(file, object, shape.num_genes, first, std::min(shape.num_cells, first + block));
        for (std::int64_t row = 0; row < rows.num_rows(); ++row) offsets.push_back(offsets.back() + rows.row_offsets[row + 1] - rows.row_offsets[row]);
        integer = integer && all_counts(rows.values);
    }

    OpenedDataset opened;
    Dataset& meta = opened.meta;
    meta.path = path;
    meta.format = DatasetFormat::Loom;
    meta.shape = shape;
    meta.nnz = offsets.back();
    meta.stored_type = info.type_class == h5::TypeClass::Float ? (info.type_size == 8 ? ValueType::Float64 : ValueType::Float32)
                                                               : (info.type_size == 8 ? ValueType::Int64 : ValueType::Int32);
    meta.integer_counts_known = true;
    meta.integer_counts = integer;
    meta.matrix_layout = "dense (genes x cells)";
    meta.matrix_name = name;
    meta.obs = read_attributes(file, "/col_attrs", shape.num_cells, "CellID", options.read_annotations ? &meta.obsm : nullptr);
    meta.var = read_attributes(file, "/row_attrs", shape.num_genes, "Gene", options.read_annotations ? &meta.varm : nullptr);
    opened.source = std::make_unique<LoomRowSource>(path, object, shape, std::move(offsets));
    return opened;
}

}  // namespace fathom::io
