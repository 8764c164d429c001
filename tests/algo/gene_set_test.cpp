// Tests of core/algo/gene_set (score_gene_set): the plain mean of the LogNorm values
// against a dense brute force (1 and 3 shards, repeats, sets larger than one batch,
// target_sum), option and input checks, and scanpy 1.9.6 score_genes' control genes
// against scanpy's own algorithm run by Debian's python3 (numpy's legacy RandomState,
// pandas' rank) on the same matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/algo/gene_set.hpp"
#include "core/types/JobContext.hpp"
#include "tests/algo/algo_helpers.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

/// Per-cell totals and the LogNorm value ln(1 + x * target_sum / total) of every entry,
/// from a dense copy ([gene][cell]).
struct DenseLogNorm {
    std::vector<double> totals;
    std::vector<std::vector<float>> values;
};

DenseLogNorm dense_lognorm(const DenseMatrix<double>& dense, double target_sum = 1e4) {
    DenseLogNorm out;
    const auto cells = static_cast<std::size_t>(dense.rows());
    out.totals.assign(cells, 0.0);
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell)
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) out.totals[static_cast<std::size_t>(cell)] += dense(cell, gene);
    out.values.assign(static_cast<std::size_t>(dense.cols()), std::vector<float>(cells, 0.0f));
    for (std::int64_t gene = 0; gene < dense.cols(); ++gene)
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
            const double total = out.totals[static_cast<std::size_t>(cell)];
            out.values[static_cast<std::size_t>(gene)][static_cast<std::size_t>(cell)] =
                total > 0.0 ? static_cast<float>(std::log1p(dense(cell, gene) * target_sum / total)) : 0.0f;
        }
    return out;
}

/// Mean over `genes` of each cell's values.
std::vector<double> brute_mean(const DenseLogNorm& lognorm, const std::vector<std::int32_t>& genes) {
    std::vector<double> mean(lognorm.totals.size(), 0.0);
    for (std::size_t cell = 0; cell < mean.size(); ++cell) {
        double sum = 0.0;
        for (const auto gene : genes) sum += lognorm.values[static_cast<std::size_t>(gene)][cell];
        mean[cell] = sum / static_cast<double>(genes.size());
    }
    return mean;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance) {
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t cell = 0; cell < got.size(); ++cell)
        EXPECT_NEAR(got[cell], expected[cell], tolerance) << "cell " << cell;
}

TEST(GeneSetScore, MeanOfTheSetMatchesBruteForce) {
    const CsrShard whole = test::step_counts(4, 300, 60);
    const DenseMatrix<double> dense = test::to_dense(whole);
    const DenseLogNorm lognorm = dense_lognorm(dense);
    JobContext ctx;
    // Repeats are scored once, in the order first given.
    const std::vector<std::int32_t> genes{12, 3, 40, 3, 59, 12, 0};
    const std::vector<std::int32_t> distinct{12, 3, 40, 59, 0};
    const auto expected = brute_mean(lognorm, distinct);
    for (const int shards : {1, 3}) {
        const ShardSet set = test::simulated_set(whole, shards);
        const GeneSetScoreResult result = score_gene_set(set, genes, lognorm.totals, GeneSetScoreOptions{}, ctx);
        EXPECT_EQ(result.genes, distinct);
        EXPECT_TRUE(result.control_genes.empty());
        expect_close(result.scores, expected, 1e-12);
    }
    // Empty cells (total 0) score 0.
    bool any_empty = false;
    for (std::size_t cell = 0; cell < lognorm.totals.size(); ++cell)
        if (lognorm.totals[cell] == 0.0) {
            any_empty = true;
            EXPECT_EQ(expected[cell], 0.0);
        }
    EXPECT_TRUE(any_empty) << "the simulation has empty cells";
}

TEST(GeneSetScore, SetsLargerThanOneBatchAndOneGene) {
    const CsrShard whole = test::step_counts(5, 150, 90);
    const DenseLogNorm lognorm = dense_lognorm(test::to_dense(whole));
    const ShardSet set = test::simulated_set(whole, 3);
    JobContext ctx;
    // 80 genes: more than the 32 fetched per gene_columns call; in reverse order.
    std::vector<std::int32_t> genes;
    for (std::int32_t gene = 89; gene >= 10; --gene) genes.push_back(gene);
    const GeneSetScoreResult many = score_gene_set(set, genes, lognorm.totals, GeneSetScoreOptions{}, ctx);
    EXPECT_EQ(many.genes, genes);
    expect_close(many.scores, brute_mean(lognorm, genes), 1e-12);
    // One gene: its own values.
    const std::vector<std::int32_t> one{7};
    const GeneSetScoreResult single = score_gene_set(set, one, lognorm.totals, GeneSetScoreOptions{}, ctx);
    for (std::size_t cell = 0; cell < single.scores.size(); ++cell)
        EXPECT_EQ(single.scores[cell], static_cast<double>(lognorm.values[7][cell]));
}

