#pragma once
/// 10x Genomics HDF5 writer in the CellRanger 3+ feature-barcode layout:
/// /matrix/{data (int32 counts), indices (int64 gene indices), indptr (int64, one per
/// cell + 1), shape (int32 [genes, cells]), barcodes, features/{id, name,
/// feature_type, genome, _all_tag_keys}}, strings as numpy 'S' fixed-length bytes and
/// the numeric arrays in 80000-element chunks with shuffle + gzip, as CellRanger writes them. The matrix
/// is genes x cells CSC, i.e. cells x genes CSR, so cells are appended as rows.
/// Writes "<path>.tmp-<pid>" and renames into place (nothing is left at `path` on failure).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/Dataset.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::io {

/// How the 10x file is laid out.
struct TenxH5WriteOptions {
    int gzip_level = 4;                 ///< 0-9; CellRanger writes gzip level 4
    bool int64_indices = true;          ///< CellRanger 3 writes int64 indices; false = int32
    std::int64_t chunk_elements = 80000;   ///< CellRanger's chunk size for data/indices/indptr
    std::int64_t rows_per_block = 65536;   ///< cells read from a RowSource per block
    std::string chemistry_description = "Single Cell 3' v3";  ///< root attribute
    std::string library_id = "fathom";     ///< root attribute library_ids[0]
};

/// Throws std::invalid_argument naming the field.
void validate(const TenxH5WriteOptions& options);

/// /matrix/features: one entry per gene in each vector (all the same length).
struct TenxFeatures {
    std::vector<std::string> ids;            ///< e.g. "ENSG00000243485"
    std::vector<std::string> names;          ///< gene symbols (scanpy's var_names)
    std::vector<std::string> feature_types;  ///< "Gene Expression", "Antibody Capture", ...
    std::vector<std::string> genomes;        ///< e.g. "GRCh38"
    std::int64_t size() const noexcept { return static_cast<std::int64_t>(names.size()); }
};

/// Streams cells into a 10x HDF5 file: construct, append cells in order, commit().
/// The destructor removes the temporary file unless commit() succeeded.
class TenxH5Writer {
public:
    /// Validates (features of equal length, options) and creates the temporary file.
    /// Barcodes are stored as 'S<barcode_width>' (>= 1); a longer barcode is an error.
    /// Throws std::invalid_argument or WriteError naming `path`.
    TenxH5Writer(std::string path, TenxFeatures features, std::size_t barcode_width,
                 const TenxH5WriteOptions& options = {});
    ~TenxH5Writer();
    TenxH5Writer(const TenxH5Writer&) = delete;
    TenxH5Writer& operator=(const TenxH5Writer&) = delete;

    /// Appends the cells of `cells` (rows, gene indices < number of features, values
    /// non-negative integer counts) with one barcode per cell. Throws WriteError naming
    /// the path (the writer is then unusable).
    void append_cells(const CsrShard& cells, const std::vector<std::string>& barcodes);
    std::int64_t cells_written() const noexcept;
    std::int64_t nnz_written() const noexcept;
    /// Writes shape and features, closes and renames into place. Throws WriteError.
    void commit();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Writes `matrix` (cells x genes, integer counts) with barcodes = meta.obs's index and
/// features from meta.var: names = the index, ids = column "gene_ids" (else the
/// names), feature_type = column "feature_types" (else "Gene Expression"), genome =
/// column "genome" (else ""). Throws std::invalid_argument when meta disagrees with
/// the matrix shape, WriteError naming `path` otherwise (also for non-integer values).
void write_10x_h5(const std::string& path, const Dataset& meta, RowSource& matrix,
                  const TenxH5WriteOptions& options = {});

}  // namespace fathom::io
