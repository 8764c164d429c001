#include "core/data/PackedRows.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace fathom {
namespace {

/// Rows of `num_genes` columns whose entries have the given density; values drawn by
/// `value` (rng) -> float.
template <typename ValueFn>
CsrShard random_rows(std::int64_t num_rows, std::int64_t num_genes, double density, std::uint64_t seed, ValueFn value) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    CsrShard rows;
    rows.row_begin = 17;
    rows.num_genes = num_genes;
    for (std::int64_t row = 0; row < num_rows; ++row) {
        // Some rows empty, some dense, most at `density`.
        const double row_density = row % 11 == 3 ? 0.0 : row % 13 == 5 ? 0.9 : density;
        for (std::int64_t gene = 0; gene < num_genes; ++gene)
            if (unit(rng) < row_density) {
                rows.gene_indices.push_back(static_cast<std::int32_t>(gene));
                rows.values.push_back(value(rng));
            }
        rows.row_offsets.push_back(static_cast<std::int64_t>(rows.values.size()));
    }
    return rows;
}

void expect_same_bits(const CsrShard& expected, const CsrShard& actual) {
    EXPECT_EQ(actual.row_begin, expected.row_begin);
    EXPECT_EQ(actual.num_genes, expected.num_genes);
    ASSERT_EQ(actual.row_offsets, expected.row_offsets);
    ASSERT_EQ(actual.gene_indices, expected.gene_indices);
    ASSERT_EQ(actual.values.size(), expected.values.size());
    EXPECT_EQ(std::memcmp(actual.values.data(), expected.values.data(), 4 * expected.values.size()), 0);
}

TEST(PackedRows, CountsRoundTripBitForBitAndShrink) {
    // Raw UMI-like counts: mostly 1-3, a long tail, 28k genes at 7 % density.
    const CsrShard rows = random_rows(300, 28000, 0.07, 1, [](std::mt19937_64& rng) {
        std::geometric_distribution<int> tail(0.4);
        return static_cast<float>(1 + tail(rng) + (rng() % 200 == 0 ? 5000 : 0));
    });
    const PackedRows packed = pack_rows(rows);
    expect_same_bits(rows, unpack_rows(packed));
    // An index and a value in about a byte and a half, against 8 bytes as CSR.
    EXPECT_LT(static_cast<double>(packed.bytes.size()) / static_cast<double>(rows.nnz()), 2.0);
}

TEST(PackedRows, AnyFloatRoundTripsBitForBit) {
    // Non-integers, negative zero, NaN payloads, infinities, huge and tiny values, and
    // integers at and beyond the packed range share groups.
    const float specials[] = {0.0f, -0.0f, 0.5f, 1.0f, 3.0f, 16777216.0f, 2147483520.0f, 2147483648.0f, 1e30f,
                              -1.0f, -7.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::bit_cast<float>(0x7fc01234u)};
    const CsrShard rows = random_rows(200, 3000, 0.05, 2, [&](std::mt19937_64& rng) {
        return rng() % 3 == 0 ? specials[rng() % std::size(specials)] : static_cast<float>(rng() % 40);
    });
    expect_same_bits(rows, unpack_rows(pack_rows(rows)));
    // Whole groups of fractions, of zeros, and of one large count.
    for (const float value : {0.25f, 0.0f, 1.0e9f}) {
        const CsrShard same = random_rows(50, 5000, 0.2, 3, [&](std::mt19937_64&) { return value; });
        expect_same_bits(same, unpack_rows(pack_rows(same)));
    }
}

