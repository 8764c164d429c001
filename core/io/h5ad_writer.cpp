// h5ad writer. Element encodings follow the anndata on-disk spec as anndata 0.8
// writes them (anndata/_io/specs/methods.py): every group and dataset carries
// encoding-type / encoding-version attributes; dataframes are groups with _index
// and column-order attributes.
#include "core/io/h5ad_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>

#include "core/types/JobContext.hpp"
#include "core/io/detail/CsrAppender.hpp"
#include "core/io/detail/hdf5_write.hpp"
#include "core/types/atomic_file.hpp"

namespace fathom::io {

namespace {

using h5::join;

void set_encoding(const h5::File& file, const std::string& object, const std::string& type,
                  const std::string& version) {
    file.write_attribute(object, "encoding-type", type);
    file.write_attribute(object, "encoding-version", version);
}

// anndata refuses keys that are not valid HDF5 link names; so do we, before writing.
void check_key(const std::string& key, const std::string& where) {
    if (key.empty()) throw std::invalid_argument(where + ": empty name");
    if (key.find('/') != std::string::npos)
        throw std::invalid_argument(where + ": name '" + key + "' contains '/' (not allowed in HDF5 names)");
}

// ---- validation (before anything is created) ----

void check_table(const Table& table, std::int64_t expected_rows, const std::string& where) {
    const bool empty_table = table.num_rows() == 0 && table.columns().empty();
    if (table.num_rows() != expected_rows && !(empty_table && table.index().empty()))
        throw std::invalid_argument(where + " has " + std::to_string(table.num_rows()) + " rows; the matrix has " +
                                    std::to_string(expected_rows));
    const std::string index_name = table.index_name().empty() ? "_index" : table.index_name();
    check_key(index_name, where + " index");
    std::set<std::string> names;
    for (const auto& column : table.columns()) {
        check_key(column.name, where + " column");
        if (column.name == index_name)
            throw std::invalid_argument(where + ": column '" + column.name + "' has the index's name");
        if (!names.insert(column.name).second)
            throw std::invalid_argument(where + ": duplicate column '" + column.name + "'");
        if (column.size() != table.num_rows())
            throw std::invalid_argument(where + "/" + column.name + " has " + std::to_string(column.size()) +
                                        " rows; expected " + std::to_string(table.num_rows()));
        std::visit(
            [&](const auto& data) {
                using T = std::decay_t<decltype(data)>;
                if constexpr (std::is_same_v<T, IntColumn> || std::is_same_v<T, BoolColumn>) {
                    if (!data.missing.empty() && data.missing.size() != data.values.size())
                        throw std::invalid_argument(where + "/" + column.name + ": missing mask has " +
                                                    std::to_string(data.missing.size()) + " entries, expected " +
                                                    std::to_string(data.values.size()));
                } else if constexpr (std::is_same_v<T, CategoricalColumn>) {
                    const auto num_categories = static_cast<std::int64_t>(data.categories.size());
                    for (auto code : data.codes)
                        if (code < -1 || code >= num_categories)
                            throw std::invalid_argument(where + "/" + column.name + ": code " + std::to_string(code) +
                                                        " outside [-1, " + std::to_string(num_categories) + ")");
                    std::set<std::string> unique(data.categories.begin(), data.categories.end());
                    if (unique.size() != data.categories.size())
                        throw std::invalid_argument(where + "/" + column.name +
                                                    ": categories are not unique (pandas requires unique categories)");
                }
            },
            column.data);
    }
}

void check_uns(const UnsNode& node, const std::string& where) {
    for (const auto& [key, child] : node.children) {
        check_key(key, where);
        if (child.is_dict()) check_uns(child, where + "/" + key);
    }
}

void check_meta(const Dataset& meta, const MatrixShape& shape) {
    check_table(meta.obs, shape.num_cells, "obs");
    check_table(meta.var, shape.num_genes, "var");
    for (const auto& [key, matrix] : meta.obsm) {
        check_key(key, "obsm");
        if (matrix.rows() != shape.num_cells)
            throw std::invalid_argument("obsm/" + key + " has " + std::to_string(matrix.rows()) + " rows; expected " +
                                        std::to_string(shape.num_cells) + " (one per cell)");
    }
    for (const auto& [key, matrix] : meta.varm) {
        check_key(key, "varm");
        if (matrix.rows() != shape.num_genes)
            throw std::invalid_argument("varm/" + key + " has " + std::to_string(matrix.rows()) + " rows; expected " +
                                        std::to_string(shape.num_genes) + " (one per gene)");
    }
    for (const auto& [key, graph] : meta.obsp) {
        check_key(key, "obsp");
        if (graph.num_rows() != shape.num_cells || graph.num_genes != shape.num_cells)
            throw std::invalid_argument("obsp/" + key + " is " + std::to_string(graph.num_rows()) + " x " +
                                        std::to_string(graph.num_genes) + "; expected " +
                                        std::to_string(shape.num_cells) + " x " + std::to_string(shape.num_cells));
        if (graph.row_offsets.front() != 0 || static_cast<std::int64_t>(graph.gene_indices.size()) != graph.nnz() ||
            static_cast<std::int64_t>(graph.values.size()) != graph.nnz())
            throw std::invalid_argument("obsp/" + key + ": row offsets, indices and values disagree");
    }
    check_uns(meta.uns, "uns");
}

// ---- element writers ----

template <typename T>
void write_array(const h5::File& file, const std::string& object, const std::vector<T>& values, int gzip_level) {
    h5::write_array<T>(file, object, {static_cast<std::int64_t>(values.size())}, values.data(), gzip_level);
    set_encoding(file, object, "array", "0.2.0");
}

void write_string_array(const h5::File& file, const std::string& object, const std::vector<std::string>& values,
                        int gzip_level) {
    file.write_strings(object, values, gzip_level);
    set_encoding(file, object, "string-array", "0.2.0");
}

void write_bool_array(const h5::File& file, const std::string& object, const std::vector<std::uint8_t>& values,
                      int gzip_level) {
    h5::write_bools(file, object, values, gzip_level);
    set_encoding(file, object, "array", "0.2.0");
}

// pandas' coerce_indexer_dtype: the smallest of int8 / int16 / int32 / int64 whose
// maximum exceeds the number of categories. anndata writes the codes as they are.
template <typename Code>
void write_codes(const h5::File& file, const std::string& object, const std::vector<std::int32_t>& codes,
                 int gzip_level) {
    std::vector<Code> narrow(codes.begin(), codes.end());
    write_array(file, object, narrow, gzip_level);
}

void write_column(const h5::File& file, const std::string& object, const ColumnData& data, int gzip_level) {
    std::visit(
        [&](const auto& column) {
            using T = std::decay_t<decltype(column)>;
            if constexpr (std::is_same_v<T, IntColumn>) {
                if (column.missing.empty()) {
                    write_array(file, object, column.values, gzip_level);
                } else {
                    // anndata 0.8 "nullable-integer": values + bool mask (True = NA).
                    file.create_group(object);
                    set_encoding(file, object, "nullable-integer", "0.1.0");
                    std::vector<std::int64_t> values = column.values;
                    for (std::size_t row = 0; row < values.size(); ++row)
                        if (column.missing[row]) values[row] = 0;
                    write_array(file, join(object, "values"), values, gzip_level);
                    write_bool_array(file, join(object, "mask"), column.missing, gzip_level);
                }
            } else if constexpr (std::is_same_v<T, FloatColumn>) {
                write_array(file, object, column.values, gzip_level);
            } else if constexpr (std::is_same_v<T, BoolColumn>) {
                if (column.missing.empty()) {
                    write_bool_array(file, object, column.values, gzip_level);
                } else {
                    file.create_group(object);
                    set_encoding(file, object, "nullable-boolean", "0.1.0");
                    std::vector<std::uint8_t> values = column.values;
                    for (std::size_t row = 0; row < values.size(); ++row)
                        if (column.missing[row]) values[row] = 0;
                    write_bool_array(file, join(object, "values"), values, gzip_level);
                    write_bool_array(file, join(object, "mask"), column.missing, gzip_level);
                }
            } else if constexpr (std::is_same_v<T, StringColumn>) {
                write_string_array(file, object, column.values, gzip_level);
            } else {
                file.create_group(object);
                set_encoding(file, object, "categorical", "0.2.0");
                file.write_attribute(object, "ordered", column.ordered);
                write_string_array(file, join(object, "categories"), column.categories, gzip_level);
                const std::size_t count = column.categories.size();
                const std::string codes = join(object, "codes");
                if (count < 127)
                    write_codes<std::int8_t>(file, codes, column.codes, gzip_level);
                else if (count < 32767)
                    write_codes<std::int16_t>(file, codes, column.codes, gzip_level);
                else
                    write_codes<std::int32_t>(file, codes, column.codes, gzip_level);
            }
        },
        data);
}

void write_dataframe(const h5::File& file, const std::string& group, const Table& table, std::int64_t num_rows,
                     int gzip_level) {
    file.create_group(group);
    set_encoding(file, group, "dataframe", "0.2.0");
    const std::string index_name = table.index_name().empty() ? "_index" : table.index_name();
    file.write_attribute(group, "_index", index_name);
    std::vector<std::string> order;
    for (const auto& column : table.columns()) order.push_back(column.name);
    if (order.empty()) {
        // anndata writes an empty column-order as an empty float64 array.
        file.write_attribute<double>(group, "column-order", std::vector<double>{});
    } else {
        file.write_attribute(group, "column-order", order);
    }
    if (table.index().empty() && num_rows > 0) {
        // anndata's default index for an AnnData built without names: "0", "1", ...
        std::vector<std::string> names(static_cast<std::size_t>(num_rows));
        for (std::int64_t row = 0; row < num_rows; ++row) names[static_cast<std::size_t>(row)] = std::to_string(row);
        write_string_array(file, join(group, index_name), names, gzip_level);
    } else {
        write_string_array(file, join(group, index_name), table.index(), gzip_level);
    }
    for (const auto& column : table.columns()) write_column(file, join(group, column.name), column.data, gzip_level);
}

void write_dense_dict(const h5::File& file, const std::string& group,
                      const std::map<std::string, DenseMatrix<float>>& entries, int gzip_level) {
    file.create_group(group);
    set_encoding(file, group, "dict", "0.1.0");
    for (const auto& [key, matrix] : entries) {
        const std::string object = join(group, key);
        h5::write_array<float>(file, object, {matrix.rows(), matrix.cols()}, matrix.data(), gzip_level);
        set_encoding(file, object, "array", "0.2.0");
    }
}

void write_uns(const h5::File& file, const std::string& object, const UnsNode& node) {
    if (node.is_dict()) {
        file.create_group(object);
        set_encoding(file, object, "dict", "0.1.0");
        for (const auto& [key, child] : node.children) write_uns(file, join(object, key), child);
        return;
    }
    std::visit(
        [&](const auto& value) {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::string>) {
                h5::write_string_scalar(file, object, value);
                set_encoding(file, object, "string", "0.2.0");
            } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::int64_t>) {
                h5::write_scalar<T>(file, object, value);
                set_encoding(file, object, "numeric-scalar", "0.2.0");
            } else if constexpr (std::is_same_v<T, bool>) {
                h5::write_bool_scalar(file, object, value);
                set_encoding(file, object, "numeric-scalar", "0.2.0");
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                write_string_array(file, object, value, 0);
            } else if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<std::int64_t>>) {
                write_array(file, object, value, 0);
            } else if constexpr (std::is_same_v<T, DenseMatrix<double>>) {
                h5::write_array<double>(file, object, {value.rows(), value.cols()}, value.data(), 0);
                set_encoding(file, object, "array", "0.2.0");
            } else if constexpr (std::is_same_v<T, UnsRecords>) {
                h5::write_records(file, object, value.fields, value.strings, value.numbers, value.single_precision);
                set_encoding(file, object, "rec-array", "0.2.0");
            }
        },
        node.value);
}

