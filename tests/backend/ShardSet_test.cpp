// ShardSet reductions: shard-count invariance, thread-count invariance, run-to-run
// identity, global/local slicing, and DeviceSpec parsing.
#include <gtest/gtest.h>

#include <tbb/global_control.h>

#include <cmath>

#include "core/backend/ShardSet.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

CsrShard matrix(std::uint64_t seed = 3, std::int64_t cells = 700) {
    SimulationOptions options;
    options.num_cells = cells;
    options.num_genes = 45;
    options.density = 0.25;
    options.seed = seed;
    return simulate_counts(options);
}

ShardSet shard_set(const CsrShard& whole, int shards) { return ShardSet::make_cpu(split_evenly(whole, shards)); }

struct Outputs {
    ColumnStats stats;
    GramResult gram;
    GramResult clipped_gram;
    DenseMatrix<double> scores;
    RowStats rows;
    std::vector<float> column;
};

Outputs compute(const ShardSet& shards) {
    JobContext ctx;
    Outputs out;
    const auto genes = static_cast<std::size_t>(shards.num_genes());
    std::vector<double> scale(static_cast<std::size_t>(shards.num_cells()));
    for (std::size_t row = 0; row < scale.size(); ++row) scale[row] = 1.0 / (1.0 + static_cast<double>(row % 13));
    ColumnStatsRequest request;
    request.row_scale = scale;
    request.transform = ElementTransform::Log1p;
    out.stats = shards.column_stats(request, ctx);
    std::vector<double> mean(genes), inv_std(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        mean[gene] = 0.1 * static_cast<double>(gene % 5) + 0.2;
        inv_std[gene] = 1.0 / (0.5 + 0.05 * static_cast<double>(gene));
    }
    out.gram = shards.gram({}, Standardization{mean, inv_std, {}, {}}, ctx);
    out.clipped_gram = shards.gram({}, Standardization{mean, inv_std, 3.0, {}}, ctx);
    DenseMatrix<double> loadings(static_cast<std::int64_t>(genes), 3);
    for (std::int64_t gene = 0; gene < loadings.rows(); ++gene)
        for (std::int64_t component = 0; component < 3; ++component) loadings(gene, component) = std::cos(static_cast<double>(gene + 7 * component));
    ProjectionRequest projection;
    projection.standardization = Standardization{mean, inv_std, {}, {}};
    projection.loadings = &loadings;
    out.scores = shards.project(projection, ctx);
    out.rows = shards.row_stats({}, ctx);
    out.column = shards.gene_column(4, ctx);
    return out;
}

double max_relative(const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double worst = 0;
    double scale = 0;
    for (double value : a) scale = std::max(scale, std::abs(value));
    for (std::size_t index = 0; index < a.size() && index < b.size(); ++index)
        worst = std::max(worst, std::abs(a[index] - b[index]) / std::max(scale, 1e-300));
    return worst;
}

TEST(ShardSet, ReductionsAgreeAcrossShardCounts) {
    const auto whole = matrix();
    const auto reference = compute(shard_set(whole, 1));
    for (int shards : {2, 3, 7}) {
        const auto other = compute(shard_set(whole, shards));
        EXPECT_LE(max_relative(reference.stats.sum, other.stats.sum), 1e-12) << shards;
        EXPECT_LE(max_relative(reference.stats.sum_squares, other.stats.sum_squares), 1e-12) << shards;
        EXPECT_EQ(reference.stats.nnz, other.stats.nnz);
        EXPECT_LE(max_relative(reference.gram.gram.values(), other.gram.gram.values()), 1e-10) << shards;
        EXPECT_LE(max_relative(reference.gram.column_sums, other.gram.column_sums), 1e-10) << shards;
        EXPECT_LE(max_relative(reference.clipped_gram.gram.values(), other.clipped_gram.gram.values()), 1e-10) << shards;
        EXPECT_LE(max_relative(reference.scores.values(), other.scores.values()), 1e-12) << shards;
        EXPECT_EQ(reference.rows.total, other.rows.total);
        EXPECT_EQ(reference.column, other.column);
    }
}

TEST(ShardSet, ThreadCountDoesNotChangeAnyBit) {
    // Large enough that every shard is split into several lanes (> 2^15 nnz each).
    const auto whole = matrix(5, 24000);
    ASSERT_GT(whole.nnz() / 3, std::int64_t{1} << 15);
    Outputs single, several;
    {
        tbb::global_control control(tbb::global_control::max_allowed_parallelism, 1);
        single = compute(shard_set(whole, 3));
    }
    {
        tbb::global_control control(tbb::global_control::max_allowed_parallelism, 2);
        several = compute(shard_set(whole, 3));
    }
    EXPECT_EQ(single.stats.sum, several.stats.sum);
    EXPECT_EQ(single.stats.sum_squares, several.stats.sum_squares);
    EXPECT_EQ(single.gram.gram, several.gram.gram);
    EXPECT_EQ(single.clipped_gram.gram, several.clipped_gram.gram);
    EXPECT_EQ(single.scores, several.scores);
}

