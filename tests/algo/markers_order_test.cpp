// Equal marker scores come out in Scanpy's order: numpy_select_top_n against
// scanpy 1.9.6's _select_top_n run by NumPy itself on tie-heavy scores, the order of any
// number of tied genes included (sorted and reversed inputs drive introselect into its
// median-of-medians fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/algo/markers.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

TEST(MarkerOrder, EqualScoresInNumpysOrder) {
    FATHOM_REQUIRE_PYTHON("numpy");
    // Score vectors with many exact ties (and a NaN), of sizes around NumPy's thresholds.
    std::mt19937 random(21);
    nlohmann::json cases = nlohmann::json::array();
    for (const std::int64_t size : {5, 17, 18, 40, 100, 101, 300, 1000, 2500, 20000}) {
        for (const int levels : {2, 3, 20, 1000}) {
            for (const int arrangement : {0, 1, 2}) {  // random, ascending, descending
                if (size > 2500 && levels > 3) continue;
                std::uniform_int_distribution<int> level(0, levels - 1);
                std::vector<double> scores(static_cast<std::size_t>(size));
                for (auto& score : scores) score = static_cast<double>(level(random)) / 7.0 - 1.0;
                if (arrangement == 1) std::sort(scores.begin(), scores.end());
                if (arrangement == 2) std::sort(scores.begin(), scores.end(), std::greater<>());
                if (size > 30 && arrangement == 0) scores[7] = std::nan("");
                for (const std::int64_t n_top : {std::int64_t{1}, std::int64_t{3}, std::int64_t{10}, std::int64_t{16},
                                                 std::int64_t{17}, std::int64_t{25}, std::int64_t{100}, size / 2, size}) {
                    if (n_top > size || n_top < 1) continue;
                    cases.push_back({{"scores", scores}, {"n_top", n_top}});
                }
            }
        }
    }
    const auto folder = test::temp_dir("marker-order");
    const auto input = folder / "cases.json", output = folder / "orders.json";
    // NaN does not survive JSON: sent as null and restored.
    std::ofstream(input) << cases.dump();
    const auto result = test::run_python(R"(
import json, sys
import numpy as np
def _select_top_n(scores, n_top):  # scanpy 1.9.6 tools/_rank_genes_groups.py
    n_from = scores.shape[0]
    reference_indices = np.arange(n_from, dtype=int)
    partition = np.argpartition(scores, -n_top)[-n_top:]
    partial_indices = np.argsort(scores[partition])[::-1]
    global_indices = reference_indices[partition][partial_indices]
    return global_indices
out = []
for case in json.load(open(sys.argv[1])):
    scores = np.array([np.nan if s is None else s for s in case["scores"]], dtype=np.float64)
    out.append(_select_top_n(scores, case["n_top"]).tolist())
json.dump(out, open(sys.argv[2], "w"))
)",
                                         {input.string(), output.string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(output);
    const auto expected = nlohmann::json::parse(in);
    ASSERT_EQ(expected.size(), cases.size());
    int differs_from_stable = 0;
    for (std::size_t index = 0; index < cases.size(); ++index) {
        std::vector<double> scores;
        for (const auto& score : cases[index]["scores"]) scores.push_back(score.is_null() ? std::nan("") : score.get<double>());
        const auto n_top = cases[index]["n_top"].get<std::int64_t>();
        const auto ours = detail::numpy_select_top_n(scores, n_top);
        const auto theirs = expected[index].get<std::vector<std::int32_t>>();
        EXPECT_EQ(ours, theirs) << "case " << index << ": " << scores.size() << " scores, n_top " << n_top;
        // A stable descending sort (gene order among ties) is not NumPy's order.
        std::vector<std::int32_t> stable(scores.size());
        std::iota(stable.begin(), stable.end(), 0);
        std::stable_sort(stable.begin(), stable.end(), [&](auto a, auto b) {
            return scores[a] > scores[b] || (std::isnan(scores[a]) && !std::isnan(scores[b]));
        });
        stable.resize(static_cast<std::size_t>(n_top));
        differs_from_stable += stable != ours;
    }
    EXPECT_GT(differs_from_stable, 10);
}

}  // namespace
}  // namespace fathom
