#include "core/io/detail/CsrAppender.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace fathom::io {

CsrAppender::CsrAppender(const h5::File& file, std::string group, std::int64_t num_columns,
                         const CsrAppenderOptions& options)
    : m_file(&file), m_file_path(file.path()), m_group(std::move(group)), m_num_columns(num_columns), m_options(options) {
    if (num_columns < 0) fail("negative number of columns");
    if (options.values == CsrAppenderOptions::Values::Float32)
        m_data = h5::AppendableDataset::create<float>(file, h5::join(m_group, "data"), options.layout);
    else
        m_data = h5::AppendableDataset::create<std::int32_t>(file, h5::join(m_group, "data"), options.layout);
    if (options.indices == CsrAppenderOptions::Indices::Int32)
        m_indices = h5::AppendableDataset::create<std::int32_t>(file, h5::join(m_group, "indices"), options.layout);
    else
        m_indices = h5::AppendableDataset::create<std::int64_t>(file, h5::join(m_group, "indices"), options.layout);
    m_indptr = h5::AppendableDataset::create<std::int64_t>(file, indptr_name(), options.layout);
    const std::int64_t zero = 0;
    m_indptr.append(&zero, 1);
}

std::string CsrAppender::indptr_name() const {
    // Streamed under a temporary name when it may be narrowed at finish().
    return h5::join(m_group, m_options.narrow_indptr ? "__fathom_indptr_int64" : "indptr");
}

void CsrAppender::fail(const std::string& problem) const { throw WriteError(m_file_path, m_group + ": " + problem); }

void CsrAppender::append(const CsrShard& rows) {
    if (rows.row_offsets.empty() || rows.row_offsets.front() != 0 ||
        static_cast<std::int64_t>(rows.gene_indices.size()) != rows.nnz() ||
        static_cast<std::int64_t>(rows.values.size()) != rows.nnz())
        fail("malformed block at row " + std::to_string(rows.row_begin));
    append(rows_view(rows));
}

