#include "core/engine/qc_thresholds.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fathom {

bool has_qc_thresholds(const PipelineSettings& settings) noexcept {
    return settings.min_counts_per_cell > 0.0 || settings.max_counts_per_cell > 0.0 || settings.min_genes_per_cell > 0 ||
           settings.max_genes_per_cell > 0 || settings.max_pct_counts_mt < 100.0;
}

std::vector<std::uint8_t> cells_passing_qc(std::span<const double> total_counts, std::span<const std::int64_t> n_genes,
                                           std::span<const double> pct_counts_mt, const PipelineSettings& settings,
                                           QcThresholdCounts* counts) {
    if (n_genes.size() != total_counts.size() || pct_counts_mt.size() != total_counts.size())
        throw std::invalid_argument("cells_passing_qc: " + std::to_string(total_counts.size()) + " total counts, " +
                                    std::to_string(n_genes.size()) + " gene counts and " +
                                    std::to_string(pct_counts_mt.size()) + " mitochondrial percentages");
    QcThresholdCounts tally;
    std::vector<std::uint8_t> keep(total_counts.size(), 1);
    for (std::size_t cell = 0; cell < keep.size(); ++cell) {
        const bool low_counts = total_counts[cell] < settings.min_counts_per_cell;
        const bool high_counts = settings.max_counts_per_cell > 0.0 && total_counts[cell] > settings.max_counts_per_cell;
        const bool low_genes = n_genes[cell] < settings.min_genes_per_cell;
        const bool high_genes = settings.max_genes_per_cell > 0 && n_genes[cell] > settings.max_genes_per_cell;
        const bool high_mt = settings.max_pct_counts_mt < 100.0 &&
                             (std::isnan(pct_counts_mt[cell]) || pct_counts_mt[cell] > settings.max_pct_counts_mt);
        tally.below_min_counts += low_counts;
        tally.above_max_counts += high_counts;
        tally.below_min_genes += low_genes;
        tally.above_max_genes += high_genes;
        tally.above_max_pct_mt += high_mt;
        keep[cell] = !(low_counts || high_counts || low_genes || high_genes || high_mt);
        tally.kept += keep[cell];
    }
    if (counts) *counts = tally;
    return keep;
}

}  // namespace fathom