void write_empty_dict(const h5::File& file, const std::string& group) {
    file.create_group(group);
    set_encoding(file, group, "dict", "0.1.0");
}

/// obsp: cells x cells graphs as csr_matrix groups (anndata 0.8 layout). Shapes are
/// checked by check_meta before anything is written.
void write_sparse_dict(const h5::File& file, const std::string& group, const std::map<std::string, CsrShard>& entries,
                       std::int64_t num_cells, int gzip_level) {
    write_empty_dict(file, group);
    for (const auto& [key, graph] : entries) {
        const std::string object = join(group, key);
        file.create_group(object);
        set_encoding(file, object, "csr_matrix", "0.1.0");
        file.write_attribute(object, "shape", std::vector<std::int64_t>{num_cells, num_cells});
        h5::write_array<float>(file, join(object, "data"), {graph.nnz()}, graph.values.data(), gzip_level);
        // indices and indptr share a dtype, as scipy pairs them (see CsrAppenderOptions::narrow_indptr).
        if (graph.nnz() <= 2147483647LL) {
            const std::vector<std::int32_t> indptr(graph.row_offsets.begin(), graph.row_offsets.end());
            h5::write_array<std::int32_t>(file, join(object, "indices"), {graph.nnz()}, graph.gene_indices.data(),
                                          gzip_level);
            h5::write_array<std::int32_t>(file, join(object, "indptr"), {num_cells + 1}, indptr.data(), gzip_level);
        } else {
            const std::vector<std::int64_t> indices(graph.gene_indices.begin(), graph.gene_indices.end());
            h5::write_array<std::int64_t>(file, join(object, "indices"), {graph.nnz()}, indices.data(), gzip_level);
            h5::write_array<std::int64_t>(file, join(object, "indptr"), {num_cells + 1}, graph.row_offsets.data(),
                                          gzip_level);
        }
    }
}

