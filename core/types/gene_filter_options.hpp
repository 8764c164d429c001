#pragma once
/// Options of the marker-gene filter expressions on shards (core/algo/gene_filter.hpp).
namespace fathom {

/// Which values the comparisons see.
enum class FilterLayer {
    Counts,   ///< X as stored
    LogNorm,  ///< ln(1 + x * target_sum / cell total); 0 for a cell with total 0
};

/// Options of evaluate_filter on shards.
struct GeneFilterOptions {
    FilterLayer layer = FilterLayer::LogNorm;
    /// LogNorm: counts per cell after scaling (scanpy normalize_total(target_sum=1e4)
    /// followed by log1p, computed per value without changing the matrix).
    double target_sum = 1e4;
    /// Equal when every field is equal.
    friend bool operator==(const GeneFilterOptions&, const GeneFilterOptions&) = default;
};

}  // namespace fathom
