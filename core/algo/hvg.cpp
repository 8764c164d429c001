#include "core/algo/hvg.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

namespace fathom {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// statsmodels' robust.mad normalising constant: scipy.stats.norm.ppf(0.75).
constexpr double kMadConstant = 0.6744897501960817;

/// Median as NumPy / pandas compute it on float64: the middle value, or the mean of
/// the two middle values ((a + b) / 2). NaN for an empty input.
double median(std::vector<double> values) {
    if (values.empty()) return kNaN;
    const std::size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
    const double upper = values[middle];
    if (values.size() % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    return (lower + upper) / 2.0;
}

/// Bin of every value for right-closed bins with the given ascending edges, as
/// pandas.cut: bin k holds (edges[k], edges[k + 1]]; -1 when outside every bin.
std::vector<int> cut_right_closed(std::span<const double> values, std::span<const double> edges) {
    std::vector<int> bins(values.size(), -1);
    for (std::size_t index = 0; index < values.size(); ++index) {
        const double value = values[index];
        if (std::isnan(value)) continue;
        // pandas: ids = bins.searchsorted(x, side='left'); bin = ids - 1.
        const auto position = std::lower_bound(edges.begin(), edges.end(), value) - edges.begin();
        if (position == 0 || position == static_cast<std::ptrdiff_t>(edges.size())) continue;
        bins[index] = static_cast<int>(position - 1);
    }
    return bins;
}

/// pandas.cut(x, bins=n) edges: np.linspace(min, max, n + 1) with the first edge
/// lowered by 0.1% of the range (or +-0.1% around a constant), over the non-NaN values.
std::vector<double> equal_width_edges(std::span<const double> values, int num_bins) {
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    for (double value : values)
        if (!std::isnan(value)) {
            low = std::min(low, value);
            high = std::max(high, value);
        }
    std::vector<double> edges(static_cast<std::size_t>(num_bins) + 1);
    if (!(low <= high)) return edges;  // no finite value: every gene is outside the bins
    const bool constant = low == high;
    if (constant) {
        low -= low != 0 ? 0.001 * std::abs(low) : 0.001;
        high += high != 0 ? 0.001 * std::abs(high) : 0.001;
    }
    // np.linspace: start + i * step, the last edge set to stop.
    const double step = (high - low) / num_bins;
    for (int edge = 0; edge <= num_bins; ++edge) edges[static_cast<std::size_t>(edge)] = edge * step + low;
    edges.back() = high;
    if (!constant) edges.front() -= (high - low) * 0.001;
    return edges;
}

/// Values of each bin (NaN values left out, as pandas' groupby aggregations skip them).
std::vector<std::vector<double>> group_values(std::span<const double> values, const std::vector<int>& bins, int num_bins) {
    std::vector<std::vector<double>> groups(static_cast<std::size_t>(num_bins));
    for (std::size_t index = 0; index < values.size(); ++index)
        if (bins[index] >= 0 && !std::isnan(values[index])) groups[static_cast<std::size_t>(bins[index])].push_back(values[index]);
    return groups;
}

/// Top-n selection: as pp.highly_variable_genes (cut-off in float64, NaN norms count
/// as 0) or as pp.filter_genes_dispersion (cut-off rounded to float32).
void select_top(HvgResult& result, std::int64_t num_top_genes, HvgApi api) {
    std::vector<double> sorted;
    for (double norm : result.dispersions_norm) {
        if (std::isnan(norm)) continue;
        sorted.push_back(api == HvgApi::FilterGenesDispersion ? static_cast<double>(static_cast<float>(norm)) : norm);
    }
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const auto genes = result.dispersions_norm.size();
    result.highly_variable.assign(genes, 0);
    result.num_selected = 0;
    if (sorted.empty()) return;
    // scanpy >= 1.9 highly_variable_genes caps n at the number of non-NaN norms; the
    // deprecated filter_genes_dispersion would raise an IndexError instead.
    const auto take = static_cast<std::size_t>(std::min<std::int64_t>(num_top_genes, static_cast<std::int64_t>(sorted.size())));
    const double cutoff = sorted[take - 1];
    result.cutoff = cutoff;
    for (std::size_t gene = 0; gene < genes; ++gene) {
        double norm = result.dispersions_norm[gene];
        if (api == HvgApi::HighlyVariableGenes) {
            // np.nan_to_num: NaN -> 0, +-inf -> +-max finite.
            if (std::isnan(norm)) norm = 0.0;
            else if (std::isinf(norm)) norm = norm > 0 ? std::numeric_limits<double>::max() : -std::numeric_limits<double>::max();
        }
        // filter_genes_dispersion compares the float64 norms with the float32 cut-off
        // (NaN >= cut-off is false): ties are kept, and when the n-th norm rounds up
        // in float32 that gene is dropped (n-1 genes), exactly as scanpy 1.9.
        const bool keep = norm >= cutoff;
        result.highly_variable[gene] = keep ? 1 : 0;
        result.num_selected += keep ? 1 : 0;
    }
}

void select_by_cutoffs(HvgResult& result, const HvgOptions& options) {
    const auto genes = result.dispersions_norm.size();
    result.highly_variable.assign(genes, 0);
    result.num_selected = 0;
    for (std::size_t gene = 0; gene < genes; ++gene) {
        double norm = result.dispersions_norm[gene];
        if (options.api == HvgApi::FilterGenesDispersion) norm = static_cast<float>(norm);
        if (std::isnan(norm)) norm = 0.0;  // "similar to Seurat"
        const double mean = result.means[gene];
        const bool keep = mean > options.min_mean && mean < options.max_mean && norm > options.min_disp && norm < options.max_disp;
        result.highly_variable[gene] = keep ? 1 : 0;
        result.num_selected += keep ? 1 : 0;
    }
}

/// Per-gene mean and ddof=1 variance from column sums (scanpy's _get_mean_var).
void mean_var(const ColumnStats& stats, std::int64_t num_cells, std::vector<double>& means, std::vector<double>& variances) {
    const double cells = static_cast<double>(num_cells);
    means.resize(stats.sum.size());
    variances.resize(stats.sum.size());
    for (std::size_t gene = 0; gene < stats.sum.size(); ++gene) {
        const double mean = stats.sum[gene] / cells;
        // scanpy's sparse two-pass form sum((x - m)^2) + (n - nnz) m^2 equals
        // sum(x^2) - n m^2 up to rounding; both are divided by n, then times n / (n - 1).
        double var = (stats.sum_squares[gene] - cells * mean * mean) / cells * (cells / (cells - 1.0));
        if (var < 0.0) var = 0.0;
        means[gene] = mean;
        variances[gene] = var;
    }
}

}  // namespace

double numpy_percentile(std::span<const double> sorted, double q) {
    if (sorted.empty()) throw std::invalid_argument("numpy_percentile: empty input");
    const auto count = static_cast<std::int64_t>(sorted.size());
    // numpy 1.24 _quantile, method 'linear': virtual index (n - 1) * q / 100, then
    // _lerp(a, b, t) = a + (b - a) * t, or b - (b - a) * (1 - t) when t >= 0.5.
    const double virtual_index = static_cast<double>(count - 1) * (q / 100.0);
    double previous = std::floor(virtual_index);
    previous = std::clamp(previous, 0.0, static_cast<double>(count - 1));
    const double next = std::min(previous + 1.0, static_cast<double>(count - 1));
    const double gamma = virtual_index - previous;
    const double a = sorted[static_cast<std::size_t>(previous)];
    const double b = sorted[static_cast<std::size_t>(next)];
    const double difference = b - a;
    return gamma >= 0.5 ? b - difference * (1.0 - gamma) : a + difference * gamma;
}

std::vector<double> loess_fit(std::span<const double> x, std::span<const double> y, double span) {
    if (x.size() != y.size()) throw std::invalid_argument("loess_fit: x and y differ in size");
    const auto count = static_cast<std::int64_t>(x.size());
    if (count < 3) throw std::invalid_argument("loess_fit: needs at least 3 points");
    if (!(span > 0.0 && span <= 1.0)) throw std::invalid_argument("loess_fit: span must be in (0, 1]");
    // Points sorted by x: the q nearest neighbours of any point form a contiguous window.
    std::vector<std::int64_t> order(static_cast<std::size_t>(count));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return x[static_cast<std::size_t>(a)] < x[static_cast<std::size_t>(b)]; });
    std::vector<double> xs(static_cast<std::size_t>(count)), ys(static_cast<std::size_t>(count));
    for (std::int64_t index = 0; index < count; ++index) {
        xs[static_cast<std::size_t>(index)] = x[static_cast<std::size_t>(order[static_cast<std::size_t>(index)])];
        ys[static_cast<std::size_t>(index)] = y[static_cast<std::size_t>(order[static_cast<std::size_t>(index)])];
    }
    // netlib loess: q = floor(n * span) neighbours (at least degree + 1 = 3).
    const std::int64_t neighbours = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(static_cast<double>(count) * span)), 3, count);
    std::vector<double> fitted_sorted(static_cast<std::size_t>(count));
    std::int64_t window = 0;  // window [window, window + neighbours)
    for (std::int64_t point = 0; point < count; ++point) {
        const double centre = xs[static_cast<std::size_t>(point)];
        // Slide the window right while that brings it closer to the centre.
        while (window + neighbours < count &&
               xs[static_cast<std::size_t>(window + neighbours)] - centre < centre - xs[static_cast<std::size_t>(window)])
            ++window;
        const double radius = std::max(centre - xs[static_cast<std::size_t>(window)],
                                       xs[static_cast<std::size_t>(window + neighbours - 1)] - centre);
        // Tricube weights (1 - (d / radius)^3)^3 over the window; local quadratic in
        // u = (x - centre) / radius, fitted value = intercept.
        Eigen::MatrixXd normal = Eigen::MatrixXd::Zero(3, 3);
        Eigen::VectorXd rhs = Eigen::VectorXd::Zero(3);
        for (std::int64_t index = window; index < window + neighbours; ++index) {
            const double offset = xs[static_cast<std::size_t>(index)] - centre;
            double weight = 1.0;
            double u = 0.0;
            if (radius > 0.0) {
                u = offset / radius;
                const double ratio = std::abs(u);
                weight = ratio >= 1.0 ? 0.0 : std::pow(1.0 - ratio * ratio * ratio, 3);
            }
            if (weight == 0.0) continue;
            const double basis[3] = {1.0, u, u * u};
            for (int row = 0; row < 3; ++row) {
                rhs(row) += weight * ys[static_cast<std::size_t>(index)] * basis[row];
                for (int col = 0; col < 3; ++col) normal(row, col) += weight * basis[row] * basis[col];
            }
        }
        // Pseudo-inverse solve (netlib loess uses an SVD with a tolerance).
        const Eigen::JacobiSVD<Eigen::MatrixXd> svd(normal, Eigen::ComputeThinU | Eigen::ComputeThinV);
        const Eigen::VectorXd singular = svd.singularValues();
        Eigen::VectorXd inverse_singular = Eigen::VectorXd::Zero(3);
        for (int k = 0; k < 3; ++k)
            if (singular(k) > 1e-12 * singular(0)) inverse_singular(k) = 1.0 / singular(k);
        const Eigen::VectorXd beta = svd.matrixV() * inverse_singular.asDiagonal() * svd.matrixU().transpose() * rhs;
        fitted_sorted[static_cast<std::size_t>(point)] = beta(0);
    }
    std::vector<double> fitted(static_cast<std::size_t>(count));
    for (std::int64_t index = 0; index < count; ++index)
        fitted[static_cast<std::size_t>(order[static_cast<std::size_t>(index)])] = fitted_sorted[static_cast<std::size_t>(index)];
    return fitted;
}

