#include "core/io/detail/h5ad_matrix.hpp"
#include "core/io/detail/input_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "core/data/counts.hpp"
#include "core/io/detail/hdf5_ext.hpp"
#include "core/io/detail/h5ad_elements.hpp"
#include "core/memory/first_touch.hpp"

namespace fathom::io::h5ad {

namespace {

h5::File open_file(const std::string& path) {
    h5::register_lzf_filter();
    return h5::File::open_read(path);
}

ValueType value_type_of(const h5::Info& info) {
    if (info.type_class == h5::TypeClass::Float) {
        if (info.type_size == 4) return ValueType::Float32;
        if (info.type_size == 8) return ValueType::Float64;
    } else if (info.type_class == h5::TypeClass::Integer && info.is_signed) {
        if (info.type_size == 4) return ValueType::Int32;
        if (info.type_size == 8) return ValueType::Int64;
    }
    return ValueType::Other;
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
    std::string text = "(";
    text += std::to_string(rows);
    text += ", ";
    text += std::to_string(cols);
    text += ")";
    return text;
}

// Shape checks shared by every layout, in the order the problems would mislead the
// later checks: sign, overflow, gene-index range, emptiness, then the annotations.
void check_shape(const h5::File& file, const std::string& object, std::int64_t rows, std::int64_t cols,
                 const ExpectedShape& expected) {
    if (rows < 0 || cols < 0) file.fail(object, "negative shape " + shape_text(rows, cols));
    if (cols > std::numeric_limits<std::int32_t>::max())
        file.fail(object, "shape " + shape_text(rows, cols) + ": " + std::to_string(cols) +
                              " genes exceed the int32 gene index range");
    if (cols > 0 && rows > std::numeric_limits<std::int64_t>::max() / cols)
        file.fail(object, "shape " + shape_text(rows, cols) + ": cells x genes overflows int64");
    if (rows == 0 || cols == 0)
        file.fail(object, "empty matrix: " + std::to_string(rows) + " cells x " + std::to_string(cols) + " genes");
    // Row offsets (8 bytes a cell) are always held in memory.
    detail::check_declared_size(file.path(), object, std::to_string(rows) + " cells x " + std::to_string(cols) + " genes",
                                static_cast<std::uint64_t>(rows) + 1, 8);
    if (expected.num_cells && *expected.num_cells != rows)
        file.fail(object, "shape " + shape_text(rows, cols) + " disagrees with " + expected.cells_source + ": " +
                              std::to_string(*expected.num_cells) + " cells there, " + std::to_string(rows) +
                              " rows in the matrix");
    if (expected.num_genes && *expected.num_genes != cols)
        file.fail(object, "shape " + shape_text(rows, cols) + " disagrees with " + expected.genes_source + ": " +
                              std::to_string(*expected.num_genes) + " genes there, " + std::to_string(cols) +
                              " columns in the matrix");
}

h5::Info vector_info(const h5::File& file, const std::string& object) {
    const h5::Info info = file.dataset_info(object);  // "missing" when absent
    if (info.dims.size() != 1)
        file.fail(object, "expected a 1-D dataset, found rank " + std::to_string(info.dims.size()));
    return info;
}

void inspect_sparse(const h5::File& file, MatrixInfo& info, const ExpectedShape& expected) {
    const std::string& object = info.object;
    const std::string encoding = encoding_type(file, object);
    std::string shape_attribute = "shape";
    if (encoding == "csr_matrix") {
        info.layout = MatrixLayout::Csr;
    } else if (encoding == "csc_matrix") {
        info.layout = MatrixLayout::Csc;
    } else if (encoding.empty() && file.has_attribute(object, "h5sparse_format")) {
        // anndata < 0.7 (h5sparse): attributes h5sparse_format and h5sparse_shape.
        const std::string format = file.attribute_string(object, "h5sparse_format").value_or("");
        if (format == "csr") info.layout = MatrixLayout::Csr;
        else if (format == "csc") info.layout = MatrixLayout::Csc;
        else file.fail(object, "unsupported h5sparse_format '" + format + "' (expected csr or csc)");
        shape_attribute = "h5sparse_shape";
    } else {
        file.fail(object, encoding.empty()
                              ? "group without encoding-type csr_matrix / csc_matrix (or h5sparse_format)"
                              : "unsupported matrix encoding-type '" + encoding + "'");
    }
    const auto shape = file.attribute_numbers<std::int64_t>(object, shape_attribute);
    if (!shape) file.fail(object, "attribute '" + shape_attribute + "' missing");
    if (file.attribute_info(object, shape_attribute).type_class != h5::TypeClass::Integer)
        file.fail(object, "attribute '" + shape_attribute + "' must hold integers");
    if (shape->size() != 2)
        file.fail(object, "attribute '" + shape_attribute + "' has " + std::to_string(shape->size()) +
                              " entries; expected 2 (cells, genes)");
    check_shape(file, object, (*shape)[0], (*shape)[1], expected);
    info.shape = {(*shape)[0], (*shape)[1]};

    const h5::Info indptr = vector_info(file, info.indptr());
    const h5::Info indices = vector_info(file, info.indices());
    const h5::Info data = vector_info(file, info.data());
    if (indptr.type_class != h5::TypeClass::Integer) file.fail(info.indptr(), "expected an integer dtype");
    if (indices.type_class != h5::TypeClass::Integer) file.fail(info.indices(), "expected an integer dtype");
    if (data.type_class != h5::TypeClass::Integer && data.type_class != h5::TypeClass::Float)
        file.fail(info.data(), "expected an integer or floating-point dtype");
    info.stored_type = value_type_of(data);

    const bool csr = info.layout == MatrixLayout::Csr;
    const std::int64_t major = csr ? info.shape.num_cells : info.shape.num_genes;
    if (indptr.dims[0] != major + 1)
        file.fail(info.indptr(), "has " + std::to_string(indptr.dims[0]) + " entries; expected " +
                                     (csr ? "n_obs + 1 = " : "n_vars + 1 = ") + std::to_string(major + 1));
    const std::int64_t stored = indices.dims[0];
    if (data.dims[0] != stored)
        file.fail(info.data(), "has " + std::to_string(data.dims[0]) + " entries; expected len(" + info.indices() +
                                   ") = " + std::to_string(stored));

    auto offsets = std::make_shared<std::vector<std::int64_t>>(file.read_all<std::int64_t>(info.indptr()));
    if ((*offsets)[0] != 0) file.fail(info.indptr(), "starts at " + std::to_string((*offsets)[0]) + "; expected 0");
    for (std::size_t position = 1; position < offsets->size(); ++position)
        if ((*offsets)[position] < (*offsets)[position - 1])
            file.fail(info.indptr(), "decreases at entry " + std::to_string(position) + " (" +
                                         std::to_string((*offsets)[position - 1]) + " -> " +
                                         std::to_string((*offsets)[position]) + "); it must be non-decreasing");
    if (offsets->back() != stored)
        file.fail(info.indptr(), "ends at " + std::to_string(offsets->back()) + "; expected len(" + info.indices() +
                                     ") = " + std::to_string(stored) + " (it would read past the stored entries)");
    info.nnz = stored;
    info.offsets = std::move(offsets);
}

void fail_not_finite(const h5::File& file, const std::string& object, float value, const std::string& where) {
    file.fail(object, std::string("value ") + (std::isnan(value) ? "NaN" : "Inf") + " at " + where +
                          "; values must be finite");
}

void inspect_dense(const h5::File& file, MatrixInfo& info, const ExpectedShape& expected,
                   std::int64_t block_elements) {
    const std::string& object = info.object;
    const h5::Info stored = file.dataset_info(object);
    if (stored.dims.size() != 2)
        file.fail(object, "expected a 2-D dataset (dense matrix) or a sparse group, found rank " +
                              std::to_string(stored.dims.size()));
    if (stored.type_class != h5::TypeClass::Integer && stored.type_class != h5::TypeClass::Float)
        file.fail(object, "expected an integer or floating-point dtype");
    check_shape(file, object, stored.dims[0], stored.dims[1], expected);
    info.layout = MatrixLayout::Dense;
    info.shape = {stored.dims[0], stored.dims[1]};
    info.stored_type = value_type_of(stored);

    // One streaming pass: non-zeros per row (for nnz and row_offsets), NaN / Inf, and
    // whether every value is a non-negative integer.
    const std::int64_t cols = info.shape.num_genes;
    const std::int64_t rows_per_block = std::max<std::int64_t>(1, block_elements / cols);
    auto offsets = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(info.shape.num_cells + 1), 0);
    bool integer = true;
    for (std::int64_t begin = 0; begin < info.shape.num_cells; begin += rows_per_block) {
        const std::int64_t end = std::min(info.shape.num_cells, begin + rows_per_block);
        const auto values = file.read_rows_2d<float>(object, begin, end);
        for (std::int64_t row = begin; row < end; ++row) {
            std::int64_t count = 0;
            const float* row_values = values.data() + (row - begin) * cols;
            for (std::int64_t col = 0; col < cols; ++col) {
                const float value = row_values[col];
                if (!std::isfinite(value))
                    fail_not_finite(file, object, value, "row " + std::to_string(row) + ", column " + std::to_string(col));
                if (value != 0.0f) ++count;
                integer = integer && is_count(value);
            }
            (*offsets)[static_cast<std::size_t>(row + 1)] = (*offsets)[static_cast<std::size_t>(row)] + count;
        }
    }
    info.nnz = offsets->back();
    info.offsets = std::move(offsets);
    info.integer_counts_known = true;
    info.integer_counts = integer;
}

void check_range(const MatrixInfo& info, std::int64_t begin, std::int64_t end) {
    if (begin < 0 || end < begin || end > info.shape.num_cells)
        throw std::out_of_range(info.path + ": " + info.object + ": read_rows(" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") outside [0, " + std::to_string(info.shape.num_cells) + "]");
}

// Range, order, duplicate and finiteness checks of a CSR shard read straight from the
// file (`first_entry` = global position of its first stored entry, for messages).
void check_and_sort_rows(const h5::File& file, const MatrixInfo& info, CsrShard& shard, std::int64_t first_entry) {
    const std::int64_t genes = info.shape.num_genes;
    std::vector<std::pair<std::int32_t, float>> scratch;
    for (std::int64_t row = 0; row < shard.num_rows(); ++row) {
        const auto lo = shard.row_offsets[static_cast<std::size_t>(row)];
        const auto hi = shard.row_offsets[static_cast<std::size_t>(row + 1)];
        bool sorted = true;
        for (auto entry = lo; entry < hi; ++entry) {
            const std::int32_t gene = shard.gene_indices[static_cast<std::size_t>(entry)];
            if (gene < 0 || gene >= genes)
                file.fail(info.indices(), "entry " + std::to_string(first_entry + entry) + " (row " +
                                              std::to_string(shard.row_begin + row) + ") is " + std::to_string(gene) +
                                              ", outside [0, n_vars = " + std::to_string(genes) + ")");
            const float value = shard.values[static_cast<std::size_t>(entry)];
            if (!std::isfinite(value))
                fail_not_finite(file, info.data(), value,
                                "entry " + std::to_string(first_entry + entry) + " (row " +
                                    std::to_string(shard.row_begin + row) + ", gene " + std::to_string(gene) + ")");
            if (entry > lo && gene <= shard.gene_indices[static_cast<std::size_t>(entry - 1)]) sorted = false;
        }
        if (sorted) continue;
        scratch.clear();
        for (auto entry = lo; entry < hi; ++entry)
            scratch.emplace_back(shard.gene_indices[static_cast<std::size_t>(entry)],
                                 shard.values[static_cast<std::size_t>(entry)]);
        std::sort(scratch.begin(), scratch.end(),
                  [](const auto& left, const auto& right) { return left.first < right.first; });
        for (std::size_t position = 0; position < scratch.size(); ++position) {
            if (position > 0 && scratch[position].first == scratch[position - 1].first)
                file.fail(info.indices(), "row " + std::to_string(shard.row_begin + row) + " holds gene index " +
                                              std::to_string(scratch[position].first) +
                                              " twice (duplicate entries are rejected, not summed)");
            shard.gene_indices[static_cast<std::size_t>(lo) + position] = scratch[position].first;
            shard.values[static_cast<std::size_t>(lo) + position] = scratch[position].second;
        }
    }
}

}  // namespace

