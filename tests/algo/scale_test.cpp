// scale: per-gene mean and ddof=1 std against dense; zero-variance genes; options.
#include <gtest/gtest.h>

#include "core/algo/scale.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

TEST(Scale, MeanAndStdMatchDense) {
    const auto whole = step_counts(31);
    const auto dense = to_dense(whole);
    const auto shards = simulated_set(whole, 3);
    JobContext ctx;
    const auto result = scale(shards, ScaleOptions{}, ctx);
    std::vector<double> mean, var;
    dense_mean_var(dense, mean, var);
    bool saw_constant = false;
    for (std::size_t gene = 0; gene < mean.size(); ++gene) {
        EXPECT_NEAR(result.mean[gene], mean[gene], 1e-12 * (1 + mean[gene]));
        const double std = var[gene] > 0 ? std::sqrt(var[gene]) : 1.0;  // scanpy: std 0 -> 1
        saw_constant = saw_constant || var[gene] == 0;
        EXPECT_NEAR(result.std[gene], std, 1e-10 * std);
        EXPECT_DOUBLE_EQ(result.inv_std[gene], 1.0 / result.std[gene]);
    }
    EXPECT_TRUE(saw_constant) << "the simulation should contain all-zero genes";
    EXPECT_FALSE(result.max_value.has_value());
}

TEST(Scale, ClippingOptions) {
    const auto shards = simulated_set(step_counts(32), 2);
    JobContext ctx;
    ScaleOptions options;
    options.max_value = 10;
    auto result = scale(shards, options, ctx);
    EXPECT_EQ(result.max_value, 10.0);
    EXPECT_FALSE(result.min_value.has_value());
    options.clip_below = true;
    result = scale(shards, options, ctx);
    EXPECT_EQ(result.min_value, -10.0);
    const auto standardization = result.standardization();
    EXPECT_EQ(standardization.mean.size(), result.mean.size());
    EXPECT_TRUE(standardization.clipped());
    ScaleOptions bad;
    bad.max_value = 0;
    EXPECT_THROW(validate(bad), std::invalid_argument);
    ScaleOptions below_only;
    below_only.clip_below = true;
    EXPECT_THROW(validate(below_only), std::invalid_argument);
}

TEST(Scale, StopsWhenCancelled) {
    const auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    ctx.cancel();
    EXPECT_THROW(scale(shards, ScaleOptions{}, ctx), Cancelled);
}

}  // namespace
}  // namespace fathom::test
