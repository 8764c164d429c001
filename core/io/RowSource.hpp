#pragma once
/// Streaming access to a cells x genes matrix on disk, one row range at a time.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/data/Dataset.hpp"
#include "core/io/errors.hpp"
#include "core/data/ShardedCsr.hpp"

namespace fathom::io {

/// Reads any row range [begin, end) of a matrix straight from its file without reading
/// the other rows (HDF5 hyperslabs for CSR; bounded-memory block scans for CSC and
/// dense; an index of line offsets for Matrix Market). Thread-safety: one RowSource
/// may be used from one thread at a time; open one per device to read in parallel.
class RowSource {
public:
    virtual ~RowSource() = default;

    virtual MatrixShape shape() const = 0;
    /// Stored non-zeros of the whole matrix (after any feature selection).
    virtual std::int64_t nnz() const = 0;
    /// Rows [begin, end) as a CSR shard with sorted gene indices and row_begin = begin.
    /// Throws FormatError naming the object when the stored data are malformed
    /// (indices out of range, NaN/Inf, negative counts where counts are required).
    virtual CsrShard read_rows(std::int64_t begin, std::int64_t end) = 0;
    /// Rows [begin, end) appended to `rows` (whose rows must end at `begin`; a shard
    /// without rows takes row_begin = begin): the same entries as read_rows, written
    /// into `rows`' arrays, so that a caller that reserved them reads without copies or
    /// reallocation. Throws as read_rows (`rows` then holds a partial block). The
    /// default appends a copy of read_rows.
    virtual void append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows);
    /// Rows from `begin` towards `end` (begin < end) as a view of memory the source
    /// holds (no copy), valid while the source lives and is not read again; it may end
    /// early (at least one row), e.g. where one of its shards ends. nullopt when the
    /// source holds no rows in memory (files), or not these: read them instead.
    virtual std::optional<CsrRowsView> view_rows(std::int64_t begin, std::int64_t end) {
        (void)begin;
        (void)end;
        return std::nullopt;
    }
    /// Global row offsets (num_cells + 1), used to balance shards by nnz. May read the
    /// whole indptr (8 bytes per cell) but never the values.
    virtual std::vector<std::int64_t> row_offsets() = 0;
    /// A fresh, independent source over the same matrix (for reading on another thread).
    virtual std::unique_ptr<RowSource> clone() const = 0;
    /// A hint that the rows read from now on are kept in memory and the file will not be
    /// read again: a file-backed source then drops what it read from the page cache
    /// (fresh pages the size of the file otherwise). Sources without a file ignore it.
    virtual void set_read_once(bool) {}
};

/// RowSource::set_read_once for a scope: on from construction (when `on`), off again
/// when the scope ends, which drops what is still cached.
class ReadOnceScope {
public:
    ReadOnceScope(RowSource& source, bool on) : m_source(on ? &source : nullptr) {
        if (m_source != nullptr) m_source->set_read_once(true);
    }
    ~ReadOnceScope() {
        if (m_source != nullptr) m_source->set_read_once(false);
    }
    ReadOnceScope(const ReadOnceScope&) = delete;
    ReadOnceScope& operator=(const ReadOnceScope&) = delete;

private:
    RowSource* m_source;
};

/// Which matrix to open and how to name things.
struct ReadOptions {
    /// "X" (default), "raw" (raw/X with raw/var), or "layers/<name>". h5ad only.
    std::string matrix = "X";
    /// 10x: feature types to keep ("Gene Expression" by default as scanpy's
    /// gex_only=True); empty keeps every feature.
    std::string feature_type = "Gene Expression";
    /// 10x v2: genome group to read; empty = the only one (error if several).
    std::string genome;
    /// anndata's var_names_make_unique / obs_names_make_unique (`LTB`, `LTB-1`; the
    /// renamed count goes to Dataset::num_var_names_made_unique). Off by default here, as
    /// scanpy's read_10x_h5 keeps duplicates; the engine (DatasetReadOptions) and
    /// fathom-cli turn it on unless asked to keep them (--keep-duplicate-names).
    bool make_var_names_unique = false;
    bool make_obs_names_unique = false;
    /// Read obsm/varm/uns (small, host-side). Off skips them for speed.
    bool read_annotations = true;
};

/// A dataset opened for streaming: host-side metadata plus a row source.
struct OpenedDataset {
    Dataset meta;
    std::unique_ptr<RowSource> source;
};

/// Detects the format by content (HDF5 signature and layout, Matrix Market banner,
/// folder contents), then opens it. Throws ReadError or FormatError.
OpenedDataset open_dataset(const std::string& path, const ReadOptions& options = {});

/// The detected format only; throws like open_dataset.
DatasetFormat detect_format(const std::string& path);

/// Loads the whole matrix as shards, reading each shard's rows from the source.
/// `ranges` from split_rows_evenly / split_rows_by_nnz.
ShardedCsr load_shards(RowSource& source, const std::vector<RowRange>& ranges);

}  // namespace fathom::io
