// highly_variable_genes: percentile, binning, normalised dispersions and top-n rules
// against straightforward re-derivations on small inputs; LOESS against a brute-force
// local regression; seurat_v3 against a dense computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <Eigen/Dense>

#include "core/algo/hvg.hpp"
#include "core/algo/normalize.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

TEST(Hvg, PercentileMatchesNumpyLinear) {
    const std::vector<double> values{1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(numpy_percentile(values, 10), 1.3);   // np.percentile([1,2,3,4], 10)
    EXPECT_DOUBLE_EQ(numpy_percentile(values, 50), 2.5);
    EXPECT_DOUBLE_EQ(numpy_percentile(values, 100), 4.0);
    EXPECT_DOUBLE_EQ(numpy_percentile(values, 0), 1.0);
    EXPECT_DOUBLE_EQ(numpy_percentile(std::vector<double>{7}, 35), 7.0);
    EXPECT_THROW(numpy_percentile(std::vector<double>{}, 5), std::invalid_argument);
}

/// Straightforward cell_ranger reference (pandas semantics written out plainly).
std::vector<double> cell_ranger_norms(const std::vector<double>& mean, const std::vector<double>& dispersion, bool absolute) {
    std::vector<double> sorted = mean;
    std::sort(sorted.begin(), sorted.end());
    std::vector<double> edges{-INFINITY};
    for (int q = 10; q <= 100; q += 5) {
        const double position = (static_cast<double>(sorted.size()) - 1) * q / 100.0;
        const auto low = static_cast<std::size_t>(std::floor(position));
        const auto high = std::min(low + 1, sorted.size() - 1);
        edges.push_back(sorted[low] + (sorted[high] - sorted[low]) * (position - static_cast<double>(low)));
    }
    edges.push_back(INFINITY);
    std::vector<int> bin(mean.size());
    for (std::size_t gene = 0; gene < mean.size(); ++gene)
        for (std::size_t edge = 0; edge + 1 < edges.size(); ++edge)
            if (mean[gene] > edges[edge] && mean[gene] <= edges[edge + 1]) {
                bin[gene] = static_cast<int>(edge);
                break;
            }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    std::vector<double> norms(mean.size());
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        std::vector<double> members;
        for (std::size_t other = 0; other < mean.size(); ++other)
            if (bin[other] == bin[gene]) members.push_back(dispersion[other]);
        const double centre = median(members);
        std::vector<double> deviations;
        for (double value : members) deviations.push_back(std::abs(value - centre) / 0.6744897501960817);
        const double mad = median(deviations);
        const double deviation = dispersion[gene] - centre;
        norms[gene] = (absolute ? std::abs(deviation) : deviation) / mad;
    }
    return norms;
}

TEST(Hvg, CellRangerNormsMatchReference) {
    std::vector<double> means, variances;
    for (int gene = 0; gene < 97; ++gene) {
        means.push_back(0.01 + 0.05 * gene + 0.001 * std::sin(gene));
        variances.push_back(means.back() * (1.0 + 0.8 * std::abs(std::sin(3.7 * gene))));
    }
    for (HvgApi api : {HvgApi::HighlyVariableGenes, HvgApi::FilterGenesDispersion}) {
        HvgOptions options;
        options.flavor = HvgFlavor::CellRanger;
        options.api = api;
        options.num_top_genes = 20;
        const auto result = select_by_dispersion(means, variances, options);
        std::vector<double> dispersion(means.size());
        for (std::size_t gene = 0; gene < means.size(); ++gene) dispersion[gene] = variances[gene] / means[gene];
        const auto expected = cell_ranger_norms(means, dispersion, api == HvgApi::FilterGenesDispersion);
        for (std::size_t gene = 0; gene < means.size(); ++gene) {
            if (std::isnan(expected[gene])) EXPECT_TRUE(std::isnan(result.dispersions_norm[gene]));
            else EXPECT_NEAR(result.dispersions_norm[gene], expected[gene], 1e-12 * (1 + std::abs(expected[gene])));
        }
        // The top 20 by norm are selected, with every gene tied at the cut-off (small
        // bins give exact ties: a gene at the bin's MAD has norm exactly +-0.6745).
        std::vector<double> order;
        for (double norm : result.dispersions_norm)
            if (!std::isnan(norm)) order.push_back(norm);
        std::sort(order.begin(), order.end(), std::greater<>());
        std::int64_t expected_count = 0;
        const double cutoff = api == HvgApi::FilterGenesDispersion ? static_cast<float>(order[19]) : order[19];
        for (double norm : result.dispersions_norm) expected_count += norm >= cutoff ? 1 : 0;
        EXPECT_EQ(result.num_selected, expected_count);
        EXPECT_GE(result.num_selected, 19);
    }
}

