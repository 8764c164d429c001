// numpy_float32_sum / numpy_float32_row_sums give NumPy's (scipy's X.sum(1)) float32
// row totals bit for bit, checked against NumPy itself.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/algo/normalize.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

TEST(NumpySum, Float32RowSumsAreScipysBitForBit) {
    FATHOM_REQUIRE_PYTHON("numpy", "scipy");
    // Rows of every length up to 600 (the pairwise blocks: < 8, <= 128, halves above)
    // with non-integer values of mixed magnitude.
    std::mt19937 random(11);
    std::uniform_real_distribution<float> uniform(0.01f, 1.0f);
    std::vector<std::vector<float>> rows;
    for (int length = 0; length <= 600; length += (length < 140 ? 1 : 7)) {
        std::vector<float> row(static_cast<std::size_t>(length));
        for (auto& value : row) value = uniform(random) * (uniform(random) < 0.1f ? 1000.0f : 3.0f);
        rows.push_back(std::move(row));
    }
    const auto folder = test::temp_dir("numpy-sum");
    const auto input = folder / "rows.json", output = folder / "sums.json";
    {
        nlohmann::json json = nlohmann::json::array();
        for (const auto& row : rows) json.push_back(row);
        std::ofstream(input) << json.dump();
    }
    const auto result = test::run_python(R"(
import json, sys
import numpy as np, scipy.sparse as sp
rows = json.load(open(sys.argv[1]))
indptr = np.cumsum([0] + [len(r) for r in rows])
data = np.array([v for r in rows for v in r], dtype=np.float32)
indices = np.array([g for r in rows for g in range(len(r))], dtype=np.int32)
X = sp.csr_matrix((data, indices, indptr), shape=(len(rows), 600))
json.dump([float(v) for v in np.ravel(X.sum(axis=1))], open(sys.argv[2], "w"))
)",
                                         {input.string(), output.string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(output);
    const auto expected = nlohmann::json::parse(in).get<std::vector<double>>();
    ASSERT_EQ(expected.size(), rows.size());
    int double_sums_differ = 0;
    for (std::size_t row = 0; row < rows.size(); ++row) {
        EXPECT_EQ(static_cast<double>(numpy_float32_sum(rows[row])), expected[row]) << "row of " << rows[row].size();
        double total = 0.0;
        for (float value : rows[row]) total += value;
        double_sums_differ += static_cast<float>(total) != static_cast<float>(expected[row]);
    }
    // The point of it: a double sum rounded once differs for many rows.
    EXPECT_GT(double_sums_differ, 10);

    // The same totals from shards, over a gene mask.
    CsrShard shard;
    shard.num_genes = 600;
    shard.row_offsets.clear();
    shard.row_offsets.push_back(0);
    for (const auto& row : rows) {
        for (std::size_t gene = 0; gene < row.size(); ++gene) {
            shard.gene_indices.push_back(static_cast<std::int32_t>(gene));
            shard.values.push_back(row[gene]);
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    const auto num_rows = static_cast<std::int64_t>(rows.size());
    std::vector<CsrShard> parts;
    for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 40}, {40, num_rows}}) {
        CsrShard part;
        part.num_genes = 600;
        part.row_begin = begin;
        part.row_offsets.clear();
        for (auto row = begin; row <= end; ++row)
            part.row_offsets.push_back(shard.row_offsets[static_cast<std::size_t>(row)] -
                                       shard.row_offsets[static_cast<std::size_t>(begin)]);
        const auto first = shard.row_offsets[static_cast<std::size_t>(begin)];
        const auto last = shard.row_offsets[static_cast<std::size_t>(end)];
        part.gene_indices.assign(shard.gene_indices.begin() + first, shard.gene_indices.begin() + last);
        part.values.assign(shard.values.begin() + first, shard.values.begin() + last);
        parts.push_back(std::move(part));
    }
    const ShardSet shards = ShardSet::make_cpu(ShardedCsr(MatrixShape{num_rows, 600}, std::move(parts)));
    JobContext ctx;
    const auto all = numpy_float32_row_sums(shards, {}, ctx);
    ASSERT_EQ(all.size(), rows.size());
    for (std::size_t row = 0; row < rows.size(); ++row) EXPECT_EQ(all[row], expected[row]);
    std::vector<std::uint8_t> even(600, 0);
    for (std::size_t gene = 0; gene < 600; gene += 2) even[gene] = 1;
    const auto masked = numpy_float32_row_sums(shards, even, ctx);
    for (std::size_t row = 0; row < rows.size(); ++row) {
        std::vector<float> kept;
        for (std::size_t gene = 0; gene < rows[row].size(); gene += 2) kept.push_back(rows[row][gene]);
        EXPECT_EQ(masked[row], static_cast<double>(numpy_float32_sum(kept)));
    }
}

}  // namespace
}  // namespace fathom
