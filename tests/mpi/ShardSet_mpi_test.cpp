// A ShardSet spread over the ranks of an MPI run (ShardSet::distributed) against one
// process holding the same global shards: every reduction bit-identical, rows gathered
// in order, row subsets renumbered alike. Started by mpiexec with 2 and 3 ranks
// (tests/CMakeLists.txt); each rank holds two of the 2 x ranks shards.
#include <gtest/gtest.h>

#include <cmath>

#include "app/cli/mpi_comm.hpp"
#include "core/backend/CpuBackend.hpp"
#include "core/backend/ShardSet.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

constexpr int k_shards_per_rank = 2;

CsrShard matrix() {
    SimulationOptions options;
    options.num_cells = 701;  // not a multiple of any shard count
    options.num_genes = 47;
    options.density = 0.25;
    options.seed = 17;
    return simulate_counts(options);
}

/// This rank's part of the global shards (the whole set when `comm` is null).
ShardSet shard_set(const std::shared_ptr<Comm>& comm, int total_shards) {
    ShardedCsr split = split_evenly(matrix(), total_shards);
    if (!comm) return ShardSet::make_cpu(std::move(split));
    std::vector<RowRange> layout;
    for (const auto& shard : split.shards()) layout.push_back({shard.row_begin, shard.row_end()});
    const int first = comm->rank() * k_shards_per_rank;
    std::vector<std::unique_ptr<Backend>> local;
    for (int index = first; index < first + k_shards_per_rank; ++index)
        local.push_back(std::make_unique<CpuBackend>(std::move(split.shard(index)), index));
    return ShardSet::distributed(std::move(local), split.num_genes(), comm, std::move(layout), first);
}

struct Outputs {
    ColumnStats stats;
    GroupColumnStats groups;
    GramResult gram;
    DenseMatrix<double> scores;
    RowStats rows;
    std::vector<float> column;
    std::vector<std::vector<float>> columns;
    std::int64_t nnz = 0;
    ColumnStats subset_stats;
    GramResult block_gram;
    std::vector<RowRange> subset_ranges;
};

Outputs compute(const ShardSet& original) {
    JobContext ctx;
    Outputs out;
    ShardSet shards = original.clone();
    const auto genes = static_cast<std::size_t>(shards.num_genes());
    const auto cells = static_cast<std::size_t>(shards.num_cells());
    std::vector<double> scale(cells);
    for (std::size_t row = 0; row < cells; ++row) scale[row] = 1.0 / (1.0 + static_cast<double>(row % 13));
    ColumnStatsRequest request;
    request.row_scale = scale;
    request.transform = ElementTransform::Log1p;
    out.stats = shards.column_stats(request, ctx);
    std::vector<std::int32_t> labels(cells);
    for (std::size_t row = 0; row < cells; ++row) labels[row] = static_cast<std::int32_t>((row * 7) % 4);
    out.groups = shards.group_column_stats(labels, 4, ColumnStatsRequest{}, ctx);
    std::vector<double> mean(genes), inv_std(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        mean[gene] = 0.1 * static_cast<double>(gene % 5) + 0.2;
        inv_std[gene] = 1.0 / (0.5 + 0.05 * static_cast<double>(gene));
    }
    out.gram = shards.gram({}, Standardization{mean, inv_std, 3.0, {}}, ctx);
    DenseMatrix<double> loadings(static_cast<std::int64_t>(genes), 3);
    for (std::int64_t gene = 0; gene < loadings.rows(); ++gene)
        for (std::int64_t component = 0; component < 3; ++component)
            loadings(gene, component) = std::cos(static_cast<double>(gene + 7 * component));
    ProjectionRequest projection;
    projection.standardization = Standardization{mean, inv_std, {}, {}};
    projection.loadings = &loadings;
    out.scores = shards.project(projection, ctx);
    out.rows = shards.row_stats({}, ctx);
    out.column = shards.gene_column(4, ctx);
    const std::vector<std::int32_t> wanted = {1, 9, 30};
    out.columns = shards.gene_columns(wanted, ctx);
    out.nnz = shards.nnz();
    // In place: a row subset (renumbered across ranks), log1p, then the same statistics.
    std::vector<std::uint8_t> keep(cells);
    for (std::size_t row = 0; row < cells; ++row) keep[row] = (row % 3 != 1) || row > 650;
    shards.subset_rows(keep, ctx);
    shards.log1p(ctx);
    out.subset_stats = shards.column_stats(ColumnStatsRequest{}, ctx);
    out.subset_ranges = shards.row_ranges();
    std::vector<std::uint8_t> block(genes, 0);
    for (std::size_t gene = 0; gene < genes; gene += 3) block[gene] = 1;
    const ShardSet narrow = shards.clone_columns(block, ctx);
    std::vector<double> narrow_mean(static_cast<std::size_t>(narrow.num_genes()), 0.5);
    std::vector<double> narrow_inv(static_cast<std::size_t>(narrow.num_genes()), 2.0);
    out.block_gram = narrow.gram({}, Standardization{narrow_mean, narrow_inv, {}, {}}, ctx);
    return out;
}

