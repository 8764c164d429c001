// CpuBackend::count_stats (the streamed first pass's fused statistics) gives the bits of
// the separate primitives it replaces: row_stats, the raw and row-scaled column_stats
// and values_are_counts.
#include <gtest/gtest.h>

#include <tbb/global_control.h>

#include <cstring>
#include <random>

#include "core/backend/CpuBackend.hpp"

namespace fathom {
namespace {

/// Rows of counts over `genes` columns (some rows empty), several hundred thousand
/// entries so that the reduction runs on many lanes.
CsrShard count_rows(std::int64_t rows, std::int64_t genes, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::geometric_distribution<int> tail(0.35);
    CsrShard shard;
    shard.row_begin = 1000;
    shard.num_genes = genes;
    for (std::int64_t row = 0; row < rows; ++row) {
        const double density = row % 17 == 4 ? 0.0 : 0.02 + 0.2 * unit(rng);
        for (std::int64_t gene = 0; gene < genes; ++gene)
            if (unit(rng) < density) {
                shard.gene_indices.push_back(static_cast<std::int32_t>(gene));
                shard.values.push_back(static_cast<float>(1 + tail(rng)));
            }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    return shard;
}

template <typename T>
void expect_same_bits(const std::vector<T>& actual, const std::vector<T>& expected, const char* what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    EXPECT_EQ(std::memcmp(actual.data(), expected.data(), sizeof(T) * expected.size()), 0) << what;
}

void expect_primitives_bits(const CsrShard& shard) {
    JobContext ctx;
    const CpuBackend backend(shard, 0);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(shard.num_genes), 0);
    for (std::size_t gene = 0; gene < mask.size(); gene += 7) mask[gene] = 1;
    const CpuBackend::CountStats fused = backend.count_stats(mask, ctx);

    const RowStats rows = backend.row_stats(mask, ctx);
    expect_same_bits(fused.rows.total, rows.total, "total");
    expect_same_bits(fused.rows.nnz, rows.nnz, "nnz");
    expect_same_bits(fused.rows.subset_total, rows.subset_total, "subset_total");
    const ColumnStats raw = backend.column_stats(ColumnStatsRequest{}, ctx);
    expect_same_bits(fused.raw_sum, raw.sum, "raw sum");
    expect_same_bits(fused.raw_nnz, raw.nnz, "raw nnz");
    std::vector<double> inverse_total;
    for (double total : rows.total) inverse_total.push_back(total > 0.0 ? 1.0 / total : 0.0);
    ColumnStatsRequest scaled;
    scaled.row_scale = inverse_total;
    const ColumnStats normalized = backend.column_stats(scaled, ctx);
    expect_same_bits(fused.scaled_sum, normalized.sum, "scaled sum");
    expect_same_bits(fused.scaled_sum_squares, normalized.sum_squares, "scaled sum of squares");
    EXPECT_EQ(fused.counts, backend.values_are_counts(ctx));
    EXPECT_TRUE(backend.count_stats({}, ctx).rows.subset_total.empty());
}

TEST(CpuBackendCountStats, SameBitsAsThePrimitivesOnCounts) {
    const CsrShard shard = count_rows(3000, 2500, 3);
    ASSERT_GT(shard.nnz(), 16 * 32768) << "too few entries for every lane";
    expect_primitives_bits(shard);
    JobContext ctx;
    EXPECT_TRUE(CpuBackend(shard, 0).count_stats({}, ctx).counts);
}

TEST(CpuBackendCountStats, SameBitsOnNormalisedValuesAndForAnyThreadCount) {
    CsrShard shard = count_rows(2000, 3000, 4);
    for (std::size_t entry = 0; entry < shard.values.size(); entry += 97) shard.values[entry] *= 0.37f;
    expect_primitives_bits(shard);
    JobContext ctx;
    EXPECT_FALSE(CpuBackend(shard, 0).count_stats({}, ctx).counts);
    const CpuBackend::CountStats threads = CpuBackend(shard, 0).count_stats({}, ctx);
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    const CpuBackend::CountStats single = CpuBackend(shard, 0).count_stats({}, ctx);
    expect_same_bits(single.scaled_sum_squares, threads.scaled_sum_squares, "one thread");
    expect_same_bits(single.raw_sum, threads.raw_sum, "one thread");
}

TEST(CpuBackendCountStats, EmptyShardAndBadMask) {
    CsrShard empty;
    empty.num_genes = 5;
    JobContext ctx;
    const CpuBackend::CountStats stats = CpuBackend(empty, 0).count_stats({}, ctx);
    EXPECT_TRUE(stats.rows.total.empty());
    EXPECT_EQ(stats.raw_sum, std::vector<double>(5, 0.0));
    EXPECT_TRUE(stats.counts);
    const std::vector<std::uint8_t> short_mask(3, 1);
    EXPECT_THROW(CpuBackend(empty, 0).count_stats(short_mask, ctx), std::invalid_argument);
}

}  // namespace
}  // namespace fathom