const char* layout_name(MatrixLayout layout) noexcept {
    switch (layout) {
        case MatrixLayout::Csr: return "csr";
        case MatrixLayout::Csc: return "csc";
        case MatrixLayout::Dense: return "dense";
        case MatrixLayout::Absent: return "none";
    }
    return "none";
}

MatrixInfo inspect_matrix(const h5::File& file, const std::string& object, const ExpectedShape& expected,
                          bool allow_absent) {
    MatrixInfo info;
    info.path = file.path();
    info.object = object;
    if (!file.exists(object)) {
        if (!allow_absent) file.fail(object, "missing");
        if (!expected.num_cells || !expected.num_genes)
            file.fail(object, "missing, and obs / var are absent too, so the matrix shape is unknown");
        check_shape(file, object, *expected.num_cells, *expected.num_genes, expected);
        info.layout = MatrixLayout::Absent;
        info.shape = {*expected.num_cells, *expected.num_genes};
        info.integer_counts_known = true;
        info.integer_counts = true;
        return info;
    }
    if (file.is_group(object)) {
        inspect_sparse(file, info, expected);
    } else if (file.is_dataset(object)) {
        inspect_dense(file, info, expected, 1 << 22);
    } else {
        file.fail(object, "is neither a group (sparse matrix) nor a dataset (dense matrix)");
    }
    return info;
}

