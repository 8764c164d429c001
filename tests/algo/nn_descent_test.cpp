// Tests of core/algo/nn_descent (the candidate lists) and of KnnMethod::NnDescent in
// nearest_neighbors: recall against the exact search on a clustered simulation and on
// real data above scanpy's exact threshold, the result contract, determinism across
// threads and partitions, small inputs, and option checks.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string>

#include "core/algo/knn.hpp"
#include "core/algo/nn_descent.hpp"
#include "core/engine/JobContext.hpp"
#include "tests/algo/knn_checks.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/simulate.hpp"

namespace fathom {
namespace {

using test::gaussian_mixture;

using test::expect_knn_contract;
using test::full_recall;
using test::sq_distance;

TEST(NnDescent, RecallOnClusteredDataAndResultContract) {
    const auto points = gaussian_mixture(20000, 30, 12, 11);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::NnDescent;
    options.recall_sample = 500;
    const auto result = nearest_neighbors(points, options, ctx);
    EXPECT_EQ(result.method_used, KnnMethod::NnDescent);
    EXPECT_GE(result.nndescent_iterations, 1);
    const double recall = full_recall(points, result);
    std::printf("[nndescent] mixture 20000 x 30: recall %.5f (sampled %.5f), %d rounds\n", recall, result.recall,
                result.nndescent_iterations);
    EXPECT_GE(recall, 0.99);
    EXPECT_NEAR(result.recall, recall, 0.01);
    expect_knn_contract(points, result.graph, 30);
}

TEST(NnDescent, RecallOnRealDataAboveTheExactThreshold) {
    const auto path = test::shared_reference("scanpy_neurons10k_1000genes/X_pca.npy");
    FATHOM_REQUIRE_PATH(path);
    const DenseMatrix<float> points = test::read_npy_float_matrix(path);
    ASSERT_GE(points.rows(), KnnOptions{}.exact_below);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::NnDescent;
    const auto result = nearest_neighbors(points, options, ctx);
    const double recall = full_recall(points, result);
    std::printf("[nndescent] neurons10k %lld x %lld: recall %.5f, %d rounds\n", static_cast<long long>(points.rows()),
                static_cast<long long>(points.cols()), recall, result.nndescent_iterations);
    EXPECT_GE(recall, 0.99);
    expect_knn_contract(points, result.graph, static_cast<int>(points.cols()));
}

TEST(NnDescent, BitIdenticalAcrossThreadsAndPartitions) {
    const auto points = gaussian_mixture(12000, 20, 8, 12);
    KnnOptions options;
    options.method = KnnMethod::NnDescent;
    options.recall_sample = 0;
    options.seed = 5;
    JobContext ctx;
    KnnResult reference;
    {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        reference = nearest_neighbors(points, options, ctx);
    }
    for (const int partitions : {1, 3}) {
        const tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
        options.num_partitions = partitions;
        const auto other = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(other.graph.indices, reference.graph.indices) << partitions << " partitions";
        EXPECT_EQ(other.graph.distances, reference.graph.distances) << partitions << " partitions";
        EXPECT_EQ(other.nndescent_iterations, reference.nndescent_iterations);
    }
    // Another seed gives another (equally good) graph.
    options.seed = 6;
    options.num_partitions = 1;
    const auto reseeded = nearest_neighbors(points, options, ctx);
    EXPECT_NE(reseeded.graph.indices, reference.graph.indices);
}

TEST(NnDescent, GraphSearchRaisesTheRecallOfAStalledGraphAndStaysDeterministic) {
    // Unclustered 40-dimensional data with one short NN-descent round and few
    // candidates: the graph is far from converged, as NN-descent leaves large inputs.
    std::mt19937_64 generator(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    DenseMatrix<float> points(8000, 40);
    for (auto& value : points.values()) value = normal(generator);
    KnnOptions options;
    options.method = KnnMethod::NnDescent;
    options.recall_sample = 0;
    options.nndescent_iterations = 1;
    options.nndescent_max_candidates = 8;
    options.nndescent_trees = 1;
    JobContext ctx;
    const auto plain = nearest_neighbors(points, options, ctx);
    const double plain_recall = full_recall(points, plain);
    options.nndescent_search_ef = 64;
    KnnResult refined;
    {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        refined = nearest_neighbors(points, options, ctx);
    }
    const double refined_recall = full_recall(points, refined);
    std::printf("[nndescent] gaussian 8000 x 40, 1 round: recall %.5f, with graph search %.5f\n", plain_recall,
                refined_recall);
    EXPECT_LT(plain_recall, 0.9);
    EXPECT_GE(refined_recall, plain_recall + 0.05);
    expect_knn_contract(points, refined.graph, 40);
    for (const int partitions : {1, 3}) {
        const tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
        options.num_partitions = partitions;
        const auto other = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(other.graph.indices, refined.graph.indices) << partitions << " partitions";
        EXPECT_EQ(other.graph.distances, refined.graph.distances) << partitions << " partitions";
    }
}

TEST(NnDescent, CandidatesAreDistinctOthersWithDoubleDistances) {
    const auto points = gaussian_mixture(3000, 12, 5, 13);
    JobContext ctx;
    detail::NnDescentParams params;
    params.pool = 20;
    const auto found = detail::nn_descent(points, 12, params, ctx);
    ASSERT_EQ(found.pool, 20);
    ASSERT_EQ(found.indices.size(), 3000u * 20u);
    for (std::int64_t cell = 0; cell < 3000; ++cell) {
        std::set<std::int32_t> seen;
        for (int slot = 0; slot < 20; ++slot) {
            const auto entry = static_cast<std::size_t>(cell * 20 + slot);
            const std::int32_t other = found.indices[entry];
            ASSERT_GE(other, 0) << "cell " << cell << " has a short list";
            ASSERT_NE(other, cell);
            ASSERT_TRUE(seen.insert(other).second) << "cell " << cell << " lists " << other << " twice";
            ASSERT_EQ(found.sq_distances[entry], sq_distance(points, cell, other, 12));
        }
    }
}

TEST(NnDescent, SmallInputsAreExact) {
    // Fewer cells than a tree leaf: one leaf holds every cell, so the lists are exact.
    for (const std::int64_t cells : {2, 3, 17, 30}) {
        const auto points = gaussian_mixture(cells, 5, 2, 14 + static_cast<std::uint64_t>(cells));
        JobContext ctx;
        KnnOptions options;
        options.method = KnnMethod::NnDescent;
        const auto result = nearest_neighbors(points, options, ctx);
        options.method = KnnMethod::Exact;
        const auto exact = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(result.graph.indices, exact.graph.indices) << cells << " cells";
        EXPECT_EQ(result.graph.distances, exact.graph.distances) << cells << " cells";
    }
}

TEST(NnDescent, DuplicatePointsAndAShortLeafStillFillEveryRow) {
    // Many identical cells (every split ties) and a leaf size close to k.
    auto points = gaussian_mixture(2000, 8, 3, 15);
    for (std::int64_t cell = 0; cell < 600; ++cell)
        for (int dim = 0; dim < 8; ++dim) points(cell, dim) = points(0, dim);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::NnDescent;
    options.nndescent_leaf_size = 8;
    options.nndescent_trees = 1;
    const auto result = nearest_neighbors(points, options, ctx);
    expect_knn_contract(points, result.graph, 8);
    for (std::int64_t cell = 1; cell < 600; ++cell) ASSERT_EQ(result.graph.neighbor_distances(cell)[14], 0.0f);
    // Recall of the other cells (among the duplicates any 14 copies are right).
    KnnOptions exact;
    exact.method = KnnMethod::Exact;
    const auto truth = nearest_neighbors(points, exact, ctx);
    std::vector<std::int64_t> others(1400);
    std::iota(others.begin(), others.end(), 600);
    KnnGraph truth_rows;
    truth_rows.num_cells = 1400;
    truth_rows.num_neighbors = truth.graph.num_neighbors;
    truth_rows.indices.assign(truth.graph.indices.begin() + 600 * 15, truth.graph.indices.end());
    truth_rows.distances.assign(truth.graph.distances.begin() + 600 * 15, truth.graph.distances.end());
    EXPECT_GE(knn_recall(result.graph, truth_rows, others), 0.99);
}

TEST(NnDescent, OptionsAreCheckedByName) {
    const auto message = [](KnnOptions options) {
        try {
            validate(options, 1000, 10);
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string();
    };
    const auto expect_named = [&](KnnOptions options, const std::string& field) {
        EXPECT_NE(message(options).find("KnnOptions::" + field), std::string::npos) << field;
    };
    KnnOptions options;
    options.nndescent_trees = -1;
    expect_named(options, "nndescent_trees");
    options = {};
    options.nndescent_leaf_size = 1;
    expect_named(options, "nndescent_leaf_size");
    options = {};
    options.nndescent_leaf_size = 5000;
    expect_named(options, "nndescent_leaf_size");
    options = {};
    options.nndescent_extra = -1;
    expect_named(options, "nndescent_extra");
    options = {};
    options.nndescent_extra = 2000;
    expect_named(options, "nndescent_extra");
    options = {};
    options.nndescent_max_candidates = 0;
    expect_named(options, "nndescent_max_candidates");
    options = {};
    options.nndescent_max_candidates = 257;
    expect_named(options, "nndescent_max_candidates");
    options = {};
    options.nndescent_iterations = -1;
    expect_named(options, "nndescent_iterations");
    options = {};
    options.nndescent_delta = -0.5;
    expect_named(options, "nndescent_delta");
    options = {};
    options.nndescent_search_ef = -1;
    expect_named(options, "nndescent_search_ef");
    options = {};
    options.nndescent_search_ef = detail::kNnDescentMaxSearchEf + 1;
    expect_named(options, "nndescent_search_ef");
    EXPECT_EQ(message(KnnOptions{}), "");

    EXPECT_EQ(parse_knn_method("nndescent", "--knn-method"), KnnMethod::NnDescent);
    EXPECT_EQ(parse_knn_method("hnsw", "--knn-method"), KnnMethod::Hnsw);
    try {
        parse_knn_method("annoy", "--knn-method");
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("--knn-method"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("annoy"), std::string::npos);
    }
}

}  // namespace
}  // namespace fathom
