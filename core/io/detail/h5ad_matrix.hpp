#pragma once
/// Row sources over an h5ad matrix element (X, raw/X, layers/<name>), one per stored
/// layout. Include only from core/io sources (exposes the HDF5 layer).
///
/// Validation (before any allocation that depends on stored sizes), every failure an
/// io::FormatError naming the file and the object:
///   at open   - shape attribute: 2 non-negative entries, product fits in int64,
///               genes fit in int32 gene indices; 0 cells or 0 genes = "empty matrix";
///               agreement with the obs / var lengths; indptr / indices / data present,
///               1-D, integer (indptr, indices) or numeric (data); len(indptr) = n + 1;
///               len(data) = len(indices); indptr starts at 0, never decreases, ends at
///               len(indices) (int64 throughout, so an indptr above 2^31 is compared,
///               not overflowed). Dense: rank 2, numeric; the matrix is scanned once in
///               row blocks to count non-zeros per row and reject NaN / Inf.
///   in read_rows (only the entries read) - gene indices in [0, n_vars), values finite
///               (NaN / Inf rejected; float64 beyond float32 range becomes Inf and is
///               rejected too).
/// Unsorted gene indices within a row are SORTED at read time (scipy allows
/// unsorted CSR, `has_sorted_indices == False`); a gene index repeated within a row is
/// REJECTED (scipy would sum duplicates; silently summing hides a broken writer).
/// Values of any integer or float dtype are converted to float32.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/io/RowSource.hpp"
#include "core/io/detail/hdf5.hpp"

namespace fathom::io::h5ad {

/// How the matrix element is stored.
enum class MatrixLayout {
    Csr,    ///< group: indptr (cells + 1), indices (gene per entry), data
    Csc,    ///< group: indptr (genes + 1), indices (cell per entry), data
    Dense,  ///< 2-D dataset, cells x genes
    Absent  ///< no X (anndata X = None): every row is empty
};

/// "csr", "csc", "dense" or "none".
const char* layout_name(MatrixLayout layout) noexcept;

/// Everything known about a validated matrix element; shared (read-only) by a
/// source and its clones.
struct MatrixInfo {
    std::string path;        ///< file, for messages and to reopen in clones
    std::string object;      ///< "/X", "/raw/X", "/raw.X", "/layers/<name>"
    MatrixLayout layout = MatrixLayout::Absent;
    MatrixShape shape;       ///< cells x genes
    std::int64_t nnz = 0;    ///< stored entries (dense: non-zero values)
    ValueType stored_type = ValueType::Float32;
    /// Sparse: indptr as int64 (CSR: cells + 1 row offsets; CSC: genes + 1 column
    /// offsets). Dense: row offsets of the non-zeros (cells + 1). Empty for Absent.
    std::shared_ptr<const std::vector<std::int64_t>> offsets;
    bool integer_counts_known = false;  ///< dense only: the open-time scan decided it
    bool integer_counts = false;        ///< every value a non-negative integer (when known)

    std::string indptr() const { return object + "/indptr"; }
    std::string indices() const { return object + "/indices"; }
    std::string data() const { return object + "/data"; }
};

/// Shape expected from the annotations: obs and var lengths when those are present.
struct ExpectedShape {
    std::optional<std::int64_t> num_cells;  ///< length of obs (or nullopt when obs is absent)
    std::optional<std::int64_t> num_genes;  ///< length of var / raw/var
    std::string cells_source = "/obs";      ///< named in mismatch messages
    std::string genes_source = "/var";
};

/// Inspects and validates the matrix at `object` (see the file comment). When
/// `object` is absent and `allow_absent`, returns an Absent matrix sized by
/// `expected` (both lengths needed). Throws FormatError.
MatrixInfo inspect_matrix(const h5::File& file, const std::string& object, const ExpectedShape& expected,
                          bool allow_absent);

/// The row source for a validated matrix (opens its own file handle).
std::unique_ptr<RowSource> make_row_source(std::shared_ptr<const MatrixInfo> info);

/// CSR: a row range is three hyperslab reads (indptr is cached at open).
class CsrRowSource final : public RowSource {
public:
    explicit CsrRowSource(std::shared_ptr<const MatrixInfo> info);
    MatrixShape shape() const override { return m_info->shape; }
    std::int64_t nnz() const override { return m_info->nnz; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    std::vector<std::int64_t> row_offsets() override { return *m_info->offsets; }
    std::unique_ptr<RowSource> clone() const override { return std::make_unique<CsrRowSource>(m_info); }
    void set_read_once(bool on) override { m_file.set_read_once(on); }

private:
    std::shared_ptr<const MatrixInfo> m_info;
    h5::File m_file;
};

/// CSC: converts to CSR for the asked rows in bounded memory. Two streaming passes
/// over indices in blocks of `block_elements` (count per row, then fill); data blocks
/// holding no wanted entry are not read. Columns are visited in order, so each row
/// comes out sorted; a cell repeated within a column is a duplicate and rejected.
class CscRowSource final : public RowSource {
public:
    explicit CscRowSource(std::shared_ptr<const MatrixInfo> info, std::int64_t block_elements = 1 << 20);
    MatrixShape shape() const override { return m_info->shape; }
    std::int64_t nnz() const override { return m_info->nnz; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    /// One pass over indices (cached afterwards).
    std::vector<std::int64_t> row_offsets() override;
    std::unique_ptr<RowSource> clone() const override {
        return std::make_unique<CscRowSource>(m_info, m_block_elements);
    }

private:
    std::shared_ptr<const MatrixInfo> m_info;
    h5::File m_file;
    std::int64_t m_block_elements;
    std::vector<std::int64_t> m_row_offsets;  ///< cache of row_offsets()
};

/// Dense: reads row slabs (at most about `block_elements` values each) and drops zeros.
class DenseRowSource final : public RowSource {
public:
    explicit DenseRowSource(std::shared_ptr<const MatrixInfo> info, std::int64_t block_elements = 1 << 22);
    MatrixShape shape() const override { return m_info->shape; }
    std::int64_t nnz() const override { return m_info->nnz; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    std::vector<std::int64_t> row_offsets() override { return *m_info->offsets; }
    std::unique_ptr<RowSource> clone() const override {
        return std::make_unique<DenseRowSource>(m_info, m_block_elements);
    }

private:
    std::shared_ptr<const MatrixInfo> m_info;
    h5::File m_file;
    std::int64_t m_block_elements;
};

/// No stored matrix (anndata X = None): rows of the right shape with no entries.
class AbsentRowSource final : public RowSource {
public:
    explicit AbsentRowSource(MatrixShape shape) : m_shape(shape) {}
    MatrixShape shape() const override { return m_shape; }
    std::int64_t nnz() const override { return 0; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    std::vector<std::int64_t> row_offsets() override {
        return std::vector<std::int64_t>(static_cast<std::size_t>(m_shape.num_cells + 1), 0);
    }
    std::unique_ptr<RowSource> clone() const override { return std::make_unique<AbsentRowSource>(m_shape); }

private:
    MatrixShape m_shape;
};

}  // namespace fathom::io::h5ad