std::unique_ptr<RowSource> make_row_source(std::shared_ptr<const MatrixInfo> info) {
    switch (info->layout) {
        case MatrixLayout::Csr: return std::make_unique<CsrRowSource>(std::move(info));
        case MatrixLayout::Csc: return std::make_unique<CscRowSource>(std::move(info));
        case MatrixLayout::Dense: return std::make_unique<DenseRowSource>(std::move(info));
        case MatrixLayout::Absent: return std::make_unique<AbsentRowSource>(info->shape);
    }
    throw std::logic_error("make_row_source: unknown layout");
}

// ---- CSR ----

CsrRowSource::CsrRowSource(std::shared_ptr<const MatrixInfo> info)
    : m_info(std::move(info)), m_file(open_file(m_info->path)) {}

CsrShard CsrRowSource::read_rows(std::int64_t begin, std::int64_t end) {
    check_range(*m_info, begin, end);
    const auto& offsets = *m_info->offsets;
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = m_info->shape.num_genes;
    const std::int64_t first = offsets[static_cast<std::size_t>(begin)];
    const std::int64_t count = offsets[static_cast<std::size_t>(end)] - first;
    shard.row_offsets.resize(static_cast<std::size_t>(end - begin + 1));
    for (std::int64_t row = begin; row <= end; ++row)
        shard.row_offsets[static_cast<std::size_t>(row - begin)] = offsets[static_cast<std::size_t>(row)] - first;
    if (count > 0) {
        // int64 indices are clipped to int32 by HDF5's conversion, so any index beyond
        // int32 still fails the range check below.
        shard.gene_indices = m_file.read<std::int32_t>(m_info->indices(), first, count);
        shard.values = m_file.read<float>(m_info->data(), first, count);
    }
    check_and_sort_rows(m_file, *m_info, shard, first);
    return shard;
}

