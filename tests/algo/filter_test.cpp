// filter_cells / filter_genes against dense counts, and applying them.
#include <gtest/gtest.h>

#include "core/algo/filter.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

TEST(Filter, CellsByCountsAndGenes) {
    const auto whole = step_counts(5);
    const auto dense = to_dense(whole);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    FilterCellsOptions options;
    options.min_counts = 40;
    options.max_genes = 25;
    const FilterResult filter = filter_cells(shards, options, ctx);
    std::int64_t kept = 0;
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
        double total = 0;
        std::int64_t genes = 0;
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
            total += dense(cell, gene);
            genes += dense(cell, gene) != 0 ? 1 : 0;
        }
        const bool keep = total >= 40 && genes <= 25;
        EXPECT_EQ(filter.keep[static_cast<std::size_t>(cell)], keep ? 1 : 0) << cell;
        kept += keep ? 1 : 0;
    }
    EXPECT_EQ(filter.num_kept, kept);
    EXPECT_GT(filter.num_removed, 0);
    EXPECT_GT(filter.num_kept, 0);
    apply_cell_filter(shards, filter, ctx);
    EXPECT_EQ(shards.num_cells(), kept);
    const auto after = to_dense(shards.to_host());
    std::int64_t row = 0;
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
        if (!filter.keep[static_cast<std::size_t>(cell)]) continue;
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) EXPECT_EQ(after(row, gene), dense(cell, gene));
        ++row;
    }
}

TEST(Filter, GenesByCountsAndCells) {
    const auto whole = step_counts(6);
    const auto dense = to_dense(whole);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    FilterGenesOptions options;
    options.min_cells = 3;
    options.min_counts = 1;
    const FilterResult filter = filter_genes(shards, options, ctx);
    std::int64_t kept = 0;
    bool removed_zero_gene = false;
    for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
        double total = 0;
        std::int64_t cells = 0;
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
            total += dense(cell, gene);
            cells += dense(cell, gene) != 0 ? 1 : 0;
        }
        const bool keep = total >= 1 && cells >= 3;
        removed_zero_gene = removed_zero_gene || (total == 0 && !filter.keep[static_cast<std::size_t>(gene)]);
        EXPECT_EQ(filter.keep[static_cast<std::size_t>(gene)], keep ? 1 : 0);
        EXPECT_EQ(filter.num_expressed[static_cast<std::size_t>(gene)], cells);
        kept += keep ? 1 : 0;
    }
    EXPECT_TRUE(removed_zero_gene);
    apply_gene_filter(shards, filter, ctx);
    EXPECT_EQ(shards.num_genes(), kept);
}

TEST(Filter, ValidationNamesTheField) {
    try {
        validate(FilterCellsOptions{});
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("FilterCellsOptions"), std::string::npos);
    }
    FilterGenesOptions genes;
    genes.min_cells = 5;
    genes.max_cells = 2;
    try {
        validate(genes);
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("min_cells"), std::string::npos);
    }
    FilterCellsOptions cells;
    cells.min_counts = -1;
    EXPECT_THROW(validate(cells), std::invalid_argument);
}

TEST(Filter, StopsWhenCancelled) {
    auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    ctx.cancel();
    FilterCellsOptions cells;
    cells.min_counts = 1;
    EXPECT_THROW(filter_cells(shards, cells, ctx), Cancelled);
    FilterGenesOptions genes;
    genes.min_cells = 1;
    EXPECT_THROW(filter_genes(shards, genes, ctx), Cancelled);
}

}  // namespace
}  // namespace fathom::test