void validate(const HvgOptions& options, const MatrixShape& shape) {
    if (options.num_top_genes && *options.num_top_genes < 1)
        throw std::invalid_argument("HvgOptions::num_top_genes must be >= 1");
    if (options.flavor == HvgFlavor::SeuratV3 && !options.num_top_genes)
        throw std::invalid_argument("HvgOptions::num_top_genes is required for flavor seurat_v3");
    if (options.flavor == HvgFlavor::SeuratV3 && options.api == HvgApi::FilterGenesDispersion)
        throw std::invalid_argument("HvgOptions::api filter_genes_dispersion has no seurat_v3 flavour");
    if (options.num_bins < 1) throw std::invalid_argument("HvgOptions::num_bins must be >= 1");
    if (!(options.span > 0.0 && options.span <= 1.0)) throw std::invalid_argument("HvgOptions::span must be in (0, 1]");
    if (std::isnan(options.min_mean) || std::isnan(options.max_mean) || std::isnan(options.min_disp) ||
        std::isnan(options.max_disp))
        throw std::invalid_argument("HvgOptions: cut-offs must not be NaN");
    if (shape.num_cells < 2)
        throw std::invalid_argument("highly_variable_genes: needs at least 2 cells; the matrix has " +
                                    std::to_string(shape.num_cells));
    if (shape.num_genes < 1) throw std::invalid_argument("highly_variable_genes: the matrix has no genes");
}

