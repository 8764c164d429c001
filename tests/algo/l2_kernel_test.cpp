// Tests of core/algo/l2_kernel: the HNSW distance on zero-padded rows.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/algo/l2_kernel.hpp"

namespace fathom {
namespace {

TEST(L2Kernel, PaddedSizeRoundsUpToTheLanes) {
    EXPECT_EQ(detail::l2_padded_size(1), detail::kL2Lanes);
    EXPECT_EQ(detail::l2_padded_size(8), 8u);
    EXPECT_EQ(detail::l2_padded_size(50), 56u);
    EXPECT_EQ(detail::l2_padded_size(64), 64u);
}

TEST(L2Kernel, EqualsTheSquaredDistanceOfTheUnpaddedRows) {
    std::mt19937 random(7);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const std::size_t dims : {1u, 7u, 8u, 9u, 50u, 64u, 100u}) {
        const std::size_t stride = detail::l2_padded_size(dims);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<float> a(stride, 0.0f), b(stride, 0.0f);
            double expected = 0.0;
            for (std::size_t index = 0; index < dims; ++index) {
                a[index] = normal(random);
                b[index] = normal(random);
                const double difference = static_cast<double>(a[index]) - b[index];
                expected += difference * difference;
            }
            const float got = detail::l2_padded(a.data(), b.data(), &stride);
            EXPECT_NEAR(got, expected, 1e-5 * expected + 1e-6) << dims << " dims";
            EXPECT_EQ(detail::l2_padded(a.data(), a.data(), &stride), 0.0f);
            EXPECT_EQ(got, detail::l2_padded(b.data(), a.data(), &stride)) << "not symmetric at " << dims << " dims";
        }
    }
}

TEST(L2Kernel, ManyRowsGiveTheSameBitsAsOnePairAtATime) {
    std::mt19937 random(8);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (const std::size_t dims : {3u, 8u, 50u}) {
        const std::size_t stride = detail::l2_padded_size(dims);
        const std::size_t num_rows = 23;
        std::vector<float> rows(num_rows * stride, 0.0f);
        for (std::size_t row = 0; row < num_rows; ++row)
            for (std::size_t index = 0; index < dims; ++index) rows[row * stride + index] = normal(random);
        // Every count from 0 to 11 (the four-row blocks and the remainders), rows repeated.
        const std::vector<std::int32_t> picks{5, 0, 22, 5, 13, 7, 7, 1, 19, 2, 11, 8};
        for (std::size_t count = 0; count <= picks.size(); ++count) {
            std::vector<float> out(count, -1.0f);
            detail::l2_padded_many(rows.data() + 3 * stride, rows.data(), stride, picks.data(), count, out.data());
            for (std::size_t item = 0; item < count; ++item) {
                const float* other = rows.data() + static_cast<std::size_t>(picks[item]) * stride;
                EXPECT_EQ(out[item], detail::l2_padded(rows.data() + 3 * stride, other, &stride)) << dims << " " << item;
                EXPECT_EQ(out[item], detail::l2_padded(other, rows.data() + 3 * stride, &stride)) << dims << " " << item;
            }
        }
    }
}

}  // namespace
}  // namespace fathom
