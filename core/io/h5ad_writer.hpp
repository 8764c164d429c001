#pragma once
/// h5ad writer (anndata's on-disk format, encoding-version 0.1.0 elements as anndata 0.8+
/// writes them). Always writes to "<path>.tmp-<pid>" and renames into place, so a
/// failure never leaves a broken or half-written file at `path`.
#include <cstdint>
#include <memory>
#include <string>

#include "core/data/Dataset.hpp"
#include "core/io/RowSource.hpp"

namespace fathom {
class JobContext;
}

namespace fathom::io {

struct H5adWriteOptions {
    int gzip_level = 0;            ///< 0 = uncompressed; 1-9 = gzip (chunked datasets)
    bool write_matrix = true;      ///< false writes obs/var/obsm/varm/uns only (X omitted)
    std::int64_t rows_per_block = 65536;  ///< rows streamed from the source per block
};

/// Throws std::invalid_argument naming the field ("H5adWriteOptions::gzip_level must be
/// in [0, 9]", "H5adWriteOptions::rows_per_block must be >= 1").
void validate(const H5adWriteOptions& options);

/// Writes `meta` (obs, var, obsm, varm, obsp, uns) and, when `matrix` is given and
/// options.write_matrix, the matrix streamed block by block from `matrix` as CSR X
/// (float32 data; chunked and extendible, so memory stays at one block). Index dtypes
/// pair as scipy pairs them: int32 indices + int32 indptr when nnz < 2^31, else int64
/// + int64 (anndata 0.8 + scipy 1.10 fail on int32 indices with an int64 indptr).
/// Also writes the empty layers / varp groups anndata writes.
/// Throws std::invalid_argument (before anything is created) when the options are
/// invalid or meta's tables disagree with the matrix shape. An obs or var table with
/// no rows and no columns gets anndata's default index "0", "1", ... Throws
/// WriteError naming `path` when writing fails (nothing is left at `path`, an existing
/// file there is untouched); errors reading `matrix` (FormatError, ReadError) and
/// Cancelled (from `ctx`, checked before every block of rows) propagate unchanged after
/// the same clean-up.
void write_h5ad(const std::string& path, const Dataset& meta, RowSource* matrix, const H5adWriteOptions& options = {},
                JobContext* ctx = nullptr);

/// Renames the uns dictionary keys an h5ad cannot hold (a '/' becomes '_', an empty key
/// '_'; a number is appended when the new name is taken) so that one odd entry never
/// stops a write. Returns one line per rename, e.g. "uns/groups: 'CD4+/CD25' was
/// written as 'CD4+_CD25' ('/' separates HDF5 names)". Structured arrays keep their
/// field names as they are (UnsRecords: not HDF5 names).
std::vector<std::string> make_uns_keys_writable(UnsNode& uns);

/// Incremental h5ad writer for producers that generate X block by block (synth):
/// construct, append rows in order, then commit() with the annotations. The
/// destructor removes the temporary file unless commit() succeeded.
class H5adStreamWriter {
public:
    /// Validates the options and creates "<path>.tmp-<pid>" with an empty X of
    /// `shape`. `expected_nnz` (-1 = unknown) picks the index dtype: int64 indices and
    /// indptr when it is >= 2^31, else int32 (then indptr is int32 too unless more than
    /// 2^31 - 1 non-zeros arrive). Throws std::invalid_argument or WriteError naming `path`.
    H5adStreamWriter(std::string path, MatrixShape shape, const H5adWriteOptions& options = {},
                     std::int64_t expected_nnz = -1);
    ~H5adStreamWriter();
    H5adStreamWriter(const H5adStreamWriter&) = delete;
    H5adStreamWriter& operator=(const H5adStreamWriter&) = delete;

    /// Appends rows [rows.row_begin, rows.row_end()) of X; rows.row_begin must equal
    /// rows_written(). Throws WriteError naming the path (the writer is then unusable).
    void append_rows(const CsrShard& rows);
    /// The same for rows held elsewhere (written without a copy).
    void append_rows(const CsrRowsView& rows);
    std::int64_t rows_written() const noexcept;
    std::int64_t nnz_written() const noexcept;
    /// Writes `meta`'s annotations (its tables must match the shape; meta.shape is
    /// ignored), closes and renames into place. Throws std::invalid_argument when the
    /// tables disagree with the shape or fewer rows than shape.num_cells were appended,
    /// WriteError when writing fails; the temporary file is removed either way.
    void commit(const Dataset& meta);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace fathom::io
