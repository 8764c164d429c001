#pragma once
/// The per-device shard backend: one object owns ONE row shard of the cells x genes
/// matrix, resident on its device, and computes small partial results on it. Steps in
/// core/algo are written once against this interface (through ShardSet, which reduces
/// the partials of every shard in a fixed order).
///
/// Conventions shared by every primitive:
/// - Rows are the shard's own rows, numbered 0 .. num_rows()-1 ("local"); every
///   per-row input span has num_rows() entries (or is empty where that means "none").
/// - Per-gene inputs have num_genes() entries, or one entry per block gene where a
///   primitive works on a gene block (Gram, projection).
/// - Values are float32 in storage; element transforms run in float32 exactly as NumPy
///   does on float32 arrays (so results match scanpy's rounding); every accumulator
///   is double.
/// - A primitive never changes the shard unless its name says so (scale_rows, log1p,
///   subset_*), and results never depend on the number of threads used.
/// - Long primitives call ctx.checkpoint() about every 50 ms of work (they throw
///   Cancelled, leaving the shard unchanged for read-only primitives; an in-place
///   primitive that was cancelled leaves the shard in an unspecified but valid state).
/// - An in-place primitive that throws DeviceOutOfMemory leaves the shard unchanged
///   (device backends allocate before they modify), so ShardSet can move that shard to
///   host memory and run the step there.
/// - One call at a time per backend object; calls may come from any thread.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom {

/// Which implementation a backend is.
enum class BackendKind { Cpu, Cuda };

/// Element-wise transform applied to each stored value before a statistic is taken.
enum class ElementTransform {
    None,   ///< the value itself
    Log1p,  ///< log(1 + v) (natural log, as scanpy's pp.log1p)
    Expm1,  ///< exp(v) - 1 (undoes log1p; scanpy's seurat flavour of highly_variable_genes)
};

/// What to compute column statistics (or per-group statistics) of. Each stored value
/// v of local row r and gene g becomes
///   s = float32(double(v) * row_scale[r])      (one rounding to float32, as scipy's
///                                               inplace_row_scale on float32 data)
///   t = transform(s)                           (float32 arithmetic, as NumPy)
///   t = min(t, column_max[g])                  (double, when column_max is given)
/// Implicit zeros stay zeros (every transform here maps 0 to 0, and clipping only
/// lowers values), so statistics are taken over stored entries and count the others
/// as zeros.
struct ColumnStatsRequest {
    std::span<const double> row_scale;      ///< empty = 1 for every row; else num_rows() factors
    ElementTransform transform = ElementTransform::None;
    std::span<const double> column_max;     ///< empty = no clipping; else num_genes() upper bounds
    std::span<const std::uint8_t> row_mask; ///< empty = every row; else num_rows() flags, 1 = include
};

/// Per-gene sums over the included rows. Adding two ColumnStats of disjoint row sets
/// gives the statistics of their union (that is how ShardSet reduces).
struct ColumnStats {
    std::int64_t num_rows = 0;            ///< rows included (after row_mask)
    std::vector<double> sum;              ///< per gene: sum of t
    std::vector<double> sum_squares;      ///< per gene: sum of t * t
    std::vector<std::int64_t> nnz;        ///< per gene: number of entries with t != 0
};

/// Per-row statistics of the stored values (no transform).
struct RowStats {
    std::vector<double> total;            ///< per row: sum of values (scanpy total_counts)
    std::vector<std::int64_t> nnz;        ///< per row: entries with value != 0 (n_genes_by_counts)
    std::vector<double> subset_total;     ///< per row: sum over genes in the subset mask; empty if no mask
};

/// Per-group column statistics (markers): group k's row of each matrix holds the
/// ColumnStats of the rows labelled k. num_groups x num_genes.
struct GroupColumnStats {
    std::vector<std::int64_t> group_sizes;   ///< rows per group
    DenseMatrix<double> sum;                 ///< groups x genes: sum of t
    DenseMatrix<double> sum_squares;         ///< groups x genes: sum of t * t
    DenseMatrix<std::int64_t> nnz;           ///< groups x genes: entries with t != 0
};

/// How a gene block is standardised, as scanpy's pp.scale(zero_center=True):
///   z = (v - mean[j]) * inv_std[j], then z = min(z, max_value), z = max(z, min_value)
/// where j is the block column of the gene. Implicit zeros become -mean[j] * inv_std[j].
struct Standardization {
    std::span<const double> mean;        ///< one per block gene
    std::span<const double> inv_std;     ///< one per block gene (1 / std; scanpy sets std 0 -> 1)
    std::optional<double> max_value;     ///< upper clip (scanpy 1.9 pp.scale max_value clips above only)
    std::optional<double> min_value;     ///< lower clip (scanpy >= 1.10 also clips at -max_value)
    bool clipped() const noexcept { return max_value.has_value() || min_value.has_value(); }
};

/// A gene block: the sorted, unique gene (column) indices that form the block's
/// columns in order. Empty = every gene of the shard, in order.
using GeneBlock = std::span<const std::int32_t>;

