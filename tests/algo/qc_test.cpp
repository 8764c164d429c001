// calculate_qc_metrics against a dense brute-force reference.
#include <gtest/gtest.h>

#include "core/algo/qc.hpp"
#include "tests/algo/algo_helpers.hpp"

namespace fathom::test {
namespace {

TEST(Qc, MatchesDenseReference) {
    const auto whole = step_counts(3);
    const auto dense = to_dense(whole);
    const auto shards = simulated_set(whole, 3);
    auto names = simulated_gene_names(whole.num_genes, {1, 5, 9});
    names[20] = "mt-Nd1";  // mouse prefix
    JobContext ctx;
    const QcResult qc = calculate_qc_metrics(shards, names, QcOptions{}, ctx);
    EXPECT_EQ(qc.num_mito_genes, 4);
    EXPECT_EQ(qc.mito_genes[20], 1);
    EXPECT_EQ(qc.mito_genes[2], 0);
    bool saw_empty = false;
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
        double total = 0, mito = 0;
        std::int64_t genes = 0;
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
            total += dense(cell, gene);
            genes += dense(cell, gene) != 0 ? 1 : 0;
            if (qc.mito_genes[static_cast<std::size_t>(gene)]) mito += dense(cell, gene);
        }
        const auto index = static_cast<std::size_t>(cell);
        EXPECT_DOUBLE_EQ(qc.total_counts[index], total);
        EXPECT_EQ(qc.n_genes_by_counts[index], genes);
        EXPECT_DOUBLE_EQ(qc.total_counts_mt[index], mito);
        if (total == 0) {
            saw_empty = true;
            EXPECT_TRUE(std::isnan(qc.pct_counts_mt[index]));
        } else {
            EXPECT_NEAR(qc.pct_counts_mt[index], 100.0 * mito / total, 1e-12);
        }
    }
    EXPECT_TRUE(saw_empty);
    for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
        double total = 0;
        std::int64_t cells = 0;
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
            total += dense(cell, gene);
            cells += dense(cell, gene) != 0 ? 1 : 0;
        }
        const auto index = static_cast<std::size_t>(gene);
        EXPECT_DOUBLE_EQ(qc.gene_total_counts[index], total);
        EXPECT_EQ(qc.n_cells_by_counts[index], cells);
        EXPECT_NEAR(qc.mean_counts[index], total / static_cast<double>(dense.rows()), 1e-12);
        EXPECT_NEAR(qc.pct_dropout_by_counts[index], 100.0 * (1.0 - static_cast<double>(cells) / static_cast<double>(dense.rows())), 1e-9);
    }
}

TEST(Qc, ValidatesOptionsAndNames) {
    const auto shards = simulated_set(step_counts(), 1);
    JobContext ctx;
    QcOptions options;
    options.mito_prefixes = {""};
    const auto names = simulated_gene_names(shards.num_genes());
    EXPECT_THROW(calculate_qc_metrics(shards, names, options, ctx), std::invalid_argument);
    const std::vector<std::string> too_few(3, "G");
    EXPECT_THROW(calculate_qc_metrics(shards, too_few, QcOptions{}, ctx), std::invalid_argument);
}

TEST(Qc, StopsWhenCancelled) {
    const auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    ctx.cancel();
    const auto names = simulated_gene_names(shards.num_genes());
    EXPECT_THROW(calculate_qc_metrics(shards, names, QcOptions{}, ctx), Cancelled);
}

}  // namespace
}  // namespace fathom::test