// ---- CSC ----

CscRowSource::CscRowSource(std::shared_ptr<const MatrixInfo> info, std::int64_t block_elements)
    : m_info(std::move(info)), m_file(open_file(m_info->path)), m_block_elements(std::max<std::int64_t>(1, block_elements)) {}

namespace {

void check_cell(const h5::File& file, const MatrixInfo& info, std::int64_t entry, std::int64_t cell) {
    if (cell < 0 || cell >= info.shape.num_cells)
        file.fail(info.indices(), "entry " + std::to_string(entry) + " is " + std::to_string(cell) +
                                      ", outside [0, n_obs = " + std::to_string(info.shape.num_cells) + ")");
}

}  // namespace

std::vector<std::int64_t> CscRowSource::row_offsets() {
    if (!m_row_offsets.empty()) return m_row_offsets;
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(m_info->shape.num_cells + 1), 0);
    for (std::int64_t start = 0; start < m_info->nnz; start += m_block_elements) {
        const std::int64_t length = std::min(m_block_elements, m_info->nnz - start);
        const auto cells = m_file.read<std::int64_t>(m_info->indices(), start, length);
        for (std::int64_t k = 0; k < length; ++k) {
            check_cell(m_file, *m_info, start + k, cells[static_cast<std::size_t>(k)]);
            ++offsets[static_cast<std::size_t>(cells[static_cast<std::size_t>(k)] + 1)];
        }
    }
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    m_row_offsets = offsets;
    return offsets;
}