/// Gram matrix of the standardised block Z (rows x block genes) of one shard.
/// Adding the results of disjoint row sets gives the union's; the covariance of the
/// whole matrix is (sum gram - colsum colsum^T / N) / (N - 1).
struct GramResult {
    std::int64_t num_rows = 0;            ///< rows contributing
    DenseMatrix<double> gram;             ///< block genes x block genes: Z^T Z (symmetric)
    std::vector<double> column_sums;      ///< per block gene: sum of Z over the rows
};

/// Projection of the standardised block onto loadings:
///   scores = (Z - 1 center^T) * loadings
struct ProjectionRequest {
    GeneBlock genes;                      ///< the block (empty = every gene)
    Standardization standardization;      ///< how Z is formed
    std::span<const double> center;       ///< one per block gene, in Z units; empty = 0
    const DenseMatrix<double>* loadings = nullptr;  ///< block genes x components; required
};

/// One row shard on one device. See the file comment for the conventions.
class Backend {
public:
    virtual ~Backend() = default;
    Backend() = default;
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    // ---- identity and shape ----
    /// "cpu:0", "cuda:1": kind and index of the shard/device.
    virtual std::string name() const = 0;
    virtual BackendKind kind() const noexcept = 0;
    /// Global index of the shard's first row in the current (possibly filtered) matrix.
    virtual std::int64_t row_begin() const noexcept = 0;
    virtual std::int64_t num_rows() const noexcept = 0;
    virtual std::int64_t num_genes() const noexcept = 0;
    virtual std::int64_t nnz() const noexcept = 0;
    /// A deep copy on the same device (the engine keeps raw counts while steps mutate).
    virtual std::unique_ptr<Backend> clone() const = 0;
    /// A deep copy on the same device holding only the genes with keep[g] = 1
    /// (num_genes() flags), renumbered in order: clone() then subset_columns(), without
    /// copying the columns that are dropped. This default does exactly that sequence.
    virtual std::unique_ptr<Backend> clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const {
        auto copy = clone();
        copy->subset_columns(keep, ctx);
        return copy;
    }
    /// A host copy of the shard (for writing outputs and for tests). Not for computing.
    virtual CsrShard to_host() const = 0;
    /// True when every stored value is a non-negative integer (raw counts; NaN is not).
    /// This default checks a host copy; backends override it to check in place.
    virtual bool values_are_counts(JobContext& ctx) const {
        ctx.checkpoint();
        const CsrShard host = to_host();
        for (const float value : host.values)
            if (!(value >= 0.0f) || value != std::floor(value)) return false;
        return true;
    }

    // ---- read-only statistics ----
    /// Per-row totals and non-zero counts; subset_total over genes with gene_mask[g] = 1
    /// (e.g. mitochondrial genes) when gene_mask is not empty (num_genes() flags).
    virtual RowStats row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const = 0;
    /// Per-gene sum, sum of squares and non-zeros of the transformed values.
    virtual ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const = 0;
    /// Per-group column statistics: labels has num_rows() entries in [0, num_groups) or
    /// -1 (row left out). request.row_mask is ignored (use label -1).
    virtual GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                                const ColumnStatsRequest& request, JobContext& ctx) const = 0;
    /// Values of one gene for every row (zeros where not stored); num_rows() entries.
    virtual std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const = 0;
    /// Values of several genes for every row: one column of num_rows() entries per entry
    /// of `genes` (any order, repeats allowed), zeros where not stored. Throws
    /// std::invalid_argument for a gene outside [0, num_genes()). This default calls
    /// gene_column once per gene; CpuBackend overrides it with one pass over the rows.
    virtual std::vector<std::vector<float>> gene_columns(std::span<const std::int32_t> genes, JobContext& ctx) const {
        std::vector<std::vector<float>> columns;
        columns.reserve(genes.size());
        for (const std::int32_t gene : genes) columns.push_back(gene_column(gene, ctx));
        return columns;
    }

    // ---- dense products on the standardised block ----
    /// Z^T Z and column sums of Z for the standardised block. Unclipped, computed from
    /// the sparse X^T X plus column sums without forming Z; clipped, Z is formed tile by
    /// tile (a bounded number of rows at a time) on the device.
    virtual GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const = 0;
    /// (Z - 1 center^T) * loadings for the shard's rows: num_rows() x components, double.
    /// Unclipped it is a sparse x dense product minus a per-component constant.
    virtual DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const = 0;

    // ---- in-place transforms ----
    /// values of row r become float32(double(value) * factors[r]): one rounding of the
    /// exact product, as scipy's inplace_row_scale on a float32 matrix (for a factor that
    /// is itself a float32 this equals the float32 multiply). num_rows() factors.
    virtual void scale_rows(std::span<const double> factors, JobContext& ctx) = 0;
    /// values = log1p(values) in float32.
    virtual void log1p(JobContext& ctx) = 0;
    /// Keeps the genes with keep[g] = 1 (num_genes() flags), renumbering them in order.
    virtual void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) = 0;
    /// Keeps the rows with keep[r] = 1 (num_rows() flags); the shard's first row becomes
    /// new_row_begin (the number of kept rows in earlier shards).
    virtual void subset_rows(std::span<const std::uint8_t> keep, std::int64_t new_row_begin, JobContext& ctx) = 0;
};

}  // namespace fathom