TEST(GeneSetScore, TargetSum) {
    const CsrShard whole = test::step_counts(6, 120, 40);
    const DenseLogNorm lognorm = dense_lognorm(test::to_dense(whole), 100.0);
    const ShardSet set = test::simulated_set(whole, 2);
    JobContext ctx;
    GeneSetScoreOptions options;
    options.target_sum = 100.0;
    const std::vector<std::int32_t> genes{1, 2, 3, 30};
    expect_close(score_gene_set(set, genes, lognorm.totals, options, ctx).scores, brute_mean(lognorm, genes), 1e-12);
}

TEST(GeneSetScore, ChecksOptionsAndInputs) {
    const CsrShard whole = test::step_counts(2, 40, 20);
    const ShardSet set = test::simulated_set(whole, 2);
    const std::vector<double> totals(40, 10.0);
    JobContext ctx;
    const auto message_of = [&](const GeneSetScoreOptions& options, std::vector<std::int32_t> genes,
                                std::vector<double> cell_totals) -> std::string {
        try {
            (void)score_gene_set(set, genes, cell_totals, options, ctx);
        } catch (const std::invalid_argument& error) {
            return error.what();
        }
        return "no error";
    };
    GeneSetScoreOptions options;
    options.target_sum = 0.0;
    EXPECT_NE(message_of(options, {1}, totals).find("GeneSetScoreOptions::target_sum"), std::string::npos);
    options.target_sum = NAN;
    EXPECT_NE(message_of(options, {1}, totals).find("GeneSetScoreOptions::target_sum"), std::string::npos);
    options = {};
    options.ctrl_size = 0;
    EXPECT_NE(message_of(options, {1}, totals).find("GeneSetScoreOptions::ctrl_size"), std::string::npos);
    options = {};
    options.n_bins = 1;
    EXPECT_NE(message_of(options, {1}, totals).find("GeneSetScoreOptions::n_bins"), std::string::npos);
    options = {};
    EXPECT_NO_THROW(validate(options));
    EXPECT_FALSE(options.subtract_control) << "the default score is the plain mean";
    EXPECT_NE(message_of(options, {}, totals).find("empty"), std::string::npos);
    EXPECT_NE(message_of(options, {20}, totals).find("gene 20 is outside [0, 20)"), std::string::npos);
    EXPECT_NE(message_of(options, {-1}, totals).find("gene -1"), std::string::npos);
    EXPECT_NE(message_of(options, {1}, std::vector<double>(39, 1.0)).find("39 cell totals for 40 cells"), std::string::npos);
    JobContext cancelled;
    cancelled.cancel();
    const std::vector<std::int32_t> genes{1};
    EXPECT_THROW((void)score_gene_set(set, genes, totals, options, cancelled), Cancelled);
}

// ---------------------------------------------------------------------------------
// score_genes (subtract_control)

/// scanpy 1.9.6 `tl.score_genes` (scanpy/tools/_score_genes.py) on the LogNorm matrix,
/// its statements kept as they are; the gene means are taken as the header documents
/// (float32 scale, float32 log1p, mean in double). Prints the control gene indices.
const char* const kScanpyScoreGenes = R"PY(
import sys, json
import numpy as np, pandas as pd

counts = np.loadtxt(sys.argv[1], delimiter=",", ndmin=2)
gene_list = json.loads(sys.argv[2])
ctrl_size, n_bins, random_state = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
var_names = ["G%d" % gene for gene in range(counts.shape[1])]

totals = counts.sum(axis=1)
scale = np.where(totals > 0, 1e4 / np.where(totals > 0, totals, 1.0), 0.0)
scaled = (counts * scale[:, None]).astype(np.float32)
X = np.log1p(scaled)  # float32, as pp.log1p on a float32 matrix

# --- scanpy 1.9.6 ---
np.random.seed(random_state)
gene_list = set(var_names[g] for g in gene_list)
gene_pool = list(var_names)
obs_avg = pd.Series(X.astype(np.float64).mean(axis=0), index=gene_pool)
obs_avg = obs_avg[np.isfinite(obs_avg)]
n_items = int(np.round(len(obs_avg) / (n_bins - 1)))
obs_cut = obs_avg.rank(method='min') // n_items
control_genes = set()
for cut in np.unique(obs_cut.loc[list(gene_list)]):
    r_genes = np.array(obs_cut[obs_cut == cut].index)
    np.random.shuffle(r_genes)
    control_genes.update(set(r_genes[:ctrl_size]))
control_genes = list(control_genes - gene_list)
# ---
print("\nFATHOM-JSON:" + json.dumps(sorted(var_names.index(g) for g in control_genes)))
)PY";

