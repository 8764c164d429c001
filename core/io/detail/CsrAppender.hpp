#pragma once
/// Streams a compressed-sparse matrix into an HDF5 group block by block: the one
/// implementation behind the h5ad writer's X, the 10x HDF5 writer's /matrix and
/// `fathom-cli synth`. Internal to core/io (it speaks the HDF5 layer).
#include <cstdint>
#include <string>

#include "core/data/CsrShard.hpp"
#include "core/io/detail/hdf5_write.hpp"

namespace fathom::io {

/// Stored element types of the appended arrays.
struct CsrAppenderOptions {
    /// Values as float32 (h5ad X) or int32 counts (10x; each value must then be a
    /// non-negative integer below 2^31).
    enum class Values { Float32, Int32 } values = Values::Float32;
    /// Indices as int32 (anndata) or int64 (CellRanger 3+).
    enum class Indices { Int32, Int64 } indices = Indices::Int32;
    h5::AppendOptions layout;  ///< chunking and gzip of data / indices / indptr
    /// Store indptr as int32 when the indices are int32 and nnz < 2^31, as scipy pairs
    /// them (anndata 0.8 assigns the arrays to a csr_matrix unchecked, and scipy 1.10's
    /// column indexing fails on int32 indices with an int64 indptr). indptr is streamed
    /// as int64 and rewritten at finish() (8 bytes per row read back in blocks).
    bool narrow_indptr = false;
};

/// Appends rows of a CSR matrix (or columns of a CSC matrix, as 10x stores cells) to
/// `<group>/data`, `<group>/indices` and `<group>/indptr` (int64, or int32 with
/// narrow_indptr). The group must exist;
/// its attributes are the caller's. Memory held: one batch of chunks per dataset.
class CsrAppender {
public:
    /// Creates the three datasets. `num_columns` bounds the indices. `file` must
    /// outlive the appender.
    CsrAppender(const h5::File& file, std::string group, std::int64_t num_columns, const CsrAppenderOptions& options);

    /// Appends the shard's rows. Throws WriteError naming the file and group when
    /// rows.row_begin != rows_written(), rows.num_genes != num_columns, an index is
    /// out of range or unsorted within its row, or (Int32 values) a value is not a
    /// non-negative integer count.
    void append(const CsrShard& rows);
    /// The same for rows held elsewhere (validated in parallel, written without a copy of
    /// the block).
    void append(const CsrRowsView& rows);
    std::int64_t rows_written() const noexcept { return m_rows; }
    std::int64_t nnz() const noexcept { return m_nnz; }
    std::int64_t num_columns() const noexcept { return m_num_columns; }
    /// Writes the buffered tails; indptr then holds rows_written() + 1 entries. Idempotent.
    void finish();

private:
    [[noreturn]] void fail(const std::string& problem) const;
    std::string indptr_name() const;

    const h5::File* m_file = nullptr;
    std::string m_file_path;
    std::string m_group;
    std::int64_t m_num_columns = 0;
    CsrAppenderOptions m_options;
    h5::AppendableDataset m_data, m_indices, m_indptr;
    std::int64_t m_rows = 0;
    std::int64_t m_nnz = 0;
    bool m_finished = false;
};

}  // namespace fathom::io
