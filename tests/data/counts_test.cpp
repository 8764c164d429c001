// The count test (core/data/counts.hpp) against its definition, value >= 0 and
// value == floor(value), on special values and random bit patterns.
#include "core/data/counts.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace fathom {
namespace {

bool reference(float value) { return value >= 0.0f && value == std::floor(value); }

TEST(Counts, IsCountAgreesWithFloorOnSpecialValues) {
    const float infinity = std::numeric_limits<float>::infinity();
    const std::vector<float> values{0.0f,         -0.0f,         1.0f,          -1.0f,       0.5f,        1.5f,
                                    2.0f,         8388607.0f,    8388607.5f,    8388608.0f,  8388609.0f,  16777216.0f,
                                    2147483520.0f, 2147483648.0f, 4294967296.0f, 1e30f,      3.4e38f,     infinity,
                                    -infinity,    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                                    std::numeric_limits<float>::min(), std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f),
                                    -0.5f,        -8388608.0f};
    for (float value : values) EXPECT_EQ(is_count(value), reference(value)) << value;
    EXPECT_TRUE(is_count(-0.0f));
    EXPECT_TRUE(is_count(infinity));
    EXPECT_FALSE(is_count(std::numeric_limits<float>::quiet_NaN()));
}

TEST(Counts, IsCountAgreesWithFloorOnRandomBitsAndSmallValues) {
    std::mt19937 rng(5);
    for (int draw = 0; draw < 2'000'000; ++draw) {
        const float value = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
        ASSERT_EQ(is_count(value), reference(value)) << value;
    }
    // Every quarter step from -100 to 10^5, where counts live.
    for (int quarter = -400; quarter < 400'000; ++quarter) {
        const float value = static_cast<float>(quarter) / 4.0f;
        ASSERT_EQ(is_count(value), reference(value)) << value;
    }
}

TEST(Counts, AllCountsFindsAnyNonCountInAnyBlock) {
    std::vector<float> values(10'000);
    for (std::size_t index = 0; index < values.size(); ++index) values[index] = static_cast<float>(index % 37);
    EXPECT_TRUE(all_counts(values));
    EXPECT_TRUE(all_counts(std::span<const float>{}));
    for (std::size_t at : {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, std::size_t{9999}}) {
        for (float bad : {0.25f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
            std::vector<float> copy = values;
            copy[at] = bad;
            EXPECT_FALSE(all_counts(copy)) << "value " << bad << " at " << at;
        }
    }
}

}  // namespace
}  // namespace fathom