TEST(PackedRows, RowRangesUnpackAlone) {
    const CsrShard rows = random_rows(97, 2000, 0.1, 4, [](std::mt19937_64& rng) { return static_cast<float>(rng() % 9); });
    const PackedRows packed = pack_rows(rows);
    for (const auto& [first, last] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 97}, {0, 1}, {3, 4}, {5, 60}, {41, 97}, {96, 97}, {50, 50}}) {
        const auto from = rows.row_offsets[static_cast<std::size_t>(first)], to = rows.row_offsets[static_cast<std::size_t>(last)];
        std::vector<std::int32_t> genes(static_cast<std::size_t>(to - from));
        std::vector<float> values(static_cast<std::size_t>(to - from));
        unpack_rows(packed, first, last, genes.data(), values.data());
        EXPECT_TRUE(std::equal(genes.begin(), genes.end(), rows.gene_indices.begin() + from)) << first << ".." << last;
        EXPECT_TRUE(std::equal(values.begin(), values.end(), rows.values.begin() + from)) << first << ".." << last;
    }
    // A sub-range packed on its own.
    const PackedRows part = pack_rows(rows, 10, 30);
    EXPECT_EQ(part.row_begin, rows.row_begin + 10);
    const CsrShard back = unpack_rows(part);
    ASSERT_EQ(back.num_rows(), 20);
    EXPECT_TRUE(std::equal(back.gene_indices.begin(), back.gene_indices.end(), rows.gene_indices.begin() + rows.row_offsets[10]));
    EXPECT_THROW(unpack_rows(packed, 5, 98, nullptr, nullptr), std::out_of_range);
    EXPECT_THROW(pack_rows(rows, 10, 98), std::out_of_range);
}

TEST(PackedRows, EmptyRowsAndEmptyShards) {
    CsrShard empty;
    empty.num_genes = 10;
    expect_same_bits(empty, unpack_rows(pack_rows(empty)));
    CsrShard blank;
    blank.num_genes = 10;
    blank.row_offsets = {0, 0, 0, 0};
    expect_same_bits(blank, unpack_rows(pack_rows(blank)));
}

TEST(PackedRows, RejectsUnsortedOrOutOfRangeIndices) {
    CsrShard rows;
    rows.num_genes = 10;
    rows.row_offsets = {0, 2};
    rows.gene_indices = {4, 4};
    rows.values = {1.0f, 2.0f};
    try {
        pack_rows(rows);
        FAIL() << "a repeated index was packed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("row 0 has gene index 4 not after 4"), std::string::npos) << error.what();
    }
    rows.gene_indices = {3, 10};
    try {
        pack_rows(rows);
        FAIL() << "an index past the columns was packed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("outside [0, 10)"), std::string::npos) << error.what();
    }
}

TEST(PackedRows, NamesTheFirstBadRowOfALongShard) {
    const CsrShard good = random_rows(300, 2000, 0.1, 9, [](std::mt19937_64& rng) { return static_cast<float>(1 + rng() % 5); });
    // Row 250 (the 267th of the matrix) repeats an index deep inside the shard.
    CsrShard repeated = good;
    const auto at = static_cast<std::size_t>(repeated.row_offsets[250] + 5);
    ASSERT_LT(at + 1, static_cast<std::size_t>(repeated.row_offsets[251]));
    repeated.gene_indices[at + 1] = repeated.gene_indices[at];
    try {
        pack_rows(repeated);
        FAIL() << "a repeated index was packed";
    } catch (const std::invalid_argument& error) {
        const std::string expected = "row 267 has gene index " + std::to_string(repeated.gene_indices[at]) + " not after " +
                                     std::to_string(repeated.gene_indices[at]);
        EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
    // A negative index at the head of row 100, and a later one past the columns: the first is named.
    CsrShard negative = good;
    negative.gene_indices[static_cast<std::size_t>(negative.row_offsets[100])] = -3;
    negative.gene_indices[static_cast<std::size_t>(negative.row_offsets[200])] = 2000;
    try {
        pack_rows(negative);
        FAIL() << "a negative index was packed";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("row 117 has gene index -3 outside [0, 2000)"), std::string::npos)
            << error.what();
    }
    expect_same_bits(good, unpack_rows(pack_rows(good)));
}

}  // namespace
}  // namespace fathom