TEST(Hvg, FilterGenesDispersionKeepsTiesAndUsesFloat32Cutoff) {
    // Gene 59 is an exact copy of gene 17 (same mean and variance): the two tie.
    std::vector<double> means, variances;
    for (int gene = 0; gene < 59; ++gene) {
        means.push_back(0.1 + 0.01 * gene);
        variances.push_back(means.back() * (1.0 + 0.5 * std::abs(std::cos(1.3 * gene))));
    }
    means.push_back(means[17]);
    variances.push_back(variances[17]);
    HvgOptions options;
    options.flavor = HvgFlavor::CellRanger;
    options.api = HvgApi::FilterGenesDispersion;
    options.num_top_genes = 10;
    const auto first = select_by_dispersion(means, variances, options);
    ASSERT_EQ(first.dispersions_norm[17], first.dispersions_norm[59]);
    // Put the cut-off on the tied pair: n = (genes with a larger norm) + 1.
    std::int64_t larger = 0;
    for (double norm : first.dispersions_norm) larger += norm > first.dispersions_norm[17] ? 1 : 0;
    options.num_top_genes = larger + 1;
    const auto result = select_by_dispersion(means, variances, options);
    EXPECT_EQ(result.highly_variable[17], result.highly_variable[59]);
    const double cutoff32 = static_cast<float>(first.dispersions_norm[17]);
    EXPECT_EQ(result.cutoff, cutoff32);
    std::int64_t expected = 0;
    for (std::size_t gene = 0; gene < means.size(); ++gene) {
        EXPECT_EQ(result.highly_variable[gene], result.dispersions_norm[gene] >= cutoff32 ? 1 : 0);
        expected += result.dispersions_norm[gene] >= cutoff32 ? 1 : 0;
    }
    EXPECT_EQ(result.num_selected, expected);
    // Rounding the cut-off up to float32 drops the tied genes, rounding down keeps them
    // (and any other gene tied with them): never exactly n here.
    EXPECT_NE(result.num_selected, larger + 1);
}

/// Straightforward seurat-flavour reference: log dispersion, log1p mean, z-score in
/// equal-width bins (pandas.cut(bins=n)), single-gene bins -> 1.
std::vector<double> seurat_norms(const std::vector<double>& mean_in, const std::vector<double>& var, int bins) {
    std::vector<double> mean(mean_in.size()), dispersion(mean_in.size());
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        dispersion[gene] = std::log(var[gene] / mean_in[gene]);
        mean[gene] = std::log1p(mean_in[gene]);
    }
    const double low = *std::min_element(mean.begin(), mean.end()), high = *std::max_element(mean.begin(), mean.end());
    std::vector<double> edges;
    for (int edge = 0; edge <= bins; ++edge) edges.push_back(low + (high - low) * edge / bins);
    edges.front() -= (high - low) * 0.001;
    edges.back() = high;
    std::vector<int> bin(mean.size());
    for (std::size_t gene = 0; gene < mean.size(); ++gene)
        for (int edge = 0; edge < bins; ++edge)
            if (mean[gene] > edges[static_cast<std::size_t>(edge)] && mean[gene] <= edges[static_cast<std::size_t>(edge) + 1]) bin[gene] = edge;
    std::vector<double> norms(mean.size());
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        std::vector<double> members;
        for (std::size_t other = 0; other < mean.size(); ++other)
            if (bin[other] == bin[gene]) members.push_back(dispersion[other]);
        double m = 0;
        for (double v : members) m += v;
        m /= static_cast<double>(members.size());
        if (members.size() == 1) {
            norms[gene] = 1.0;
            continue;
        }
        double s = 0;
        for (double v : members) s += (v - m) * (v - m);
        s = std::sqrt(s / static_cast<double>(members.size() - 1));
        norms[gene] = (dispersion[gene] - m) / s;
    }
    return norms;
}

