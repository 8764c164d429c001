// Tests of core/algo/l2_kernel: the HNSW distance on zero-padded rows, and the dot-product
// tiles and screen of the IVF search.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cmath>
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

/// A packed block (dims x width, row-major, one point per column) of `points` columns
/// of random coordinates, zero beyond them.
std::vector<float> random_block(std::mt19937& random, std::size_t dims, std::size_t width, std::size_t points) {
    std::normal_distribution<float> normal(0.0f, 1.5f);
    std::vector<float> block(dims * width, 0.0f);
    for (std::size_t dim = 0; dim < dims; ++dim)
        for (std::size_t column = 0; column < points; ++column) block[dim * width + column] = normal(random);
    return block;
}

TEST(DotTile, EqualsTheDotProductsWhateverTheRowsAndWidth) {
    std::mt19937 random(9);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (const std::size_t dims : {1u, 7u, 50u}) {
        const std::size_t width = 5 * detail::kDotTileWidth;  // 32-lane kernels and a 16-lane remainder
        const auto block = random_block(random, dims, width, width - 3);
        std::vector<std::vector<float>> queries(4, std::vector<float>(dims));
        for (auto& query : queries)
            for (auto& value : query) value = normal(random);
        const float* rows[4] = {queries[0].data(), queries[1].data(), queries[2].data(), queries[3].data()};
        std::vector<float> all(4 * width, -1.0f);
        detail::dot_tile(rows, 4, block.data(), width, dims, all.data());
        for (std::size_t row = 0; row < 4; ++row)
            for (std::size_t column = 0; column < width; ++column) {
                double expected = 0.0, magnitude = 0.0;
                for (std::size_t dim = 0; dim < dims; ++dim) {
                    expected += static_cast<double>(queries[row][dim]) * block[dim * width + column];
                    magnitude += std::fabs(static_cast<double>(queries[row][dim]) * block[dim * width + column]);
                }
                ASSERT_NEAR(all[row * width + column], expected, 1e-6 * magnitude + 1e-30) << dims << " " << row << " " << column;
            }
        // The same query gives the same bits alone, in any slot of a smaller tile, and
        // against a narrower block holding the same leading columns (16-lane kernel).
        for (std::size_t count = 1; count <= 3; ++count) {
            const float* shifted[4] = {rows[3], rows[2], rows[1], rows[0]};
            std::vector<float> part(4 * width, -1.0f);
            detail::dot_tile(shifted + (4 - count), count, block.data(), width, dims, part.data());
            for (std::size_t slot = 0; slot < count; ++slot)
                for (std::size_t column = 0; column < width; ++column)
                    ASSERT_EQ(part[slot * width + column], all[(count - 1 - slot) * width + column]) << count << " " << slot;
            EXPECT_EQ(part[count * width], -1.0f) << "row " << count << " of a " << count << "-row tile was written";
        }
        const std::size_t narrow = detail::kDotTileWidth;
        std::vector<float> narrow_block(dims * narrow);
        for (std::size_t dim = 0; dim < dims; ++dim)
            for (std::size_t column = 0; column < narrow; ++column) narrow_block[dim * narrow + column] = block[dim * width + column];
        std::vector<float> narrow_products(narrow);
        detail::dot_tile(rows, 1, narrow_block.data(), narrow, dims, narrow_products.data());
        for (std::size_t column = 0; column < narrow; ++column) ASSERT_EQ(narrow_products[column], all[column]) << column;
    }
}

TEST(ColumnsBelow, ListsExactlyTheColumnsWhoseKeyPassesInOrder) {
    std::mt19937 random(10);
    std::uniform_int_distribution<int> small(-40, 40);
    const std::size_t width = 6 * detail::kDotTileWidth;
    // Integer values: norms - 2 dots is exact, so the expected set is unambiguous.
    std::vector<float> norms(width), dots(width);
    for (std::size_t column = 0; column < width; ++column) {
        norms[column] = static_cast<float>(small(random) + 100);
        dots[column] = static_cast<float>(small(random));
    }
    for (std::size_t column = 32; column < 48; ++column) norms[column] = INFINITY;  // a padded chunk never passes
    norms[5] = INFINITY;
    for (const float threshold : {-1000.0f, 0.0f, 30.0f, 100.0f, 141.0f, 1000.0f, INFINITY}) {
        std::vector<std::int32_t> expected;
        for (std::size_t column = 0; column < width; ++column)
            if (norms[column] - 2.0f * dots[column] <= threshold) expected.push_back(static_cast<std::int32_t>(column));
        std::vector<std::int32_t> got(width, -1);
        got.resize(detail::columns_below(norms.data(), dots.data(), width, threshold, got.data()));
        EXPECT_EQ(got, expected) << "threshold " << threshold;
    }
    std::vector<std::int32_t> out(width);
    EXPECT_EQ(detail::columns_below(norms.data(), dots.data(), width, 1000.0f, out.data()), width - 17);
    EXPECT_EQ(detail::columns_below(norms.data(), dots.data(), width, NAN, out.data()), 0u);
}

TEST(ExactSqDistances, GiveTheBitsOfExactSqDistance) {
    std::mt19937 random(11);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const int dims = 13;
    const std::size_t stride = detail::l2_padded_size(dims);
    std::vector<float> rows(20 * stride, 0.0f);
    for (std::size_t row = 0; row < 20; ++row)
        for (int dim = 0; dim < dims; ++dim) rows[row * stride + static_cast<std::size_t>(dim)] = normal(random);
    const std::vector<std::int32_t> picks{4, 19, 0, 4, 7, 12, 3};
    std::vector<double> out(picks.size());
    detail::exact_sq_distances(rows.data() + stride, rows.data(), stride, dims, picks.data(), static_cast<int>(picks.size()),
                               out.data());
    for (std::size_t item = 0; item < picks.size(); ++item)
        EXPECT_EQ(out[item], detail::exact_sq_distance(rows.data() + stride,
                                                       rows.data() + static_cast<std::size_t>(picks[item]) * stride, dims));
}

}  // namespace
}  // namespace fathom