// Everything except X.
void write_annotations(const h5::File& file, const Dataset& meta, const MatrixShape& shape, int gzip_level) {
    write_dataframe(file, "/obs", meta.obs, shape.num_cells, gzip_level);
    write_dataframe(file, "/var", meta.var, shape.num_genes, gzip_level);
    write_dense_dict(file, "/obsm", meta.obsm, gzip_level);
    write_dense_dict(file, "/varm", meta.varm, gzip_level);
    write_empty_dict(file, "/layers");
    write_sparse_dict(file, "/obsp", meta.obsp, shape.num_cells, gzip_level);
    write_empty_dict(file, "/varp");
    write_uns(file, "/uns", meta.uns.is_dict() ? meta.uns : UnsNode{});
}

CsrAppenderOptions x_options(const H5adWriteOptions& options, std::int64_t expected_nnz) {
    CsrAppenderOptions appender;
    appender.values = CsrAppenderOptions::Values::Float32;
    appender.indices = expected_nnz > 2147483647LL ? CsrAppenderOptions::Indices::Int64
                                                   : CsrAppenderOptions::Indices::Int32;
    appender.narrow_indptr = true;
    appender.layout.gzip_level = options.gzip_level;
    appender.layout.shuffle = true;  // with gzip: smaller and faster to deflate than plain
    return appender;
}

}  // namespace

