#include "core/algo/normalize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fathom {

float median_float32(std::vector<float> values) {
    if (values.empty()) return std::numeric_limits<float>::quiet_NaN();
    const std::size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
    const float upper = values[middle];
    if (values.size() % 2 == 1) return upper;
    const float lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    // np.median on float32: np.mean of the two middle values, summed and divided in float32.
    return (lower + upper) / 2.0f;
}

void validate(const NormalizeTotalOptions& options) {
    if (options.target_sum && !(*options.target_sum > 0.0 && std::isfinite(*options.target_sum)))
        throw std::invalid_argument("NormalizeTotalOptions::target_sum must be a finite number > 0");
}

void validate(const NormalizePerCellOptions& options) {
    if (options.counts_per_cell_after &&
        !(*options.counts_per_cell_after > 0.0 && std::isfinite(*options.counts_per_cell_after)))
        throw std::invalid_argument("NormalizePerCellOptions::counts_per_cell_after must be a finite number > 0");
    if (!(options.min_counts >= 0.0) || !std::isfinite(options.min_counts))
        throw std::invalid_argument("NormalizePerCellOptions::min_counts must be a finite number >= 0");
}

namespace {

/// scanpy's per-cell factor on float32 counts: counts += counts == 0;
/// counts = counts / after; factor = 1 / counts (all float32, as NumPy computes).
std::vector<float> scale_factors(const std::vector<float>& counts, float after) {
    std::vector<float> factors(counts.size());
    for (std::size_t cell = 0; cell < counts.size(); ++cell) {
        float count = counts[cell];
        if (count == 0.0f) count += 1.0f;
        count = count / after;
        factors[cell] = 1.0f / count;
    }
    return factors;
}

/// Totals as scanpy sees them: X.sum(axis=1) of a float32 matrix gives float32.
std::vector<float> float32_totals(const std::vector<double>& totals) {
    std::vector<float> out(totals.size());
    for (std::size_t cell = 0; cell < totals.size(); ++cell) out[cell] = static_cast<float>(totals[cell]);
    return out;
}

}  // namespace

NormalizeTotalResult normalize_total(ShardSet& shards, const NormalizeTotalOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("normalize_total");
    const RowStats stats = shards.row_stats({}, ctx);
    const std::vector<float> counts = float32_totals(stats.total);
    float after = 0.0f;
    if (options.target_sum) {
        after = static_cast<float>(*options.target_sum);
    } else {
        // scanpy 1.9 _normalize_data: after = np.median(counts[counts > 0]).
        std::vector<float> positive;
        for (float count : counts)
            if (count > 0.0f) positive.push_back(count);
        after = positive.empty() ? 1.0f : median_float32(std::move(positive));
    }
    ctx.report(0.5);
    shards.scale_rows(scale_factors(counts, after), ctx);
    ctx.report(1.0);
    NormalizeTotalResult result;
    result.counts_per_cell = stats.total;
    result.target_sum = after;
    return result;
}

NormalizePerCellResult normalize_per_cell(ShardSet& shards, const NormalizePerCellOptions& options, JobContext& ctx) {
    validate(options);
    ctx.begin_stage("normalize_per_cell");
    const RowStats stats = shards.row_stats({}, ctx);
    const std::vector<float> counts = float32_totals(stats.total);
    NormalizePerCellResult result;
    result.counts_per_cell = stats.total;
    result.cell_kept.assign(counts.size(), 0);
    // scanpy 1.9 filter_cells(X, min_counts): cell_subset = counts >= min_counts.
    std::vector<float> kept_counts;
    for (std::size_t cell = 0; cell < counts.size(); ++cell) {
        if (static_cast<double>(counts[cell]) >= options.min_counts) {
            result.cell_kept[cell] = 1;
            kept_counts.push_back(counts[cell]);
        }
    }
    result.num_removed = static_cast<std::int64_t>(counts.size() - kept_counts.size());
    if (result.num_removed > 0) shards.subset_rows(result.cell_kept, ctx);
    ctx.report(0.4);
    // counts_per_cell_after = np.median(counts_per_cell) over the kept cells.
    const float after = options.counts_per_cell_after ? static_cast<float>(*options.counts_per_cell_after)
                        : kept_counts.empty()         ? 1.0f
                                                      : median_float32(kept_counts);
    result.counts_per_cell_after = after;
    shards.scale_rows(scale_factors(kept_counts, after), ctx);
    ctx.report(1.0);
    return result;
}

void log1p(ShardSet& shards, JobContext& ctx) {
    ctx.begin_stage("log1p");
    shards.log1p(ctx);
    ctx.report(1.0);
}

}  // namespace fathom