TEST(DistributedShardSet, EveryReductionIsBitIdenticalToOneProcessWithTheSameShards) {
    const std::shared_ptr<Comm> comm = cli::process_comm();
    ASSERT_GE(comm->size(), 2) << "start this test with mpiexec -n 2 or more";
    const int total = comm->size() * k_shards_per_rank;
    const ShardSet spread = shard_set(comm, total);
    EXPECT_EQ(spread.num_shards(), total);
    EXPECT_EQ(spread.num_local_shards(), k_shards_per_rank);
    EXPECT_EQ(spread.num_cells(), 701);
    EXPECT_THROW(spread.to_host(), std::logic_error) << "the matrix is never gathered";
    const int other = (spread.first_local_shard() + k_shards_per_rank) % total;
    EXPECT_THROW((void)spread.shard(other), std::out_of_range);

    const Outputs got = compute(spread);
    const Outputs want = compute(shard_set(nullptr, total));
    EXPECT_EQ(got.stats.sum, want.stats.sum);
    EXPECT_EQ(got.stats.sum_squares, want.stats.sum_squares);
    EXPECT_EQ(got.stats.nnz, want.stats.nnz);
    EXPECT_EQ(got.stats.num_rows, want.stats.num_rows);
    EXPECT_EQ(got.groups.group_sizes, want.groups.group_sizes);
    EXPECT_EQ(got.groups.sum.values(), want.groups.sum.values());
    EXPECT_EQ(got.groups.sum_squares.values(), want.groups.sum_squares.values());
    EXPECT_EQ(got.groups.nnz.values(), want.groups.nnz.values());
    EXPECT_EQ(got.gram.gram.values(), want.gram.gram.values());
    EXPECT_EQ(got.gram.column_sums, want.gram.column_sums);
    EXPECT_EQ(got.gram.num_rows, want.gram.num_rows);
    EXPECT_EQ(got.scores.values(), want.scores.values());
    EXPECT_EQ(got.rows.total, want.rows.total);
    EXPECT_EQ(got.rows.nnz, want.rows.nnz);
    EXPECT_EQ(got.column, want.column);
    EXPECT_EQ(got.columns, want.columns);
    EXPECT_EQ(got.nnz, want.nnz);
    EXPECT_EQ(got.subset_ranges, want.subset_ranges);
    EXPECT_EQ(got.subset_stats.sum, want.subset_stats.sum);
    EXPECT_EQ(got.subset_stats.num_rows, want.subset_stats.num_rows);
    EXPECT_EQ(got.block_gram.gram.values(), want.block_gram.gram.values());
    // Only partials travelled: far less than the matrix itself per reduction.
    EXPECT_GT(comm->bytes_received(), 0);
}

TEST(DistributedShardSet, ALayoutThatDisagreesWithTheShardsIsRefused) {
    const std::shared_ptr<Comm> comm = cli::process_comm();
    ShardedCsr split = split_evenly(matrix(), 2);
    std::vector<RowRange> layout = {{0, 300}, {300, 701}};
    std::vector<std::unique_ptr<Backend>> local;
    local.push_back(std::make_unique<CpuBackend>(std::move(split.shard(0)), 0));
    EXPECT_THROW(ShardSet::distributed(std::move(local), split.num_genes(), comm, layout, 0), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::test