void validate(const H5adWriteOptions& options) {
    if (options.gzip_level < 0 || options.gzip_level > 9)
        throw std::invalid_argument("H5adWriteOptions::gzip_level must be in [0, 9], got " +
                                    std::to_string(options.gzip_level));
    if (options.rows_per_block < 1)
        throw std::invalid_argument("H5adWriteOptions::rows_per_block must be >= 1, got " +
                                    std::to_string(options.rows_per_block));
}

// ---- H5adStreamWriter ----

struct H5adStreamWriter::Impl {
    AtomicFile output;
    MatrixShape shape;
    H5adWriteOptions options;
    std::optional<h5::File> file;
    std::optional<CsrAppender> x;

    Impl(std::string path, MatrixShape shape_, const H5adWriteOptions& options_)
        : output(std::move(path)), shape(shape_), options(options_) {}
    // Runs one step; on failure closes the handles before the temp file is removed.
    void run(const std::function<void()>& body) {
        output.run(body, [this] {
            x.reset();
            file.reset();
        });
    }
};

H5adStreamWriter::H5adStreamWriter(std::string path, MatrixShape shape, const H5adWriteOptions& options,
                                   std::int64_t expected_nnz) {
    validate(options);
    if (shape.num_cells < 0 || shape.num_genes < 0) throw std::invalid_argument("negative matrix shape");
    if (shape.num_genes > 2147483647LL)
        throw std::invalid_argument("h5ad X stores int32 indices: at most 2^31 - 1 genes");
    m_impl = std::make_unique<Impl>(std::move(path), shape, options);
    Impl& impl = *m_impl;
    impl.run([&] {
        impl.file.emplace(h5::File::create(impl.output.temp_path()));
        const h5::File& file = *impl.file;
        set_encoding(file, "/", "anndata", "0.1.0");
        file.create_group("/X");
        set_encoding(file, "/X", "csr_matrix", "0.1.0");
        file.write_attribute<std::int64_t>("/X", "shape", std::vector<std::int64_t>{shape.num_cells, shape.num_genes});
        impl.x.emplace(file, "/X", shape.num_genes, x_options(options, expected_nnz));
    });
}