TEST(ShardSet, RunToRunBitIdentical) {
    const auto whole = matrix(9);
    const auto first = compute(shard_set(whole, 7));
    const auto second = compute(shard_set(whole, 7));
    EXPECT_EQ(first.stats.sum, second.stats.sum);
    EXPECT_EQ(first.gram.gram, second.gram.gram);
    EXPECT_EQ(first.scores, second.scores);
}

TEST(ShardSet, SubsetRowsRenumbersShardsAndKeepsOrder) {
    const auto whole = matrix(11);
    auto shards = shard_set(whole, 4);
    JobContext ctx;
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(whole.num_rows()));
    std::vector<std::int64_t> kept;
    for (std::size_t row = 0; row < keep.size(); ++row) {
        // Drop all of shard 1's rows and every third row elsewhere.
        keep[row] = (row >= 175 && row < 350) || row % 3 == 0 ? 0 : 1;
        if (keep[row]) kept.push_back(static_cast<std::int64_t>(row));
    }
    const auto before = shards.gene_column(2, ctx);
    shards.subset_rows(keep, ctx);
    EXPECT_EQ(shards.num_cells(), static_cast<std::int64_t>(kept.size()));
    const auto ranges = shards.row_ranges();
    EXPECT_EQ(ranges[1].size(), 0);
    for (std::size_t index = 1; index < ranges.size(); ++index) EXPECT_EQ(ranges[index].begin, ranges[index - 1].end);
    const auto after = shards.gene_column(2, ctx);
    ASSERT_EQ(after.size(), kept.size());
    for (std::size_t row = 0; row < kept.size(); ++row) EXPECT_EQ(after[row], before[static_cast<std::size_t>(kept[row])]);
    std::vector<std::uint8_t> keep_genes(static_cast<std::size_t>(shards.num_genes()), 1);
    keep_genes[0] = 0;
    shards.subset_columns(keep_genes, ctx);
    EXPECT_EQ(shards.num_genes(), whole.num_genes - 1);
    EXPECT_NO_THROW(shards.to_host());
    EXPECT_THROW(shards.subset_rows(std::vector<std::uint8_t>(3, 1), ctx), std::invalid_argument);
}

TEST(ShardSet, CloneAndDescribe) {
    const auto whole = matrix();
    auto shards = shard_set(whole, 2);
    EXPECT_EQ(shards.describe(), "cpu:0,cpu:1");
    auto copy = shards.clone();
    JobContext ctx;
    shards.log1p(ctx);
    EXPECT_EQ(copy.to_host().shard(0).values, split_evenly(whole, 2).shard(0).values);
}

TEST(DeviceSpec, ParsesCpuAndCudaForms) {
    EXPECT_EQ(DeviceSpec::parse("cpu").num_cpu_shards, 1);
    const auto cpu = DeviceSpec::parse("cpu:7");
    EXPECT_EQ(cpu.kind, BackendKind::Cpu);
    EXPECT_EQ(cpu.num_shards(), 7);
    EXPECT_EQ(cpu.to_string(), "cpu:7");
    const auto cuda = DeviceSpec::parse("cuda:0,2");
    EXPECT_EQ(cuda.kind, BackendKind::Cuda);
    EXPECT_EQ(cuda.cuda_devices, (std::vector<int>{0, 2}));
    EXPECT_EQ(cuda.to_string(), "cuda:0,2");
    EXPECT_TRUE(DeviceSpec::parse("cuda").cuda_devices.empty());
}

TEST(DeviceSpec, RejectsBadTextNamingTheOption) {
    for (const char* text : {"cpu:0", "cpu:x", "cpu:", "tpu:1", "cuda:1,1", "cuda:0,", "cpu:-2", ""}) {
        try {
            DeviceSpec::parse(text);
            ADD_FAILURE() << "accepted '" << text << "'";
        } catch (const std::invalid_argument& error) {
            EXPECT_NE(std::string(error.what()).find("--devices"), std::string::npos) << error.what();
        }
    }
}

TEST(ShardPlan, ByNnzAndEvenly) {
    const auto whole = matrix();
    const auto by_nnz = plan_row_ranges(whole.row_offsets, 3);
    ASSERT_EQ(by_nnz.size(), 3u);
    EXPECT_EQ(by_nnz.back().end, whole.num_rows());
    const auto even = plan_row_ranges(whole.row_offsets, 3, ShardBalance::Evenly);
    EXPECT_EQ(even[0].size(), 234);
}

}  // namespace
}  // namespace fathom::test
