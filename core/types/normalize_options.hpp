#pragma once
/// Options of the library-size normalisations (core/algo/normalize.hpp).
#include <optional>

namespace fathom {

/// Options of normalize_total (scanpy 1.9 defaults; exclude_highly_expressed is not
/// supported).
struct NormalizeTotalOptions {
    /// Total each cell is scaled to; unset = the median of the totals of cells with a
    /// non-zero total (scanpy: np.median(counts[counts > 0])). > 0 when set.
    std::optional<double> target_sum;
    /// scanpy held X as an integer array (an h5ad with int32/int64 X; scanpy's 10x and
    /// Matrix Market readers give float32). scanpy then sums into int64 and takes the
    /// median and the factors in float64; for float32 X everything is float32.
    bool integer_dtype = false;
    /// Equal when every field is equal.
    friend bool operator==(const NormalizeTotalOptions&, const NormalizeTotalOptions&) = default;
};

/// Options of normalize_per_cell (scanpy 1.9 pp.normalize_per_cell).
struct NormalizePerCellOptions {
    /// Target total; unset = the median of the totals of the cells kept.
    std::optional<double> counts_per_cell_after;
    /// Cells with a total below this are removed first (scanpy's default min_counts=1).
    double min_counts = 1.0;
    /// As NormalizeTotalOptions::integer_dtype.
    bool integer_dtype = false;
    /// Equal when every field is equal.
    friend bool operator==(const NormalizePerCellOptions&, const NormalizePerCellOptions&) = default;
};

}  // namespace fathom