CsrShard CscRowSource::read_rows(std::int64_t begin, std::int64_t end) {
    check_range(*m_info, begin, end);
    const auto& column_offsets = *m_info->offsets;
    const std::int64_t total = m_info->nnz;
    const std::int64_t num_rows = end - begin;
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = m_info->shape.num_genes;
    shard.row_offsets.assign(static_cast<std::size_t>(num_rows + 1), 0);
    if (num_rows == 0 || total == 0) return shard;

    // Pass 1: entries per wanted row; which blocks hold any.
    const std::int64_t num_blocks = (total + m_block_elements - 1) / m_block_elements;
    std::vector<std::uint8_t> block_wanted(static_cast<std::size_t>(num_blocks), 0);
    std::vector<std::int64_t> cells;
    for (std::int64_t block = 0; block < num_blocks; ++block) {
        const std::int64_t start = block * m_block_elements;
        const std::int64_t length = std::min(m_block_elements, total - start);
        cells = m_file.read<std::int64_t>(m_info->indices(), start, length);
        for (std::int64_t k = 0; k < length; ++k) {
            const std::int64_t cell = cells[static_cast<std::size_t>(k)];
            check_cell(m_file, *m_info, start + k, cell);
            if (cell >= begin && cell < end) {
                ++shard.row_offsets[static_cast<std::size_t>(cell - begin + 1)];
                block_wanted[static_cast<std::size_t>(block)] = 1;
            }
        }
    }
    std::partial_sum(shard.row_offsets.begin(), shard.row_offsets.end(), shard.row_offsets.begin());
    // The pages first touched by every thread (core/memory/first_touch.hpp).
    resize_touched_in_parallel(shard.gene_indices, static_cast<std::size_t>(shard.nnz()));
    resize_touched_in_parallel(shard.values, static_cast<std::size_t>(shard.nnz()));
    std::vector<std::int64_t> cursor(shard.row_offsets.begin(), shard.row_offsets.end() - 1);

    // Pass 2: fill. Columns are visited in increasing order, so rows come out sorted.
    for (std::int64_t block = 0; block < num_blocks; ++block) {
        if (!block_wanted[static_cast<std::size_t>(block)]) continue;
        const std::int64_t start = block * m_block_elements;
        const std::int64_t length = std::min(m_block_elements, total - start);
        if (num_blocks > 1) cells = m_file.read<std::int64_t>(m_info->indices(), start, length);
        const auto values = m_file.read<float>(m_info->data(), start, length);
        auto column = static_cast<std::int64_t>(
            std::upper_bound(column_offsets.begin(), column_offsets.end(), start) - column_offsets.begin() - 1);
        for (std::int64_t k = 0; k < length; ++k) {
            const std::int64_t entry = start + k;
            while (column_offsets[static_cast<std::size_t>(column + 1)] <= entry) ++column;
            const std::int64_t cell = cells[static_cast<std::size_t>(k)];
            if (cell < begin || cell >= end) continue;
            const auto row = static_cast<std::size_t>(cell - begin);
            const std::int64_t position = cursor[row];
            if (position > shard.row_offsets[row] && shard.gene_indices[static_cast<std::size_t>(position - 1)] == column)
                m_file.fail(m_info->indices(), "column " + std::to_string(column) + " holds cell " +
                                                   std::to_string(cell) +
                                                   " twice (duplicate entries are rejected, not summed)");
            const float value = values[static_cast<std::size_t>(k)];
            if (!std::isfinite(value))
                fail_not_finite(m_file, m_info->data(), value,
                                "entry " + std::to_string(entry) + " (row " + std::to_string(cell) + ", gene " +
                                    std::to_string(column) + ")");
            shard.gene_indices[static_cast<std::size_t>(position)] = static_cast<std::int32_t>(column);
            shard.values[static_cast<std::size_t>(position)] = value;
            ++cursor[row];
        }
    }
    return shard;
}

