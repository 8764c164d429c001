// Tests of the out-of-core passes (core/engine/detail/Streaming): the results do not
// depend on the block size, i.e. on how the reads are split and overlapped, nor on how
// many ranks stream the same shards.
#include "core/engine/detail/Streaming.hpp"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "core/backend/CpuBackend.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/ShardedCsrSource.hpp"
#include "core/io/synth.hpp"
#include "tests/support/page_cache.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/simulate.hpp"
#include "tests/support/thread_comm.hpp"

namespace fathom::detail {
namespace {

std::string dataset() {
    static const std::string path = [] {
        const std::string file = (test::temp_dir("streaming") / "synthetic.h5").string();
        io::SynthOptions options;
        options.num_cells = 1000;
        options.num_genes = 400;
        options.num_cell_types = 3;
        options.markers_per_type = 10;
        options.seed = 11;
        io::write_synthetic(file, options);
        return file;
    }();
    return path;
}

TEST(Streaming, StatisticsDoNotDependOnTheBlockSize) {
    io::OpenedDataset opened = io::open_dataset(dataset());
    const auto& names = opened.meta.var.index();
    JobContext ctx;
    const StreamedStats whole = stream_statistics(*opened.source, names, ctx, 1 << 20);
    for (const std::int64_t block_rows : {37, 128, 999}) {
        io::OpenedDataset again = io::open_dataset(dataset());
        const StreamedStats blocks = stream_statistics(*again.source, names, ctx, block_rows);
        EXPECT_EQ(blocks.qc.total_counts, whole.qc.total_counts) << block_rows;
        EXPECT_EQ(blocks.qc.n_genes_by_counts, whole.qc.n_genes_by_counts) << block_rows;
        EXPECT_EQ(blocks.qc.n_cells_by_counts, whole.qc.n_cells_by_counts) << block_rows;
        EXPECT_EQ(blocks.integer_counts, whole.integer_counts);
        ASSERT_EQ(blocks.sum_inverse_total.size(), whole.sum_inverse_total.size());
        for (std::size_t gene = 0; gene < whole.sum_inverse_total.size(); ++gene) {
            EXPECT_NEAR(blocks.sum_inverse_total[gene], whole.sum_inverse_total[gene], 1e-12 * (1 + whole.sum_inverse_total[gene]));
            EXPECT_EQ(blocks.qc.gene_total_counts[gene], whole.qc.gene_total_counts[gene]);  // integer sums: exact
        }
    }
}

TEST(Streaming, GeneBlockDoesNotDependOnTheBlockSizeAndMatchesTheFile) {
    std::vector<std::uint8_t> keep(400, 0);
    for (std::size_t gene = 0; gene < keep.size(); gene += 3) keep[gene] = 1;
    NormalizeTotalOptions normalization;
    normalization.target_sum = 1000.0;
    JobContext ctx;
    io::OpenedDataset opened = io::open_dataset(dataset());
    const auto ranges = plan_row_ranges(opened.source->row_offsets(), 3);
    const ShardSet whole = stream_gene_block(*opened.source, normalization, keep, ranges, ctx, 1 << 20);
    for (const std::int64_t block_rows : {50, 333}) {
        io::OpenedDataset again = io::open_dataset(dataset());
        const ShardSet blocks = stream_gene_block(*again.source, normalization, keep, ranges, ctx, block_rows);
        ASSERT_EQ(blocks.num_shards(), whole.num_shards());
        for (int shard = 0; shard < whole.num_shards(); ++shard) {
            const CsrShard a = whole.shard(shard).to_host(), b = blocks.shard(shard).to_host();
            EXPECT_EQ(a.row_offsets, b.row_offsets) << block_rows;
            EXPECT_EQ(a.gene_indices, b.gene_indices) << block_rows;
            EXPECT_EQ(a.values, b.values) << block_rows;
        }
    }
    // Row totals after normalisation: target_sum over the kept columns' share.
    io::OpenedDataset raw = io::open_dataset(dataset());
    const CsrShard rows = raw.source->read_rows(0, 1000);
    const CsrShard first = whole.shard(0).to_host();
    for (std::int64_t row = 0; row < first.num_rows(); ++row) {
        double total = 0, kept = 0;
        for (auto entry = rows.row_offsets[row]; entry < rows.row_offsets[row + 1]; ++entry) {
            total += rows.values[entry];
            if (keep[rows.gene_indices[entry]]) kept += rows.values[entry];
        }
        double ours = 0;
        for (auto entry = first.row_offsets[row]; entry < first.row_offsets[row + 1]; ++entry) ours += first.values[entry];
        if (total > 0) {
            EXPECT_NEAR(ours, 1000.0 * kept / total, 1e-3 * (1 + ours)) << row;
        }
    }
}

TEST(Streaming, FirstPassKeepsTheRowsPackedWithinItsBudget) {
    io::OpenedDataset opened = io::open_dataset(dataset());
    const auto& names = opened.meta.var.index();
    const std::vector<std::int64_t> offsets = opened.source->row_offsets();
    const ShardLayout layout = ShardLayout::single(plan_row_ranges(offsets, 3));
    JobContext ctx;
    const StreamedStats plain = stream_statistics(*opened.source, names, layout, ctx, 77);
    EXPECT_FALSE(plain.packed);
    EXPECT_EQ(plain.packed_bytes, 0);
    const StreamedStats kept = stream_statistics(*opened.source, names, layout, ctx, 77, std::int64_t{1} << 30);
    ASSERT_TRUE(kept.packed);
    EXPECT_EQ(kept.packed_bytes, kept.packed->memory_bytes());
    EXPECT_EQ(kept.packed->nnz(), opened.meta.nnz);
    EXPECT_EQ(kept.qc.total_counts, plain.qc.total_counts);
    EXPECT_EQ(kept.sum_inverse_total, plain.sum_inverse_total);
    // Any row range reads back as the file's rows, across the packed chunks.
    PackedRowSource packed(kept.packed);
    EXPECT_EQ(packed.row_offsets(), offsets);
    for (const auto& [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 1000}, {5, 900}, {76, 78}, {999, 1000}, {400, 400}}) {
        const CsrShard want = opened.source->read_rows(begin, end), got = packed.read_rows(begin, end);
        EXPECT_EQ(got.row_begin, want.row_begin);
        EXPECT_EQ(got.row_offsets, want.row_offsets) << begin << ".." << end;
        EXPECT_EQ(got.gene_indices, want.gene_indices) << begin << ".." << end;
        EXPECT_EQ(got.values, want.values) << begin << ".." << end;
    }
    // The second pass from the packed rows: the file's bits.
    std::vector<std::uint8_t> keep(400, 0);
    for (std::size_t gene = 2; gene < keep.size(); gene += 5) keep[gene] = 1;
    NormalizeTotalOptions normalization;
    normalization.target_sum = 2000.0;
    const ShardSet from_file = stream_gene_block(*opened.source, normalization, keep, layout, ctx, 77);
    const ShardSet from_packed = stream_gene_block(packed, normalization, keep, layout, ctx, 77);
    for (int shard = 0; shard < from_file.num_shards(); ++shard) {
        const CsrShard a = from_file.shard(shard).to_host(), b = from_packed.shard(shard).to_host();
        EXPECT_EQ(a.row_offsets, b.row_offsets);
        EXPECT_EQ(a.gene_indices, b.gene_indices);
        EXPECT_EQ(a.values, b.values);
    }
    // Over budget: dropped, with the size it reached.
    const StreamedStats over = stream_statistics(*opened.source, names, layout, ctx, 77, 1000);
    EXPECT_FALSE(over.packed);
    EXPECT_GT(over.packed_bytes, 1000);
    EXPECT_EQ(over.qc.total_counts, plain.qc.total_counts);
}

class PageCache : public ::testing::TestWithParam<std::string> {};

TEST_P(PageCache, PassThatPacksTheRowsDropsTheFileFromThePageCache) {
    const std::string file = (test::temp_dir("streaming_page_cache") / ("synthetic." + GetParam())).string();
    io::SynthOptions options;
    options.num_cells = 20000;
    options.num_genes = 2000;
    options.seed = 5;
    io::write_synthetic(file, options);
    if (const auto reason = test::page_cache_unobservable(file)) GTEST_SKIP() << *reason;
    io::OpenedDataset opened = io::open_dataset(file);
    const auto& names = opened.meta.var.index();
    const ShardLayout layout = ShardLayout::single(plan_row_ranges(opened.source->row_offsets(), 2));
    JobContext ctx;
    // Streaming without packing: the later passes read the file again, so it stays cached.
    test::read_whole_file(file);
    const StreamedStats plain = stream_statistics(*opened.source, names, layout, ctx, 512);
    ASSERT_FALSE(plain.packed);
    EXPECT_GT(test::resident_fraction(file), 0.9);
    // Packing: the later passes read the packed rows, and the file's pages are dropped.
    test::read_whole_file(file);
    const StreamedStats kept = stream_statistics(*opened.source, names, layout, ctx, 512, std::int64_t{1} << 30);
    ASSERT_TRUE(kept.packed);
    EXPECT_LT(test::resident_fraction(file), 0.1);
    EXPECT_EQ(kept.qc.total_counts, plain.qc.total_counts);
    EXPECT_EQ(kept.packed->nnz(), opened.meta.nnz);
    // The file reads on as before (from disk), the same rows as the packed ones.
    PackedRowSource packed(kept.packed);
    const CsrShard want = opened.source->read_rows(100, 5000), got = packed.read_rows(100, 5000);
    EXPECT_EQ(got.row_offsets, want.row_offsets);
    EXPECT_EQ(got.gene_indices, want.gene_indices);
    EXPECT_EQ(got.values, want.values);
}

// 10x HDF5 (gzip chunks, decoded in parallel) and h5ad (uncompressed, plain HDF5 reads).
INSTANTIATE_TEST_SUITE_P(Streaming, PageCache, ::testing::Values("h5", "h5ad"));

/// A Comm& of test::run_ranks as the shared pointer the layouts hold (not owned).
std::shared_ptr<Comm> borrowed(Comm& comm) {
    return std::shared_ptr<Comm>(&comm, [](Comm*) {});
}

TEST(Streaming, RanksStreamingTheirShardsGetTheOneProcessResultsBitForBit) {
    std::vector<std::uint8_t> keep(400, 0);
    for (std::size_t gene = 1; gene < keep.size(); gene += 4) keep[gene] = 1;
    NormalizeTotalOptions normalization;
    normalization.target_sum = 5000.0;
    io::OpenedDataset opened = io::open_dataset(dataset());
    const auto& names = opened.meta.var.index();
    const std::vector<std::int64_t> offsets = opened.source->row_offsets();
    JobContext ctx;
    // One process with 6 shards, read in blocks that do not align with them.
    const ShardLayout single = ShardLayout::single(plan_row_ranges(offsets, 6));
    const StreamedStats whole = stream_statistics(*opened.source, names, single, ctx, 77);
    const ShardSet block = stream_gene_block(*opened.source, normalization, keep, single, ctx, 77);
    const ColumnStats want = block.column_stats(ColumnStatsRequest{}, ctx);
    const std::vector<std::int32_t> genes{0, 7, 399};
    const auto expected = stream_gene_columns(*opened.source, offsets, genes, 500, ctx);
    for (const int ranks : {2, 3}) {
        test::run_ranks(ranks, [&](Comm& comm) {
            JobContext rank_ctx;
            io::OpenedDataset mine = io::open_dataset(dataset());
            const ShardLayout layout = ShardLayout::over_ranks(offsets, 6 / ranks, ShardBalance::ByNnz, borrowed(comm));
            ASSERT_EQ(layout.layout, single.layout);
            ASSERT_EQ(layout.first, comm.rank() * (6 / ranks));
            const StreamedStats stats = stream_statistics(*mine.source, names, layout, rank_ctx, 77);
            EXPECT_EQ(stats.qc.total_counts, whole.qc.total_counts);
            EXPECT_EQ(stats.qc.n_genes_by_counts, whole.qc.n_genes_by_counts);
            EXPECT_EQ(stats.qc.n_cells_by_counts, whole.qc.n_cells_by_counts);
            EXPECT_EQ(stats.qc.gene_total_counts, whole.qc.gene_total_counts);
            EXPECT_EQ(stats.sum_inverse_total, whole.sum_inverse_total);  // same order of sums: same bits
            EXPECT_EQ(stats.sum_squares_inverse_total, whole.sum_squares_inverse_total);
            EXPECT_EQ(stats.integer_counts, whole.integer_counts);
            const ShardSet part = stream_gene_block(*mine.source, normalization, keep, layout, rank_ctx, 77);
            ASSERT_EQ(part.num_shards(), 6);
            ASSERT_EQ(part.num_local_shards(), 6 / ranks);
            for (int shard = part.first_local_shard(); shard < part.first_local_shard() + part.num_local_shards(); ++shard) {
                const CsrShard got = part.shard(shard).to_host(), want = block.shard(shard).to_host();
                EXPECT_EQ(got.row_begin, want.row_begin);
                EXPECT_EQ(got.row_offsets, want.row_offsets);
                EXPECT_EQ(got.gene_indices, want.gene_indices);
                EXPECT_EQ(got.values, want.values);
            }
            // A reduction over the distributed block: the one-process column sums.
            const ColumnStats got = part.column_stats(ColumnStatsRequest{}, rank_ctx);
            EXPECT_EQ(got.sum, want.sum);
            // Gene columns: every rank reads its own rows and gets the whole columns.
            const auto columns = stream_gene_columns(*mine.source, offsets, genes, 500, rank_ctx, &layout);
            EXPECT_EQ(columns, expected);
        });
    }
}

/// Every shard `got` holds has the bits of the same shard of `want` (one process holding
/// every shard, or the same ranks).
void expect_same_blocks(const ShardSet& got, const ShardSet& want, const std::string& what) {
    ASSERT_EQ(got.num_shards(), want.num_shards()) << what;
    EXPECT_EQ(got.num_genes(), want.num_genes()) << what;
    for (int shard = got.first_local_shard(); shard < got.first_local_shard() + got.num_local_shards(); ++shard) {
        const CsrShard a = got.shard(shard).to_host(), b = want.shard(shard).to_host();
        EXPECT_EQ(a.row_begin, b.row_begin) << what << " shard " << shard;
        EXPECT_EQ(a.row_offsets, b.row_offsets) << what << " shard " << shard;
        EXPECT_EQ(a.gene_indices, b.gene_indices) << what << " shard " << shard;
        EXPECT_EQ(a.values, b.values) << what << " shard " << shard;
    }
}

// The one-read path: the second pass decodes the packed rows of the first (each row once,
// only its kept columns written) and gives the file-streamed pass's bits, whatever the
// threads, the shards (aligned with the packed chunks or not), the ranks, the values
// (counts, and fractions stored as float bits) and the normalisation; over its budget
// the first pass keeps nothing and the second reads the file.
TEST(Streaming, SecondPassFromThePackedRowsIsTheFilePassOnAnyThreadsAndRanks) {
    test::SimulationOptions simulation;
    simulation.num_cells = 1500;
    simulation.num_genes = 300;
    simulation.max_count = 300;  // up to 9-bit counts
    simulation.seed = 8;
    CsrShard whole = test::simulate_counts(simulation);
    for (std::int64_t row = 0; row < whole.num_rows(); row += 7)  // some rows with fractions
        for (auto entry = whole.row_offsets[row]; entry < whole.row_offsets[row + 1]; entry += 2)
            whole.values[static_cast<std::size_t>(entry)] *= 0.37f;
    std::vector<CsrShard> one;
    one.push_back(whole);
    const ShardedCsr matrix(MatrixShape{whole.num_rows(), whole.num_genes}, std::move(one));
    io::ShardedCsrSource file(matrix);
    const std::vector<std::int64_t> offsets = file.row_offsets();
    const std::vector<std::string> names;
    std::vector<std::uint8_t> keep(300, 0);
    for (std::size_t gene = 1; gene < keep.size(); gene += 3) keep[gene] = 1;
    keep[299] = 1;
    std::vector<double> factors(static_cast<std::size_t>(whole.num_rows()));
    for (std::size_t row = 0; row < factors.size(); ++row) factors[row] = 1.0 / (1.0 + static_cast<double>(row % 13));
    std::vector<NormalizeTotalOptions> normalizations(3);
    normalizations[0].target_sum = 1e4;
    normalizations[1].target_sum = 2500.0;
    normalizations[1].integer_dtype = false;  // float X: NumPy's float32 row sums
    // normalizations[2]: no target (the median of each block's totals): the blocks' pass.
    JobContext ctx;
    // Packed by a first pass over 5 shards in blocks of 77 rows.
    const ShardLayout packing = ShardLayout::single(plan_row_ranges(offsets, 5));
    const StreamedStats stats = stream_statistics(file, names, packing, ctx, 77, std::int64_t{1} << 30);
    ASSERT_TRUE(stats.packed);
    PackedRowSource packed(stats.packed);
    for (const int threads : {1, 2, 3}) {
        const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
        for (const ShardLayout& layout : {packing, ShardLayout::single(plan_row_ranges(offsets, 7))}) {
            const std::string what = std::to_string(threads) + " threads, " + std::to_string(layout.count) + " shards";
            for (std::size_t option = 0; option < normalizations.size(); ++option)
                expect_same_blocks(stream_gene_block(packed, normalizations[option], keep, layout, ctx, 77),
                                   stream_gene_block(file, normalizations[option], keep, layout, ctx, 77),
                                   what + ", normalisation " + std::to_string(option));
            expect_same_blocks(stream_gene_block(packed, factors, keep, layout, ctx, 77),
                               stream_gene_block(file, factors, keep, layout, ctx, 77), what + ", given factors");
        }
    }
    // Ranks: each packs only its own rows in its first pass and cuts them in its second.
    const ShardSet want = stream_gene_block(file, normalizations[0], keep, packing, ctx, 77);
    const ShardSet want_factors = stream_gene_block(file, factors, keep, packing, ctx, 77);
    for (const int ranks : {2, 3}) {
        test::run_ranks(ranks, [&](Comm& comm) {
            JobContext rank_ctx;
            io::ShardedCsrSource mine(matrix);
            const ShardLayout layout = ShardLayout::over_ranks(offsets, comm.rank() == 0 ? 1 : 2, ShardBalance::ByNnz, borrowed(comm));
            const StreamedStats own = stream_statistics(mine, names, layout, rank_ctx, 50, std::int64_t{1} << 30);
            ASSERT_TRUE(own.packed);
            EXPECT_FALSE(own.packed->holds(0, whole.num_rows())) << "a rank packs its own rows only";
            PackedRowSource rows(own.packed);
            const ShardSet block = stream_gene_block(rows, normalizations[0], keep, layout, rank_ctx, 50);
            const ShardSet given = stream_gene_block(rows, factors, keep, layout, rank_ctx, 50);
            ASSERT_EQ(block.num_local_shards(), layout.count);
            // One process streaming the same shards from the file.
            const std::string what = std::to_string(ranks) + " ranks, rank " + std::to_string(comm.rank());
            io::ShardedCsrSource all(matrix);
            const ShardLayout one_process = ShardLayout::single(layout.layout);
            expect_same_blocks(block, stream_gene_block(all, normalizations[0], keep, one_process, rank_ctx, 77), what);
            expect_same_blocks(given, stream_gene_block(all, factors, keep, one_process, rank_ctx, 77),
                               what + ", given factors");
        });
    }
    // Over its budget the first pass keeps nothing: the second reads the file.
    const StreamedStats over = stream_statistics(file, names, packing, ctx, 77, 4096);
    EXPECT_FALSE(over.packed);
    EXPECT_GT(over.packed_bytes, 4096);
    EXPECT_EQ(over.qc.total_counts, stats.qc.total_counts);
    EXPECT_EQ(over.sum_inverse_total, stats.sum_inverse_total);
    expect_same_blocks(stream_gene_block(file, normalizations[0], keep, packing, ctx, 77), want, "over budget");
    expect_same_blocks(stream_gene_block(file, factors, keep, packing, ctx, 77), want_factors, "over budget, given factors");
}

// Zheng17 on a non-integer X (streamed): the totals over the kept genes, the scaled
// moments and the HVG block with given factors are the in-memory primitives' numbers —
// the same bits when every shard is one block — and do not depend on the ranks.
TEST(Streaming, KeptGeneTotalsScaledMomentsAndFactorBlockAreTheInMemoryOnesOnAnyRanks) {
    test::SimulationOptions simulation;
    simulation.num_cells = 1200;
    simulation.num_genes = 90;
    simulation.integer_counts = false;
    simulation.seed = 4;
    const CsrShard whole = test::simulate_counts(simulation);
    std::vector<CsrShard> one;
    one.push_back(whole);
    const ShardedCsr matrix(MatrixShape{whole.num_rows(), whole.num_genes}, std::move(one));
    io::ShardedCsrSource source(matrix);
    const std::vector<std::int64_t> offsets = source.row_offsets();
    std::vector<std::uint8_t> keep(90, 1);
    for (std::size_t gene = 2; gene < keep.size(); gene += 5) keep[gene] = 0;
    JobContext ctx;
    const ShardLayout single = ShardLayout::single(plan_row_ranges(offsets, 6));
    const ShardSet loaded = ShardSet::make_cpu(test::split_into_shards(whole, single.layout));
    const std::vector<double> want_sums = numpy_float32_row_sums(loaded, keep, ctx);
    const std::vector<double> factors = normalize_total_factors(want_sums, NormalizeTotalOptions{}).factors;
    ColumnStatsRequest request;
    request.row_scale = factors;
    const ColumnStats want = loaded.column_stats(request, ctx);
    ShardSet want_block = loaded.clone_columns(keep, ctx);
    want_block.scale_rows(factors, ctx);

    // One block per shard: the in-memory bits.
    EXPECT_EQ(stream_row_sums(source, keep, single, ctx, 1 << 20), want_sums);
    const ColumnStats got = stream_column_stats(source, factors, single, ctx, 1 << 20);
    EXPECT_EQ(got.num_rows, want.num_rows);
    EXPECT_EQ(got.sum, want.sum);
    EXPECT_EQ(got.sum_squares, want.sum_squares);
    EXPECT_EQ(got.nnz, want.nnz);
    const ShardSet block = stream_gene_block(source, factors, keep, single, ctx, 1 << 20);
    ASSERT_EQ(block.num_shards(), want_block.num_shards());
    for (int shard = 0; shard < block.num_shards(); ++shard) {
        const CsrShard a = block.shard(shard).to_host(), b = want_block.shard(shard).to_host();
        EXPECT_EQ(a.row_offsets, b.row_offsets);
        EXPECT_EQ(a.gene_indices, b.gene_indices);
        EXPECT_EQ(a.values, b.values);
    }
    // Blocks that do not align with the shards: the row sums are the same (row-local),
    // the moments the same up to the order of the additions.
    const std::vector<double> sums = stream_row_sums(source, keep, single, ctx, 77);
    EXPECT_EQ(sums, want_sums);
    const ColumnStats blocks = stream_column_stats(source, factors, single, ctx, 77);
    for (std::size_t gene = 0; gene < want.sum.size(); ++gene) {
        EXPECT_NEAR(blocks.sum[gene], want.sum[gene], 1e-12 * (1 + want.sum[gene])) << gene;
        EXPECT_NEAR(blocks.sum_squares[gene], want.sum_squares[gene], 1e-12 * (1 + want.sum_squares[gene])) << gene;
    }
    EXPECT_EQ(blocks.nnz, want.nnz);
    for (const int ranks : {2, 3}) {
        test::run_ranks(ranks, [&](Comm& comm) {
            JobContext rank_ctx;
            io::ShardedCsrSource mine(matrix);
            const ShardLayout layout = ShardLayout::over_ranks(offsets, 6 / ranks, ShardBalance::ByNnz, borrowed(comm));
            ASSERT_EQ(layout.layout, single.layout);
            EXPECT_EQ(stream_row_sums(mine, keep, layout, rank_ctx, 77), want_sums);
            const ColumnStats part = stream_column_stats(mine, factors, layout, rank_ctx, 77);
            EXPECT_EQ(part.num_rows, blocks.num_rows);
            EXPECT_EQ(part.sum, blocks.sum);  // same order of sums: same bits
            EXPECT_EQ(part.sum_squares, blocks.sum_squares);
            EXPECT_EQ(part.nnz, blocks.nnz);
        });
    }
    // Factors must cover every cell.
    EXPECT_THROW(stream_column_stats(source, std::span<const double>(factors).first(10), single, ctx), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::detail
