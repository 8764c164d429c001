// Tests of core/algo/fast_pow.hpp against the C library's logf, expf and powf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/algo/fast_pow.hpp"

namespace fathom::detail {
namespace {

/// Relative error of `value` against the double-precision `truth`.
double relative_error(float value, double truth) { return std::fabs(static_cast<double>(value) - truth) / std::fabs(truth); }

/// x from 2^-126 (the smallest normal float) to 2^127 in steps of 2^(1/64), plus the
/// neighbours of 1, where log's result is small.
std::vector<float> positive_grid() {
    std::vector<float> xs;
    for (int step = -126 * 64; step <= 127 * 64; ++step) xs.push_back(std::exp2(static_cast<float>(step) / 64.0f));
    for (int ulps = -64; ulps <= 64; ++ulps) xs.push_back(1.0f + static_cast<float>(ulps) * 1e-7f);
    return xs;
}

TEST(FastPow, LogMatchesTheLibraryOverAllNormalFloats) {
    double worst = 0.0;
    for (const float x : positive_grid()) {
        const double truth = std::log(static_cast<double>(x));
        // Absolute near x = 1 (log ~ 0), relative elsewhere.
        const double error = std::fabs(static_cast<double>(fast_log(x)) - truth) / std::max(1.0, std::fabs(truth));
        worst = std::max(worst, error);
    }
    std::printf("[fast_pow] log: worst error %.3g\n", worst);
    EXPECT_LT(worst, 3e-7);
    // Zero and subnormals count as the smallest normal float.
    EXPECT_FLOAT_EQ(fast_log(0.0f), std::log(std::numeric_limits<float>::min()));
    EXPECT_FLOAT_EQ(fast_log(1e-40f), std::log(std::numeric_limits<float>::min()));
}

TEST(FastPow, ExpMatchesTheLibraryAndSaturates) {
    double worst = 0.0;
    for (int step = -87 * 256; step <= 88 * 256; ++step) {
        const float x = static_cast<float>(step) / 256.0f;
        worst = std::max(worst, relative_error(fast_exp(x), std::exp(static_cast<double>(x))));
    }
    std::printf("[fast_pow] exp: worst relative error %.3g\n", worst);
    EXPECT_LT(worst, 3e-7);
    EXPECT_TRUE(std::isfinite(fast_exp(1000.0f)));
    EXPECT_GT(fast_exp(1000.0f), 1e38f);
    EXPECT_GE(fast_exp(-1000.0f), 0.0f);
    EXPECT_LT(fast_exp(-1000.0f), 1e-37f);
}

TEST(FastPow, PowMatchesTheLibraryForUmapExponents) {
    // b of find_ab_params for min_dist 0.5 and 0.1, and a wider range of exponents.
    for (const float exponent : {1.3350f, 0.8951f, 0.5f, 1.0f, 2.0f, 3.7f}) {
        double worst = 0.0, worst_scaled = 0.0;
        for (const float x : positive_grid()) {
            const double truth = std::pow(static_cast<double>(x), static_cast<double>(exponent));
            // Where the result is a normal float.
            if (!(truth > 1e-37 && truth < 1e37)) continue;
            const double error = relative_error(fast_pow(x, exponent), truth);
            worst = std::max(worst, error);
            // exp(y ln x) rounds y ln x to a float first: the error grows with |y ln x|.
            worst_scaled = std::max(worst_scaled, error / (1.0 + std::fabs(std::log(truth))));
            if (truth > 1e-6 && truth < 1e6) {
                EXPECT_LT(error, 3e-6) << "x " << x << " exponent " << exponent;
            }
        }
        std::printf("[fast_pow] pow(x, %.4f): worst relative error %.3g, %.3g x (1 + |y ln x|)\n", exponent, worst,
                    worst_scaled);
        EXPECT_LT(worst_scaled, 2e-7) << "exponent " << exponent;
    }
    EXPECT_EQ(fast_pow(1.0f, 1.335f), 1.0f);
    EXPECT_NEAR(fast_pow(4.0f, 0.5f), 2.0f, 1e-6f);
}

}  // namespace
}  // namespace fathom::detail
