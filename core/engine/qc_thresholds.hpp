#pragma once
/// The pipeline's QC cell filters (PipelineSettings: min / max counts, min / max genes,
/// max percent mitochondrial counts) on a dataset's QC metrics, as one pure function that
/// the preprocessing step and the GUI's QC view both call, so the cells the view says a
/// threshold removes are the cells the run removes.
#include <cstdint>
#include <span>
#include <vector>

#include "core/engine/PipelineSettings.hpp"

namespace fathom {

/// Cells each threshold removes (a cell failing several counts under each), and the
/// cells that pass every one.
struct QcThresholdCounts {
    std::int64_t below_min_counts = 0;   ///< total_counts < min_counts
    std::int64_t above_max_counts = 0;   ///< total_counts > max_counts (when > 0)
    std::int64_t below_min_genes = 0;    ///< n_genes_by_counts < min_genes
    std::int64_t above_max_genes = 0;    ///< n_genes_by_counts > max_genes (when > 0)
    std::int64_t above_max_pct_mt = 0;   ///< pct_counts_mt > max_pct_counts_mt (when < 100)
    std::int64_t kept = 0;               ///< cells passing every threshold
};

/// Whether any QC threshold of `settings` removes cells at all (min_counts > 0,
/// max_counts > 0, min_genes > 0, max_genes > 0 or max_pct_counts_mt < 100).
bool has_qc_thresholds(const PipelineSettings& settings) noexcept;

/// One flag per cell, 1 = the cell passes every threshold. The three spans hold one
/// entry per cell (std::invalid_argument otherwise). A NaN pct_counts_mt (a cell without
/// counts) fails only a max_pct_counts_mt below 100; scanpy's filter_cells keeps cells at
/// exactly a threshold (>= min, <= max). `counts` (optional) receives the tallies.
std::vector<std::uint8_t> cells_passing_qc(std::span<const double> total_counts, std::span<const std::int64_t> n_genes,
                                           std::span<const double> pct_counts_mt, const PipelineSettings& settings,
                                           QcThresholdCounts* counts = nullptr);

}  // namespace fathom
