#pragma once
/// Per-cell scores of a gene set on the LogNorm values (ln(1 + x * target_sum / cell
/// total), as gene_filter.hpp): the plain mean of the set's values, or scanpy's
/// tl.score_genes (the mean of the set minus the mean of a random control set drawn
/// from genes of similar average expression).
#include <cstdint>
#include <span>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/gene_set_options.hpp"

namespace fathom {

/// Throws std::invalid_argument naming the field.
void validate(const GeneSetScoreOptions& options);

/// Scores of every cell.
struct GeneSetScoreResult {
    std::vector<double> scores;               ///< num_cells, in row order
    std::vector<std::int32_t> genes;          ///< the distinct set genes scored, in the order given
    std::vector<std::int32_t> control_genes;  ///< subtract_control: the control genes, increasing; else empty
};

/// Scores the cells of `counts` (raw counts) for the gene set `genes` (column indices;
/// repeats are scored once, as scanpy takes set(gene_list)). cell_totals has one
/// total per cell (QcResult::total_counts). Throws std::invalid_argument for an
/// empty set or a gene outside [0, num_genes).
///
/// score_genes follows scanpy 1.9.6 step by step: gene means of the LogNorm values
/// over all genes (computed as ShardSet::column_stats does, float32 scale then
/// log1p), n_items = round(num_genes / (n_bins - 1)) (at least 1), bin = rank('min')
/// // n_items; for each bin holding a set gene in increasing order, the bin's genes in
/// var order are shuffled by numpy's legacy RandomState.shuffle (MT19937,
/// seeded with random_state) and the first ctrl_size are taken; the set genes are
/// removed from the control set. The means are taken in double; the control genes
/// equal scanpy's when the gene means rank the same (near-ties may differ by rounding).
GeneSetScoreResult score_gene_set(const ShardSet& counts, std::span<const std::int32_t> genes,
                                  std::span<const double> cell_totals, const GeneSetScoreOptions& options,
                                  JobContext& ctx);

}  // namespace fathom
