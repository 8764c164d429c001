#pragma once
/// Shared helpers for the step tests: simulated shard sets and dense references.
#include <cmath>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {

/// A simulated count matrix split evenly into `shards` CPU shards.
inline ShardSet simulated_set(const CsrShard& whole, int shards) { return ShardSet::make_cpu(split_evenly(whole, shards)); }

/// Default simulated counts for step tests.
inline CsrShard step_counts(std::uint64_t seed = 1, std::int64_t cells = 300, std::int64_t genes = 60) {
    SimulationOptions options;
    options.num_cells = cells;
    options.num_genes = genes;
    options.seed = seed;
    options.density = 0.3;
    options.empty_cell_fraction = 0.03;
    options.zero_gene_fraction = 0.05;
    return simulate_counts(options);
}

/// Largest relative difference between two vectors, relative to the largest |a|.
inline double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double scale = 0;
    for (double value : a) scale = std::max(scale, std::abs(value));
    double worst = a.size() == b.size() ? 0.0 : 1.0;
    for (std::size_t index = 0; index < a.size() && index < b.size(); ++index) {
        if (std::isnan(a[index]) && std::isnan(b[index])) continue;
        worst = std::max(worst, std::abs(a[index] - b[index]) / std::max(scale, 1e-300));
    }
    return worst;
}

/// Per-gene dense mean and ddof=1 variance.
inline void dense_mean_var(const DenseMatrix<double>& dense, std::vector<double>& mean, std::vector<double>& var) {
    mean.assign(static_cast<std::size_t>(dense.cols()), 0.0);
    var.assign(static_cast<std::size_t>(dense.cols()), 0.0);
    for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
        double sum = 0;
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) sum += dense(cell, gene);
        const double m = sum / static_cast<double>(dense.rows());
        double squares = 0;
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) squares += (dense(cell, gene) - m) * (dense(cell, gene) - m);
        mean[static_cast<std::size_t>(gene)] = m;
        var[static_cast<std::size_t>(gene)] = squares / static_cast<double>(dense.rows() - 1);
    }
}

}  // namespace fathom::test