void CsrAppender::append(const CsrRowsView& rows) {
    if (rows.row_begin != m_rows)
        fail("rows appended out of order: got row " + std::to_string(rows.row_begin) + ", expected " +
             std::to_string(m_rows));
    if (rows.num_genes != m_num_columns)
        fail("block has " + std::to_string(rows.num_genes) + " columns, expected " + std::to_string(m_num_columns));
    const std::int64_t num_rows = rows.num_rows();
    if (num_rows < 0) fail("malformed block at row " + std::to_string(rows.row_begin));
    const std::int64_t first_entry = rows.row_offsets.front();
    const std::int64_t block_nnz = rows.nnz();
    // Validate before anything of this block reaches the file: rows in parallel, the
    // first bad row (in row order) reported.
    std::atomic<std::int64_t> first_bad{num_rows};
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, num_rows, 1024), [&](const auto& range) {
        for (std::int64_t row = range.begin(); row < range.end(); ++row) {
            const std::int64_t begin = rows.row_offsets[static_cast<std::size_t>(row)];
            const std::int64_t end = rows.row_offsets[static_cast<std::size_t>(row) + 1];
            bool good = end >= begin && begin >= first_entry && end <= first_entry + block_nnz;
            std::int64_t previous = -1;
            for (std::int64_t entry = begin; good && entry < end; ++entry) {
                const std::int64_t column = rows.gene_indices[entry];
                good = column > previous && column < m_num_columns;
                previous = column;
            }
            if (good && m_options.values == CsrAppenderOptions::Values::Int32)
                for (std::int64_t entry = begin; good && entry < end; ++entry) {
                    const float value = rows.values[entry];
                    good = value >= 0.0f && value < 2147483648.0f && std::floor(value) == value;
                }
            if (!good) {
                std::int64_t seen = first_bad.load();
                while (row < seen && !first_bad.compare_exchange_weak(seen, row)) {
                }
                return;
            }
        }
    });
    if (const std::int64_t row = first_bad.load(); row < num_rows) {
        const std::int64_t begin = rows.row_offsets[static_cast<std::size_t>(row)];
        const std::int64_t end = rows.row_offsets[static_cast<std::size_t>(row) + 1];
        if (end < begin || begin < first_entry || end > first_entry + block_nnz)
            fail("malformed row offsets at row " + std::to_string(m_rows + row));
        std::int64_t previous = -1;
        for (std::int64_t entry = begin; entry < end; ++entry) {
            const std::int64_t column = rows.gene_indices[entry];
            if (column <= previous || column >= m_num_columns)
                fail("row " + std::to_string(m_rows + row) + " has index " + std::to_string(column) +
                     (column >= m_num_columns || column < 0
                          ? " outside [0, " + std::to_string(m_num_columns) + ")"
                          : " not after " + std::to_string(previous) + " (indices must be sorted and unique)"));
            previous = column;
        }
        for (std::int64_t entry = begin; entry < end; ++entry) {
            const float value = rows.values[entry];
            if (!(value >= 0.0f) || value >= 2147483648.0f || std::floor(value) != value)
                fail("value " + std::to_string(value) + " at row " + std::to_string(m_rows + row) +
                     " is not a non-negative integer count");
        }
    }
    const float* values = rows.values + first_entry;
    const std::int32_t* indices = rows.gene_indices + first_entry;
    if (m_options.values == CsrAppenderOptions::Values::Float32) {
        m_data.append(values, block_nnz);
    } else {
        std::vector<std::int32_t> counts(static_cast<std::size_t>(block_nnz));
        for (std::size_t entry = 0; entry < counts.size(); ++entry) counts[entry] = static_cast<std::int32_t>(values[entry]);
        m_data.append(counts.data(), block_nnz);
    }
    if (m_options.indices == CsrAppenderOptions::Indices::Int32) {
        m_indices.append(indices, block_nnz);
    } else {
        std::vector<std::int64_t> wide(indices, indices + block_nnz);
        m_indices.append(wide.data(), block_nnz);
    }
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(num_rows));
    for (std::int64_t row = 0; row < num_rows; ++row)
        offsets[static_cast<std::size_t>(row)] = m_nnz + rows.row_offsets[static_cast<std::size_t>(row) + 1] - first_entry;
    m_indptr.append(offsets.data(), num_rows);
    m_rows += num_rows;
    m_nnz += block_nnz;
}

void CsrAppender::finish() {
    if (m_finished) return;
    m_data.finish();
    m_indices.finish();
    m_indptr.finish();
    m_finished = true;
    if (!m_options.narrow_indptr) return;
    const std::string wide = indptr_name();
    const std::string final_name = h5::join(m_group, "indptr");
    const bool narrow = m_options.indices == CsrAppenderOptions::Indices::Int32 && m_nnz <= 2147483647LL;
    if (!narrow) {
        if (H5Lmove(m_file->id(), wide.c_str(), m_file->id(), final_name.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0)
            fail("cannot rename " + wide + " to " + final_name);
        return;
    }
    auto narrowed = h5::AppendableDataset::create<std::int32_t>(*m_file, final_name, m_options.layout);
    constexpr std::int64_t kBlock = 1 << 20;
    const std::int64_t total = m_rows + 1;
    for (std::int64_t begin = 0; begin < total; begin += kBlock) {
        const std::int64_t count = std::min(kBlock, total - begin);
        const std::vector<std::int64_t> offsets = m_file->read<std::int64_t>(wide, begin, count);
        const std::vector<std::int32_t> small(offsets.begin(), offsets.end());
        narrowed.append(small.data(), count);
    }
    narrowed.finish();
    if (H5Ldelete(m_file->id(), wide.c_str(), H5P_DEFAULT) < 0) fail("cannot remove " + wide);
}

}  // namespace fathom::io
