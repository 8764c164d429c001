#pragma once
/// Cell and gene filters, as scanpy's pp.filter_cells / pp.filter_genes. Computing a
/// filter returns a mask; applying it subsets the shards.
#include <cstdint>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/filter_options.hpp"

namespace fathom {

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
