#pragma once
/// Library-size normalisation and log1p, as scanpy's pp.normalize_total (used by
/// recipe_zheng17 and recipe_seurat in scanpy 1.9), pp.normalize_per_cell (deprecated)
/// and pp.log1p. Arithmetic follows scanpy bit for bit where it can: the per-cell
/// factor is 1 / (counts / target), computed in the precision scanpy uses for the
/// matrix's dtype (see integer_dtype), and each value becomes float32(value * factor).
#include <cstdint>
#include <span>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/normalize_options.hpp"

namespace fathom {

/// What normalize_total did.
struct NormalizeTotalResult {
    std::vector<double> counts_per_cell;   ///< totals before normalising (num_cells)
    double target_sum = 0.0;               ///< the target used
    std::vector<double> factors;           ///< per cell: the factor its values were multiplied by
};

/// What normalize_per_cell did.
struct NormalizePerCellResult {
    std::vector<double> counts_per_cell;   ///< totals of EVERY input cell, before filtering
    std::vector<std::uint8_t> cell_kept;   ///< per input cell: 1 = kept (total >= min_counts)
    std::int64_t num_removed = 0;          ///< cells removed
    double counts_per_cell_after = 0.0;    ///< the target used
};

/// Throws std::invalid_argument naming the field.
void validate(const NormalizeTotalOptions& options);
void validate(const NormalizePerCellOptions& options);

/// Scales every cell to the target total in place. Cells with total 0 stay 0.
NormalizeTotalResult normalize_total(ShardSet& shards, const NormalizeTotalOptions& options, JobContext& ctx);
/// normalize_total's target and per-cell factors for cells with these totals, without
/// scaling a matrix: Backend::scale_rows(factors) (or ColumnStatsRequest::row_scale)
/// then gives exactly the values normalize_total would.
NormalizeTotalResult normalize_total_factors(std::vector<double> counts_per_cell, const NormalizeTotalOptions& options);
/// Removes cells below min_counts, then scales the others to the target in place.
NormalizePerCellResult normalize_per_cell(ShardSet& shards, const NormalizePerCellOptions& options,
                                          JobContext& ctx);
/// values = log1p(values) in place (natural log; scanpy pp.log1p with base=None).
void log1p(ShardSet& shards, JobContext& ctx);

/// NumPy's float32 sum of `values` as ufunc.reduce / reduceat computes it: the first value
/// plus the pairwise sum (blocks of 8 partial sums up to 128 values, halves above) of the
/// rest, every addition rounded to float32. 0 for no values.
float numpy_float32_sum(std::span<const float> values);
/// X.sum(1) of a float32 CSR matrix as scipy computes it (np.add.reduceat over each
/// row's stored values, i.e. numpy_float32_sum), over the genes with gene_mask = 1
/// (empty = every gene), one per cell in global row order. Non-integer values make
/// these totals differ from double-precision sums; scanpy's normalize_total divides by
/// them when X is float32.
std::vector<double> numpy_float32_row_sums(const ShardSet& shards, std::span<const std::uint8_t> gene_mask,
                                           JobContext& ctx);

/// The median as NumPy computes it on a float32 array (the mean of the two middle
/// values for an even count, in float32). Empty input gives NaN.
float median_float32(std::vector<float> values);
/// The median as NumPy computes it on a float64 (or integer) array. Empty gives NaN.
double median_float64(std::vector<double> values);

}  // namespace fathom