TEST(GeneSetScore, ScoreGenesControlGenesMatchScanpy) {
    FATHOM_REQUIRE_PYTHON("numpy", "pandas");
    const CsrShard whole = test::step_counts(8, 250, 200);
    const DenseMatrix<double> dense = test::to_dense(whole);
    const DenseLogNorm lognorm = dense_lognorm(dense);
    const auto folder = test::temp_dir("gene-set-score");
    const auto counts_path = folder / "counts.csv";
    {
        std::ofstream out(counts_path);
        for (std::int64_t cell = 0; cell < dense.rows(); ++cell) {
            for (std::int64_t gene = 0; gene < dense.cols(); ++gene) out << (gene ? "," : "") << dense(cell, gene);
            out << "\n";
        }
        ASSERT_TRUE(out.good());
    }
    struct Case {
        std::vector<std::int32_t> genes;
        int ctrl_size, n_bins;
        std::uint32_t random_state;
    };
    const Case cases[] = {
        {{3, 50, 120, 199}, 50, 25, 0},          // scanpy's defaults; 200 / 24 -> bins of 8: whole bins
        {{3, 50, 120, 199}, 5, 4, 0},            // bins of 67 genes: the shuffle decides
        {{10, 11, 12, 13, 14, 15}, 7, 6, 42},    // 40 per bin
        {{0, 199, 100, 7, 7}, 3, 3, 1234567},    // repeats; 2 bins of 100
        {{150}, 20, 2, 5},                       // n_items = 200: one bin
        {{60, 61}, 1, 26, 9},                    // 200 / 25 = 8
    };
    const ShardSet sets[] = {test::simulated_set(whole, 1), test::simulated_set(whole, 3)};
    JobContext ctx;
    for (const Case& c : cases) {
        SCOPED_TRACE("ctrl_size " + std::to_string(c.ctrl_size) + ", n_bins " + std::to_string(c.n_bins) +
                     ", random_state " + std::to_string(c.random_state));
        nlohmann::json genes_json = nlohmann::json::array();
        for (const auto gene : c.genes) genes_json.push_back(gene);
        const auto python = test::run_python(kScanpyScoreGenes, {counts_path.string(), genes_json.dump(), std::to_string(c.ctrl_size),
                                                                 std::to_string(c.n_bins), std::to_string(c.random_state)});
        ASSERT_EQ(python.exit_code, 0) << python.output;
        const auto marker = python.output.rfind("\nFATHOM-JSON:");
        ASSERT_NE(marker, std::string::npos) << python.output;
        const auto reference = nlohmann::json::parse(python.output.substr(marker + 13)).get<std::vector<std::int32_t>>();
        ASSERT_FALSE(reference.empty());

        GeneSetScoreOptions options;
        options.subtract_control = true;
        options.ctrl_size = c.ctrl_size;
        options.n_bins = c.n_bins;
        options.random_state = c.random_state;
        for (const ShardSet& set : sets) {
            SCOPED_TRACE(std::to_string(set.num_shards()) + " shards");
            const GeneSetScoreResult result = score_gene_set(set, c.genes, lognorm.totals, options, ctx);
            EXPECT_EQ(result.control_genes, reference);

            // score = mean of the set - mean of the control genes, each from the dense copy.
            std::vector<std::int32_t> distinct;
            for (const auto gene : c.genes)
                if (std::find(distinct.begin(), distinct.end(), gene) == distinct.end()) distinct.push_back(gene);
            EXPECT_EQ(result.genes, distinct);
            const auto set_mean = brute_mean(lognorm, distinct);
            const auto control_mean = brute_mean(lognorm, result.control_genes);
            std::vector<double> expected(set_mean.size());
            for (std::size_t cell = 0; cell < expected.size(); ++cell) expected[cell] = set_mean[cell] - control_mean[cell];
            expect_close(result.scores, expected, 1e-9);
        }
    }
}

TEST(GeneSetScore, ScoreGenesProperties) {
    const CsrShard whole = test::step_counts(12, 200, 120);
    const DenseLogNorm lognorm = dense_lognorm(test::to_dense(whole));
    const ShardSet one = test::simulated_set(whole, 1);
    const ShardSet three = test::simulated_set(whole, 3);
    JobContext ctx;
    const std::vector<std::int32_t> genes{5, 17, 60, 99};
    GeneSetScoreOptions options;
    options.subtract_control = true;
    options.ctrl_size = 10;
    options.n_bins = 5;
    const GeneSetScoreResult first = score_gene_set(one, genes, lognorm.totals, options, ctx);
    // Same seed: same control genes, whatever the shard count.
    const GeneSetScoreResult again = score_gene_set(three, genes, lognorm.totals, options, ctx);
    EXPECT_EQ(first.control_genes, again.control_genes);
    expect_close(again.scores, first.scores, 1e-12);
    // Control genes: increasing, distinct, never a set gene, at most ctrl_size per bin
    // that holds a set gene.
    EXPECT_TRUE(std::is_sorted(first.control_genes.begin(), first.control_genes.end()));
    EXPECT_EQ(std::set<std::int32_t>(first.control_genes.begin(), first.control_genes.end()).size(), first.control_genes.size());
    for (const auto gene : genes)
        EXPECT_EQ(std::find(first.control_genes.begin(), first.control_genes.end(), gene), first.control_genes.end()) << gene;
    EXPECT_LE(first.control_genes.size(), genes.size() * 10);
    EXPECT_GE(first.control_genes.size(), 10u);
    // Another seed draws other genes.
    options.random_state = 99;
    const GeneSetScoreResult other = score_gene_set(one, genes, lognorm.totals, options, ctx);
    EXPECT_NE(other.control_genes, first.control_genes);
}

}  // namespace
}  // namespace fathom
