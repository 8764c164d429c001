#include "core/data/ShardedCsr.hpp"

#include <gtest/gtest.h>

namespace fathom {
namespace {

TEST(SplitRows, EvenSplitCoversAllRowsAndDiffersByAtMostOne) {
    for (int shards : {1, 2, 3, 7}) {
        const auto ranges = split_rows_evenly(100, shards);
        ASSERT_EQ(static_cast<int>(ranges.size()), shards);
        EXPECT_EQ(ranges.front().begin, 0);
        EXPECT_EQ(ranges.back().end, 100);
        for (std::size_t index = 1; index < ranges.size(); ++index) {
            EXPECT_EQ(ranges[index].begin, ranges[index - 1].end);
            EXPECT_LE(std::abs(ranges[index].size() - ranges[0].size()), 1);
        }
    }
}

TEST(SplitRows, ByNnzBalancesSkewedRows) {
    // 10 rows: the first holds 90 of 100 non-zeros.
    std::vector<std::int64_t> offsets{0, 90, 91, 92, 93, 94, 95, 96, 97, 98, 100};
    const auto ranges = split_rows_by_nnz(offsets, 2);
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0], (RowRange{0, 1}));
    EXPECT_EQ(ranges[1], (RowRange{1, 10}));
}

TEST(ShardedCsr, RejectsGapsBetweenShards) {
    CsrShard first;
    first.num_genes = 3;
    first.row_offsets = {0, 0};
    CsrShard second = first;
    second.row_begin = 2;
    EXPECT_THROW(ShardedCsr(MatrixShape{3, 3}, {first, second}), std::invalid_argument);
    second.row_begin = 1;
    second.row_offsets = {0, 0, 0};
    ShardedCsr matrix(MatrixShape{3, 3}, {first, second});
    EXPECT_EQ(matrix.num_shards(), 2);
    EXPECT_EQ(matrix.nnz(), 0);
}

}  // namespace
}  // namespace fathom
