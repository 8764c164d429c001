// normalize_total / normalize_per_cell / log1p against dense references with scanpy's
// float32 (and, for integer X, float64) factor arithmetic.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/algo/normalize.hpp"
#include "core/backend/log1p_float.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

std::vector<double> dense_totals(const DenseMatrix<double>& dense) {
    std::vector<double> totals(static_cast<std::size_t>(dense.rows()), 0.0);
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell)
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) totals[static_cast<std::size_t>(cell)] += dense(cell, gene);
    return totals;
}

TEST(Normalize, MedianFollowsNumpy) {
    EXPECT_EQ(median_float32({3.0f, 1.0f, 2.0f}), 2.0f);
    EXPECT_EQ(median_float32({4.0f, 1.0f, 2.0f, 3.0f}), 2.5f);
    EXPECT_TRUE(std::isnan(median_float32({})));
    EXPECT_EQ(median_float64({5.0, 1.0, 2.0, 8.0}), 3.5);
}

TEST(Normalize, TotalToMedianOfNonZeroTotalsInFloat32) {
    const auto whole = step_counts(7);
    const auto dense = to_dense(whole);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    const auto result = normalize_total(shards, {}, ctx);
    const auto totals = dense_totals(dense);
    std::vector<float> positive;
    for (double total : totals)
        if (total > 0) positive.push_back(static_cast<float>(total));
    ASSERT_LT(positive.size(), totals.size()) << "needs an empty cell";
    std::sort(positive.begin(), positive.end());
    const float median = positive.size() % 2 ? positive[positive.size() / 2]
                                             : (positive[positive.size() / 2 - 1] + positive[positive.size() / 2]) / 2.0f;
    EXPECT_EQ(result.target_sum, median);
    const auto after = to_dense(shards.to_host());
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
        float count = static_cast<float>(totals[static_cast<std::size_t>(cell)]);
        if (count == 0.0f) count = 1.0f;
        const float factor = 1.0f / (count / median);
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene)
            EXPECT_EQ(static_cast<float>(after(cell, gene)), static_cast<float>(dense(cell, gene)) * factor);
    }
    EXPECT_EQ(shards.num_cells(), dense.rows()) << "normalize_total keeps empty cells";
}

TEST(Normalize, IntegerDtypeUsesFloat64Factors) {
    const auto whole = step_counts(8);
    const auto dense = to_dense(whole);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    NormalizeTotalOptions options;
    options.target_sum = 1e4;
    options.integer_dtype = true;
    normalize_total(shards, options, ctx);
    const auto after = to_dense(shards.to_host());
    const auto totals = dense_totals(dense);
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
        double count = totals[static_cast<std::size_t>(cell)];
        if (count == 0) count = 1;
        const double factor = 1.0 / (count / 1e4);
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene)
            EXPECT_EQ(static_cast<float>(after(cell, gene)), static_cast<float>(dense(cell, gene) * factor));
    }
}

TEST(Normalize, PerCellDropsCellsBelowMinCounts) {
    const auto whole = step_counts(9);
    const auto dense = to_dense(whole);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    NormalizePerCellOptions options;
    options.min_counts = 30;
    const auto result = normalize_per_cell(shards, options, ctx);
    const auto totals = dense_totals(dense);
    std::vector<double> kept;
    for (std::size_t cell = 0; cell < totals.size(); ++cell) {
        EXPECT_EQ(result.cell_kept[cell], totals[cell] >= 30 ? 1 : 0);
        if (totals[cell] >= 30) kept.push_back(totals[cell]);
    }
    EXPECT_EQ(shards.num_cells(), static_cast<std::int64_t>(kept.size()));
    EXPECT_EQ(result.num_removed, static_cast<std::int64_t>(totals.size() - kept.size()));
    const auto row_totals = shards.row_stats({}, ctx).total;
    for (double total : row_totals) EXPECT_NEAR(total, result.counts_per_cell_after, 1e-3 * result.counts_per_cell_after);
}

TEST(Normalize, Log1pInFloat32) {
    const auto whole = step_counts(10);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    log1p(shards, ctx);
    const auto after = shards.to_host();
    std::size_t entry = 0;
    for (const auto& shard : after.shards())
        for (float value : shard.values) EXPECT_EQ(value, log1p_float(whole.values[entry++]));
}

TEST(Normalize, ValidationAndCancellation) {
    NormalizeTotalOptions bad;
    bad.target_sum = 0;
    EXPECT_THROW(validate(bad), std::invalid_argument);
    NormalizePerCellOptions bad_cells;
    bad_cells.min_counts = -1;
    EXPECT_THROW(validate(bad_cells), std::invalid_argument);
    auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    ctx.cancel();
    EXPECT_THROW(normalize_total(shards, {}, ctx), Cancelled);
    EXPECT_THROW(normalize_per_cell(shards, {}, ctx), Cancelled);
    EXPECT_THROW(log1p(shards, ctx), Cancelled);
}

}  // namespace
}  // namespace fathom::test
