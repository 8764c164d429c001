#include "core/algo/gene_set.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "core/algo/gene_filter.hpp"

namespace fathom {

namespace {

/// Genes fetched per gene_columns call when summing a large set (bounds the memory of
/// the dense columns to kBatch * num_cells floats).
constexpr std::size_t kBatch = 32;

/// numpy's random_interval (legacy RandomState): a uniform integer in [0, max] by
/// masked rejection on 32-bit MT19937 outputs (max < 2^32 here).
std::uint64_t random_interval(std::mt19937& generator, std::uint64_t max) {
    if (max == 0) return 0;
    std::uint64_t mask = max;
    for (int shift = 1; shift <= 32; shift <<= 1) mask |= mask >> shift;
    std::uint64_t value = 0;
    while ((value = (static_cast<std::uint64_t>(generator()) & mask)) > max) {
    }
    return value;
}

/// numpy's RandomState.shuffle of a 1-d array (Fisher-Yates from the end).
template <typename T>
void numpy_shuffle(std::vector<T>& items, std::mt19937& generator) {
    for (std::size_t index = items.size(); index-- > 1;) {
        const auto other = static_cast<std::size_t>(random_interval(generator, index));
        std::swap(items[index], items[other]);
    }
}

/// Adds the LogNorm values of `genes` to sums (one per cell), kBatch genes at a time.
void add_lognorm(const ShardSet& counts, const std::vector<std::int32_t>& genes, std::span<const double> cell_totals,
                 double target_sum, std::vector<double>& sums, JobContext& ctx) {
    GeneFilterOptions options;
    options.layer = FilterLayer::LogNorm;
    options.target_sum = target_sum;
    for (std::size_t begin = 0; begin < genes.size(); begin += kBatch) {
        ctx.checkpoint();
        const std::size_t end = std::min(genes.size(), begin + kBatch);
        const std::span<const std::int32_t> batch(genes.data() + begin, end - begin);
        const auto columns = filter_gene_values(counts, batch, cell_totals, options, ctx);
        for (const auto& column : columns)
            for (std::size_t cell = 0; cell < column.size(); ++cell) sums[cell] += column[cell];
    }
}

}  // namespace

void validate(const GeneSetScoreOptions& options) {
    if (!(options.target_sum > 0.0) || !std::isfinite(options.target_sum))
        throw std::invalid_argument("GeneSetScoreOptions::target_sum must be > 0 and finite");
    if (options.ctrl_size < 1) throw std::invalid_argument("GeneSetScoreOptions::ctrl_size must be >= 1");
    if (options.n_bins < 2) throw std::invalid_argument("GeneSetScoreOptions::n_bins must be >= 2");
}

GeneSetScoreResult score_gene_set(const ShardSet& counts, std::span<const std::int32_t> genes,
                                  std::span<const double> cell_totals, const GeneSetScoreOptions& options,
                                  JobContext& ctx) {
    validate(options);
    const std::int64_t num_genes = counts.num_genes();
    const auto num_cells = static_cast<std::size_t>(counts.num_cells());
    if (genes.empty()) throw std::invalid_argument("score_gene_set: the gene set is empty");
    for (const std::int32_t gene : genes)
        if (gene < 0 || gene >= num_genes)
            throw std::invalid_argument("score_gene_set: gene " + std::to_string(gene) + " is outside [0, " +
                                        std::to_string(num_genes) + ")");
    if (cell_totals.size() != num_cells)
        throw std::invalid_argument("score_gene_set: " + std::to_string(cell_totals.size()) + " cell totals for " +
                                    std::to_string(num_cells) + " cells");

    GeneSetScoreResult result;
    for (const std::int32_t gene : genes)
        if (std::find(result.genes.begin(), result.genes.end(), gene) == result.genes.end()) result.genes.push_back(gene);

    std::vector<double> set_sum(num_cells, 0.0);
    add_lognorm(counts, result.genes, cell_totals, options.target_sum, set_sum, ctx);
    result.scores.resize(num_cells);
    const double set_size = static_cast<double>(result.genes.size());
    for (std::size_t cell = 0; cell < num_cells; ++cell) result.scores[cell] = set_sum[cell] / set_size;
    if (!options.subtract_control) return result;

    // scanpy 1.9.6 score_genes: obs_avg = mean of every gene (gene_pool = var_names).
    std::vector<double> row_scale(num_cells, 0.0);
    for (std::size_t cell = 0; cell < num_cells; ++cell)
        row_scale[cell] = cell_totals[cell] > 0.0 ? options.target_sum / cell_totals[cell] : 0.0;
    ColumnStatsRequest request;
    request.row_scale = row_scale;
    request.transform = ElementTransform::Log1p;
    const ColumnStats stats = counts.column_stats(request, ctx);
    const auto genes_total = static_cast<std::size_t>(num_genes);
    std::vector<double> means(genes_total, 0.0);
    for (std::size_t gene = 0; gene < genes_total; ++gene)
        means[gene] = num_cells > 0 ? stats.sum[gene] / static_cast<double>(num_cells) : 0.0;

    // n_items = int(np.round(len(obs_avg) / (n_bins - 1))): round half to even.
    const double ratio = static_cast<double>(genes_total) / static_cast<double>(options.n_bins - 1);
    const auto n_items = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::nearbyint(ratio)));
    // obs_cut = obs_avg.rank(method='min') // n_items; rank 'min' = 1 + number of
    // genes with a strictly smaller mean.
    std::vector<std::size_t> order(genes_total);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return means[a] < means[b]; });
    std::vector<std::int64_t> cut(genes_total, 0);
    for (std::size_t position = 0; position < genes_total;) {
        std::size_t tie_end = position;
        while (tie_end < genes_total && means[order[tie_end]] == means[order[position]]) ++tie_end;
        const auto rank = static_cast<std::int64_t>(position) + 1;
        for (std::size_t index = position; index < tie_end; ++index) cut[order[index]] = rank / n_items;
        position = tie_end;
    }

    std::vector<std::int64_t> set_cuts;
    for (const std::int32_t gene : result.genes) set_cuts.push_back(cut[static_cast<std::size_t>(gene)]);
    std::sort(set_cuts.begin(), set_cuts.end());
    set_cuts.erase(std::unique(set_cuts.begin(), set_cuts.end()), set_cuts.end());

    std::mt19937 generator(options.random_state);  // np.random.seed(random_state): init_genrand
    std::vector<std::uint8_t> control(genes_total, 0);
    for (const std::int64_t bin : set_cuts) {
        std::vector<std::int32_t> bin_genes;
        for (std::size_t gene = 0; gene < genes_total; ++gene)
            if (cut[gene] == bin) bin_genes.push_back(static_cast<std::int32_t>(gene));
        numpy_shuffle(bin_genes, generator);
        const std::size_t take = std::min(bin_genes.size(), static_cast<std::size_t>(options.ctrl_size));
        for (std::size_t index = 0; index < take; ++index) control[static_cast<std::size_t>(bin_genes[index])] = 1;
    }
    for (const std::int32_t gene : result.genes) control[static_cast<std::size_t>(gene)] = 0;
    for (std::size_t gene = 0; gene < genes_total; ++gene)
        if (control[gene]) result.control_genes.push_back(static_cast<std::int32_t>(gene));

    // scanpy: X_control = nanmean over the control genes; an empty control set gives
    // NaN (numpy's mean of nothing), which we keep.
    std::vector<double> control_sum(num_cells, 0.0);
    add_lognorm(counts, result.control_genes, cell_totals, options.target_sum, control_sum, ctx);
    const double control_size = static_cast<double>(result.control_genes.size());
    for (std::size_t cell = 0; cell < num_cells; ++cell)
        result.scores[cell] -= result.control_genes.empty() ? std::nan("") : control_sum[cell] / control_size;
    return result;
}

}  // namespace fathom