TEST(Hvg, SeuratFlavourOnLogDataMatchesReference) {
    SimulationOptions simulation;
    simulation.num_cells = 400;
    simulation.num_genes = 80;
    simulation.density = 0.3;
    simulation.zero_gene_fraction = 0.0;  // every gene has a defined dispersion
    simulation.seed = 21;
    const auto whole = simulate_counts(simulation);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    log1p(shards, ctx);  // the flavour expects log1p data and expm1s it back
    HvgOptions options;  // seurat, cut-offs
    const auto result = highly_variable_genes(shards, options, ctx);
    // Dense mean/var of the (float32) expm1 of the log data.
    auto logged = shards.to_host();
    DenseMatrix<double> dense = to_dense(logged);
    for (auto& value : dense.values()) value = value == 0 ? 0 : std::expm1(static_cast<float>(value));
    std::vector<double> mean, var;
    dense_mean_var(dense, mean, var);
    for (double value : mean) ASSERT_GT(value, 0);
    const auto expected = seurat_norms(mean, var, 20);
    std::int64_t selected = 0;
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        EXPECT_NEAR(result.means[gene], std::log1p(mean[gene]), 1e-9);
        EXPECT_NEAR(result.dispersions_norm[gene], expected[gene], 1e-8 * (1 + std::abs(expected[gene])));
        const double lm = std::log1p(mean[gene]);
        const bool keep = lm > 0.0125 && lm < 3 && expected[gene] > 0.5;
        selected += keep ? 1 : 0;
        EXPECT_EQ(result.highly_variable[gene], keep ? 1 : 0) << gene;
    }
    EXPECT_EQ(result.num_selected, selected);
}

/// Brute-force LOESS: full sort of distances per point, tricube weights, weighted
/// quadratic least squares by QR.
std::vector<double> brute_loess(const std::vector<double>& x, const std::vector<double>& y, double span) {
    const std::size_t n = x.size();
    const auto q = static_cast<std::size_t>(std::floor(static_cast<double>(n) * span));
    std::vector<double> fitted(n);
    for (std::size_t point = 0; point < n; ++point) {
        std::vector<double> distances(n);
        for (std::size_t other = 0; other < n; ++other) distances[other] = std::abs(x[other] - x[point]);
        std::vector<double> sorted = distances;
        std::sort(sorted.begin(), sorted.end());
        const double radius = sorted[q - 1];
        Eigen::MatrixXd design(static_cast<Eigen::Index>(n), 3);
        Eigen::VectorXd target(static_cast<Eigen::Index>(n));
        for (std::size_t other = 0; other < n; ++other) {
            const double u = (x[other] - x[point]) / radius;
            const double ratio = distances[other] / radius;
            const double weight = ratio < 1 ? std::pow(1 - ratio * ratio * ratio, 3) : 0.0;
            const double root = std::sqrt(weight);
            design.row(static_cast<Eigen::Index>(other)) << root, root * u, root * u * u;
            target(static_cast<Eigen::Index>(other)) = root * y[other];
        }
        fitted[point] = design.colPivHouseholderQr().solve(target)(0);
    }
    return fitted;
}