H5adStreamWriter::~H5adStreamWriter() = default;

std::int64_t H5adStreamWriter::rows_written() const noexcept { return m_impl->x ? m_impl->x->rows_written() : 0; }
std::int64_t H5adStreamWriter::nnz_written() const noexcept { return m_impl->x ? m_impl->x->nnz() : 0; }

namespace {

// The checks append_rows makes before the appender validates the rows themselves.
template <class Rows>
void append_declared_rows(std::optional<CsrAppender>& x, std::int64_t num_cells, const Rows& rows) {
    if (!x) throw std::logic_error("append_rows after a failure or commit");
    if (rows.row_end() > num_cells)
        throw std::logic_error("rows beyond the declared " + std::to_string(num_cells) + " cells");
    x->append(rows);
}

}  // namespace

void H5adStreamWriter::append_rows(const CsrShard& rows) {
    m_impl->run([&] { append_declared_rows(m_impl->x, m_impl->shape.num_cells, rows); });
}

void H5adStreamWriter::append_rows(const CsrRowsView& rows) {
    m_impl->run([&] { append_declared_rows(m_impl->x, m_impl->shape.num_cells, rows); });
}

void H5adStreamWriter::commit(const Dataset& meta) {
    Impl& impl = *m_impl;
    impl.run([&] {
        if (!impl.x) throw std::logic_error("commit after a failure or commit");
        if (impl.x->rows_written() != impl.shape.num_cells)
            throw std::invalid_argument("H5adStreamWriter: " + std::to_string(impl.x->rows_written()) + " of " +
                                        std::to_string(impl.shape.num_cells) + " rows were appended");
        check_meta(meta, impl.shape);
        impl.x->finish();
        impl.x.reset();
        write_annotations(*impl.file, meta, impl.shape, impl.options.gzip_level);
        impl.file->close();
        impl.file.reset();
    });
    impl.output.commit();
}