// ---- dense ----

DenseRowSource::DenseRowSource(std::shared_ptr<const MatrixInfo> info, std::int64_t block_elements)
    : m_info(std::move(info)), m_file(open_file(m_info->path)), m_block_elements(std::max<std::int64_t>(1, block_elements)) {}

CsrShard DenseRowSource::read_rows(std::int64_t begin, std::int64_t end) {
    check_range(*m_info, begin, end);
    const auto& offsets = *m_info->offsets;
    const std::int64_t cols = m_info->shape.num_genes;
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = cols;
    const std::int64_t first = offsets[static_cast<std::size_t>(begin)];
    const std::int64_t count = offsets[static_cast<std::size_t>(end)] - first;
    shard.row_offsets.resize(static_cast<std::size_t>(end - begin + 1));
    for (std::int64_t row = begin; row <= end; ++row)
        shard.row_offsets[static_cast<std::size_t>(row - begin)] = offsets[static_cast<std::size_t>(row)] - first;
    shard.gene_indices.reserve(static_cast<std::size_t>(count));
    shard.values.reserve(static_cast<std::size_t>(count));
    const std::int64_t rows_per_block = std::max<std::int64_t>(1, m_block_elements / cols);
    for (std::int64_t block_begin = begin; block_begin < end; block_begin += rows_per_block) {
        const std::int64_t block_end = std::min(end, block_begin + rows_per_block);
        const auto values = m_file.read_rows_2d<float>(m_info->object, block_begin, block_end);
        for (std::int64_t row = block_begin; row < block_end; ++row) {
            const float* row_values = values.data() + (row - block_begin) * cols;
            for (std::int64_t col = 0; col < cols; ++col) {
                const float value = row_values[col];
                if (value == 0.0f) continue;
                if (!std::isfinite(value))
                    fail_not_finite(m_file, m_info->object, value,
                                    "row " + std::to_string(row) + ", column " + std::to_string(col));
                shard.gene_indices.push_back(static_cast<std::int32_t>(col));
                shard.values.push_back(value);
            }
            const auto expected = shard.row_offsets[static_cast<std::size_t>(row - begin + 1)];
            if (static_cast<std::int64_t>(shard.values.size()) != expected)
                m_file.fail(m_info->object, "row " + std::to_string(row) + " changed since the file was opened");
        }
    }
    return shard;
}

// ---- absent ----

CsrShard AbsentRowSource::read_rows(std::int64_t begin, std::int64_t end) {
    if (begin < 0 || end < begin || end > m_shape.num_cells)
        throw std::out_of_range("read_rows(" + std::to_string(begin) + ", " + std::to_string(end) + ") outside [0, " +
                                std::to_string(m_shape.num_cells) + "]");
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = m_shape.num_genes;
    shard.row_offsets.assign(static_cast<std::size_t>(end - begin + 1), 0);
    return shard;
}

}  // namespace fathom::io::h5ad