HvgResult select_by_dispersion(std::span<const double> means, std::span<const double> variances, const HvgOptions& options) {
    if (means.size() != variances.size()) throw std::invalid_argument("select_by_dispersion: means and variances differ in size");
    if (options.flavor == HvgFlavor::SeuratV3)
        throw std::invalid_argument("select_by_dispersion: seurat_v3 needs the matrix (use highly_variable_genes)");
    const auto genes = means.size();
    HvgResult result;
    result.means.assign(means.begin(), means.end());
    result.dispersions.resize(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        if (result.means[gene] == 0.0) result.means[gene] = 1e-12;  // scanpy: mean[mean == 0] = 1e-12
        result.dispersions[gene] = variances[gene] / result.means[gene];
    }
    const bool take_logs = options.api == HvgApi::HighlyVariableGenes ? options.flavor == HvgFlavor::Seurat : options.log;
    if (take_logs) {
        for (std::size_t gene = 0; gene < genes; ++gene) {
            // dispersion[dispersion == 0] = nan; dispersion = log(dispersion); mean = log1p(mean)
            result.dispersions[gene] = result.dispersions[gene] == 0.0 ? kNaN : std::log(result.dispersions[gene]);
            result.means[gene] = std::log1p(result.means[gene]);
        }
    }
    result.dispersions_norm.assign(genes, kNaN);
    if (genes == 0) return result;

    if (options.flavor == HvgFlavor::Seurat) {
        // Equal-width bins of the mean; z-score of the dispersion within each bin; a bin
        // with a single gene (NaN std) gets mean 0 and std = its mean, i.e. norm 1.
        const auto edges = equal_width_edges(result.means, options.num_bins);
        const auto bins = cut_right_closed(result.means, edges);
        const auto groups = group_values(result.dispersions, bins, options.num_bins);
        std::vector<double> bin_mean(groups.size(), kNaN), bin_std(groups.size(), kNaN);
        for (std::size_t bin = 0; bin < groups.size(); ++bin) {
            const auto& values = groups[bin];
            if (values.empty()) continue;
            double sum = 0.0;
            for (double value : values) sum += value;
            const double mean = sum / static_cast<double>(values.size());
            bin_mean[bin] = mean;
            if (values.size() < 2) continue;
            double squares = 0.0;
            for (double value : values) squares += (value - mean) * (value - mean);
            bin_std[bin] = std::sqrt(squares / static_cast<double>(values.size() - 1));
        }
        for (std::size_t bin = 0; bin < groups.size(); ++bin)
            if (std::isnan(bin_std[bin])) {
                bin_std[bin] = bin_mean[bin];
                bin_mean[bin] = 0.0;
            }
        for (std::size_t gene = 0; gene < genes; ++gene) {
            if (bins[gene] < 0) continue;
            const auto bin = static_cast<std::size_t>(bins[gene]);
            result.dispersions_norm[gene] = (result.dispersions[gene] - bin_mean[bin]) / bin_std[bin];
        }
    } else {
        // Cell Ranger: bins at [-inf, percentiles 10, 15, ..., 100 of the mean, inf];
        // norm = (d - median) / MAD per bin, MAD = median(|d - median| / 0.6745...)
        // (statsmodels robust.mad). filter_genes_dispersion takes |d - median|.
        // A bin with one gene has MAD 0 and its norm is NaN (0 / 0), as in scanpy.
        // Where scanpy's pandas.cut would raise on duplicate percentile edges, the
        // duplicates simply make empty bins here.
        std::vector<double> sorted = result.means;
        std::sort(sorted.begin(), sorted.end());
        std::vector<double> edges{-std::numeric_limits<double>::infinity()};
        for (int q = 10; q < 105; q += 5) edges.push_back(numpy_percentile(sorted, q));
        edges.push_back(std::numeric_limits<double>::infinity());
        const int num_bins = static_cast<int>(edges.size()) - 1;
        const auto bins = cut_right_closed(result.means, edges);
        const auto groups = group_values(result.dispersions, bins, num_bins);
        std::vector<double> bin_median(groups.size(), kNaN), bin_mad(groups.size(), kNaN);
        for (std::size_t bin = 0; bin < groups.size(); ++bin) {
            if (groups[bin].empty()) continue;
            bin_median[bin] = median(groups[bin]);
            std::vector<double> deviations;
            deviations.reserve(groups[bin].size());
            for (double value : groups[bin]) deviations.push_back(std::abs(value - bin_median[bin]) / kMadConstant);
            bin_mad[bin] = median(std::move(deviations));
        }
        const bool absolute = options.api == HvgApi::FilterGenesDispersion;
        for (std::size_t gene = 0; gene < genes; ++gene) {
            if (bins[gene] < 0) continue;
            const auto bin = static_cast<std::size_t>(bins[gene]);
            const double deviation = result.dispersions[gene] - bin_median[bin];
            result.dispersions_norm[gene] = (absolute ? std::abs(deviation) : deviation) / bin_mad[bin];
        }
    }

    if (options.num_top_genes) select_top(result, *options.num_top_genes, options.api);
    else select_by_cutoffs(result, options);
    return result;
}