TEST(Hvg, LoessMatchesBruteForceAndReproducesQuadratics) {
    std::vector<double> x, quadratic, noisy;
    for (int point = 0; point < 150; ++point) {
        const double value = std::sin(0.37 * point) * 3 + 0.01 * point;
        x.push_back(value);
        quadratic.push_back(1.5 - 0.3 * value + 0.7 * value * value);
        noisy.push_back(std::cos(value) + 0.2 * std::sin(11.0 * point));
    }
    const auto exact = loess_fit(x, quadratic, 0.3);
    for (std::size_t point = 0; point < x.size(); ++point) EXPECT_NEAR(exact[point], quadratic[point], 1e-8);
    const auto fitted = loess_fit(x, noisy, 0.3);
    const auto expected = brute_loess(x, noisy, 0.3);
    for (std::size_t point = 0; point < x.size(); ++point) EXPECT_NEAR(fitted[point], expected[point], 1e-8) << point;
    EXPECT_THROW(loess_fit(std::vector<double>{1, 2}, std::vector<double>{1, 2}, 0.3), std::invalid_argument);
}

TEST(Hvg, SeuratV3MatchesDenseComputation) {
    const auto whole = step_counts(22, 500, 90);
    const auto dense = to_dense(whole);
    const auto shards = simulated_set(whole, 3);
    JobContext ctx;
    HvgOptions options;
    options.flavor = HvgFlavor::SeuratV3;
    options.num_top_genes = 15;
    const auto result = highly_variable_genes(shards, options, ctx);
    std::vector<double> mean, var;
    dense_mean_var(dense, mean, var);
    std::vector<double> lx, ly;
    std::vector<std::size_t> genes;
    for (std::size_t gene = 0; gene < mean.size(); ++gene)
        if (var[gene] > 0) genes.push_back(gene), lx.push_back(std::log10(mean[gene])), ly.push_back(std::log10(var[gene]));
    const auto fit = brute_loess(lx, ly, 0.3);
    std::vector<double> norm(mean.size());
    const double cells = static_cast<double>(dense.rows());
    std::vector<double> estimate(mean.size(), 0.0);
    for (std::size_t index = 0; index < genes.size(); ++index) estimate[genes[index]] = fit[index];
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        const double reg_std = std::sqrt(std::pow(10.0, estimate[gene]));
        const double clip = reg_std * std::sqrt(cells) + mean[gene];
        double sum = 0, squares = 0;
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
            const double value = std::min(dense(cell, static_cast<std::int64_t>(gene)), clip);
            sum += value;
            squares += value * value;
        }
        norm[gene] = (cells * mean[gene] * mean[gene] + squares - 2 * sum * mean[gene]) / ((cells - 1) * reg_std * reg_std);
        EXPECT_NEAR(result.variances_norm[gene], norm[gene], 1e-7 * (1 + std::abs(norm[gene]))) << gene;
    }
    std::vector<std::size_t> order(mean.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return norm[a] > norm[b]; });
    EXPECT_EQ(result.num_selected, 15);
    for (std::size_t rank = 0; rank < 15; ++rank) {
        EXPECT_EQ(result.highly_variable[order[rank]], 1);
        EXPECT_EQ(result.highly_variable_rank[order[rank]], static_cast<double>(rank));
    }
}

TEST(Hvg, ValidationNamesTheField) {
    const MatrixShape shape{100, 50};
    HvgOptions options;
    options.num_top_genes = 0;
    EXPECT_THROW(validate(options, shape), std::invalid_argument);
    options = {};
    options.flavor = HvgFlavor::SeuratV3;
    try {
        validate(options, shape);
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("HvgOptions::num_top_genes"), std::string::npos);
    }
    options = {};
    options.span = 0;
    EXPECT_THROW(validate(options, shape), std::invalid_argument);
    options = {};
    options.num_bins = 0;
    EXPECT_THROW(validate(options, shape), std::invalid_argument);
}

TEST(Hvg, StopsWhenCancelled) {
    const auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    ctx.cancel();
    for (HvgFlavor flavor : {HvgFlavor::Seurat, HvgFlavor::CellRanger, HvgFlavor::SeuratV3}) {
        HvgOptions options;
        options.flavor = flavor;
        options.num_top_genes = 10;
        EXPECT_THROW(highly_variable_genes(shards, options, ctx), Cancelled);
    }
}

}  // namespace
}  // namespace fathom::test
