#pragma once
/// Cell and gene filters, as scanpy's pp.filter_cells / pp.filter_genes. Computing a
/// filter returns a mask; applying it subsets the shards.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"

namespace fathom {

/// Thresholds for filter_cells. Unlike scanpy (which takes one threshold per call),
/// several may be set: a cell must pass all of them. At least one must be set.
struct FilterCellsOptions {
    std::optional<double> min_counts;        ///< keep cells with total counts >= min_counts
    std::optional<double> max_counts;        ///< keep cells with total counts <= max_counts
    std::optional<std::int64_t> min_genes;   ///< keep cells with >= min_genes expressed genes
    std::optional<std::int64_t> max_genes;   ///< keep cells with <= max_genes expressed genes
};

/// Thresholds for filter_genes; at least one must be set, all must pass.
struct FilterGenesOptions {
    std::optional<double> min_counts;        ///< keep genes with total counts >= min_counts
    std::optional<double> max_counts;        ///< keep genes with total counts <= max_counts
    std::optional<std::int64_t> min_cells;   ///< keep genes expressed in >= min_cells cells
    std::optional<std::int64_t> max_cells;   ///< keep genes expressed in <= max_cells cells
};

/// A computed filter: which rows (cells) or columns (genes) to keep, with the
/// statistics it used (scanpy stores them as obs['n_counts'] / obs['n_genes'] or
/// var['n_counts'] / var['n_cells']).
struct FilterResult {
    std::vector<std::uint8_t> keep;          ///< one flag per cell (or gene), 1 = keep
    std::int64_t num_kept = 0;
    std::int64_t num_removed = 0;
    std::vector<double> counts;              ///< total counts per cell (or gene), before filtering
    std::vector<std::int64_t> num_expressed; ///< expressed genes per cell (or cells per gene)
};

/// Throws std::invalid_argument naming the field (negative thresholds, min > max,
/// nothing set).
void validate(const FilterCellsOptions& options);
void validate(const FilterGenesOptions& options);

/// Computes the cell mask (shards unchanged).
FilterResult filter_cells(const ShardSet& shards, const FilterCellsOptions& options, JobContext& ctx);
/// Computes the gene mask (shards unchanged).
FilterResult filter_genes(const ShardSet& shards, const FilterGenesOptions& options, JobContext& ctx);
/// The same gene mask from per-gene statistics already taken on the matrix (the QC
/// step's var['total_counts'] and var['n_cells_by_counts'], which are the column sums
/// and non-zero counts filter_genes would compute), without a pass over the shards.
/// Throws std::invalid_argument when the two vectors differ in size.
FilterResult filter_genes(std::vector<double> gene_totals, std::vector<std::int64_t> cells_per_gene,
                          const FilterGenesOptions& options);
/// Keeps the cells with filter.keep = 1 (shards renumbered).
void apply_cell_filter(ShardSet& shards, const FilterResult& filter, JobContext& ctx);
/// Keeps the genes with filter.keep = 1 (columns renumbered in order).
void apply_gene_filter(ShardSet& shards, const FilterResult& filter, JobContext& ctx);

}  // namespace fathom