// ---- write_h5ad ----

namespace {

void rename_uns_keys(UnsNode& node, const std::string& where, std::vector<std::string>& renamed) {
    std::map<std::string, UnsNode> children;
    for (auto& [key, child] : node.children) {
        std::string name = key.empty() ? "_" : key;
        std::replace(name.begin(), name.end(), '/', '_');
        if (name != key) {
            const std::string base = name;
            for (int suffix = 1; node.children.count(name) || children.count(name); ++suffix)
                name = base + "-" + std::to_string(suffix);
            renamed.push_back(where + ": '" + key + "' was written as '" + name + "' ('/' separates HDF5 names)");
        }
        if (child.is_dict()) rename_uns_keys(child, where + "/" + name, renamed);
        children.emplace(std::move(name), std::move(child));
    }
    node.children = std::move(children);
}

}  // namespace

std::vector<std::string> make_uns_keys_writable(UnsNode& uns) {
    std::vector<std::string> renamed;
    rename_uns_keys(uns, "uns", renamed);
    return renamed;
}

void write_h5ad(const std::string& path, const Dataset& meta, RowSource* matrix, const H5adWriteOptions& options,
                JobContext* ctx) {
    validate(options);
    const bool with_matrix = matrix != nullptr && options.write_matrix;
    MatrixShape shape{meta.obs.num_rows(), meta.var.num_rows()};
    if (matrix) shape = matrix->shape();
    check_meta(meta, shape);

    if (with_matrix) {
        H5adStreamWriter writer(path, shape, options, matrix->nnz());
        CsrShard rows;
        for (std::int64_t begin = 0; begin < shape.num_cells;) {
            const std::int64_t end = std::min(shape.num_cells, begin + options.rows_per_block);
            if (ctx) ctx->checkpoint();  // the writer's destructor removes the temporary file
            // Rows the source holds in memory are written from there (no copy).
            if (const std::optional<CsrRowsView> view = matrix->view_rows(begin, end)) {
                if (view->row_begin != begin || view->num_rows() < 1 || view->row_end() > end)
                    throw WriteError(path, "the matrix source returned rows [" + std::to_string(view->row_begin) + ", " +
                                               std::to_string(view->row_end()) + ") for [" + std::to_string(begin) +
                                               ", " + std::to_string(end) + ")");
                writer.append_rows(*view);
                begin = view->row_end();
                if (ctx) ctx->report(static_cast<double>(begin) / static_cast<double>(shape.num_cells));
                continue;
            }
            try {
                // Into the same arrays block after block (sources that can, decode in place).
                rows.row_begin = begin;
                rows.row_offsets.assign(1, 0);
                rows.gene_indices.clear();
                rows.values.clear();
                matrix->append_rows(begin, end, rows);
            } catch (const FormatError&) {
                throw;  // names the input file; the writer's destructor removes the temp file
            } catch (const ReadError&) {
                throw;
            } catch (const Cancelled&) {
                throw;
            } catch (const std::exception& error) {
                throw WriteError(path, "reading rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                           ") of the matrix failed: " + error.what());
            }
            if (rows.row_begin != begin || rows.row_end() != end)
                throw WriteError(path, "the matrix source returned rows [" + std::to_string(rows.row_begin) + ", " +
                                           std::to_string(rows.row_end()) + ") for [" + std::to_string(begin) + ", " +
                                           std::to_string(end) + ")");
            writer.append_rows(rows);
            if (ctx) ctx->report(static_cast<double>(end) / static_cast<double>(shape.num_cells));
            begin = end;
        }
        writer.commit(meta);
        return;
    }

    AtomicFile output(path);
    output.run([&] {
        h5::File file = h5::File::create(output.temp_path());
        set_encoding(file, "/", "anndata", "0.1.0");
        write_annotations(file, meta, shape, options.gzip_level);
        file.close();
    });
    output.commit();
}

}  // namespace fathom::io
