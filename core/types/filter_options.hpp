#pragma once
/// Options of the cell and gene filters (core/algo/filter.hpp).
#include <cstdint>
#include <optional>

namespace fathom {

/// Thresholds for filter_cells. Unlike scanpy (which takes one threshold per call),
/// several may be set: a cell must pass all of them. At least one must be set.
struct FilterCellsOptions {
    std::optional<double> min_counts;        ///< keep cells with total counts >= min_counts
    std::optional<double> max_counts;        ///< keep cells with total counts <= max_counts
    std::optional<std::int64_t> min_genes;   ///< keep cells with >= min_genes expressed genes
    std::optional<std::int64_t> max_genes;   ///< keep cells with <= max_genes expressed genes
    /// Equal when every field is equal.
    friend bool operator==(const FilterCellsOptions&, const FilterCellsOptions&) = default;
};

/// Thresholds for filter_genes; at least one must be set, all must pass.
struct FilterGenesOptions {
    std::optional<double> min_counts;        ///< keep genes with total counts >= min_counts
    std::optional<double> max_counts;        ///< keep genes with total counts <= max_counts
    std::optional<std::int64_t> min_cells;   ///< keep genes expressed in >= min_cells cells
    std::optional<std::int64_t> max_cells;   ///< keep genes expressed in <= max_cells cells
    /// Equal when every field is equal.
    friend bool operator==(const FilterGenesOptions&, const FilterGenesOptions&) = default;
};

}  // namespace fathom