HvgResult highly_variable_genes(const ColumnStats& stats, std::int64_t num_cells, const HvgOptions& options) {
    validate(options, MatrixShape{num_cells, static_cast<std::int64_t>(stats.sum.size())});
    if (options.flavor == HvgFlavor::SeuratV3)
        throw std::invalid_argument("highly_variable_genes: seurat_v3 needs the matrix, not column statistics");
    std::vector<double> means, variances;
    mean_var(stats, num_cells, means, variances);
    return select_by_dispersion(means, variances, options);
}

HvgResult highly_variable_genes(const ShardSet& shards, const HvgOptions& options, JobContext& ctx) {
    validate(options, shards.shape());
    ctx.begin_stage("highly_variable_genes");
    const std::int64_t cells = shards.num_cells();
    if (options.flavor != HvgFlavor::SeuratV3) {
        ColumnStatsRequest request;
        // scanpy 1.9 'seurat' flavour of highly_variable_genes: X = np.expm1(X) first.
        if (options.flavor == HvgFlavor::Seurat && options.api == HvgApi::HighlyVariableGenes && options.expm1_input)
            request.transform = ElementTransform::Expm1;
        const ColumnStats stats = shards.column_stats(request, ctx);
        ctx.report(0.8);
        auto result = highly_variable_genes(stats, cells, options);
        ctx.report(1.0);
        return result;
    }

    // seurat_v3 (scanpy 1.9 _highly_variable_genes_seurat_v3, one batch).
    const ColumnStats stats = shards.column_stats({}, ctx);
    ctx.report(0.3);
    std::vector<double> means, variances;
    mean_var(stats, cells, means, variances);
    const auto genes = means.size();
    std::vector<double> log_mean, log_var;
    std::vector<std::size_t> not_constant;
    for (std::size_t gene = 0; gene < genes; ++gene)
        if (variances[gene] > 0.0) {
            not_constant.push_back(gene);
            log_mean.push_back(std::log10(means[gene]));
            log_var.push_back(std::log10(variances[gene]));
        }
    std::vector<double> estimated(genes, 0.0);
    if (not_constant.size() >= 3) {
        const auto fitted = loess_fit(log_mean, log_var, options.span);
        for (std::size_t index = 0; index < not_constant.size(); ++index) estimated[not_constant[index]] = fitted[index];
    }
    ctx.report(0.5);
    const double num_cells = static_cast<double>(cells);
    std::vector<double> reg_std(genes), clip(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        reg_std[gene] = std::sqrt(std::pow(10.0, estimated[gene]));
        clip[gene] = reg_std[gene] * std::sqrt(num_cells) + means[gene];  // clip_val = reg_std * sqrt(N) + mean
    }
    ColumnStatsRequest clipped;
    clipped.column_max = clip;
    const ColumnStats clipped_stats = shards.column_stats(clipped, ctx);
    ctx.report(0.9);
    HvgResult result;
    result.means = means;
    result.variances = variances;
    result.variances_norm.resize(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        const double mean = means[gene];
        result.variances_norm[gene] = 1.0 / ((num_cells - 1.0) * reg_std[gene] * reg_std[gene]) *
                                      (num_cells * mean * mean + clipped_stats.sum_squares[gene] -
                                       2.0 * clipped_stats.sum[gene] * mean);
    }
    // Ranks by decreasing normalised variance (argsort(argsort(-v))); ties by gene
    // order (NumPy's quicksort leaves their order unspecified).
    std::vector<std::size_t> order(genes);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return result.variances_norm[a] > result.variances_norm[b];
    });
    result.highly_variable.assign(genes, 0);
    result.highly_variable_rank.assign(genes, kNaN);
    const auto take = std::min<std::size_t>(static_cast<std::size_t>(*options.num_top_genes), genes);
    for (std::size_t rank = 0; rank < take; ++rank) {
        result.highly_variable[order[rank]] = 1;
        result.highly_variable_rank[order[rank]] = static_cast<double>(rank);
    }
    result.num_selected = static_cast<std::int64_t>(take);
    ctx.report(1.0);
    return result;
}

}  // namespace fathom
