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
#include <string>

#include "core/algo/knn.hpp"
#include "core/algo/nn_descent.hpp"
#include "core/types/JobContext.hpp"
#include "tests/algo/knn_checks.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/simulate.hpp"

namespace fathom {
namespace {

using test::expect_exact_on_small_inputs;
using test::expect_full_candidate_lists;
using test::expect_knn_contract;
using test::full_recall;
using test::gaussian_mixture;

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
    const KnnResult reference = test::expect_thread_and_partition_invariant(points, options);
    JobContext ctx;
    // Another seed gives another (equally good) graph.
    options.seed = 6;
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
    const KnnResult refined = test::expect_thread_and_partition_invariant(points, options);
    const double refined_recall = full_recall(points, refined);
    std::printf("[nndescent] gaussian 8000 x 40, 1 round: recall %.5f, with graph search %.5f\n", plain_recall,
                refined_recall);
    EXPECT_LT(plain_recall, 0.9);
    EXPECT_GE(refined_recall, plain_recall + 0.05);
    expect_knn_contract(points, refined.graph, 40);
}

TEST(NnDescent, CandidatesAreDistinctOthersWithDoubleDistances) {
    const auto points = gaussian_mixture(3000, 12, 5, 13);
    JobContext ctx;
    detail::NnDescentParams params;
    params.pool = 20;
    const auto found = detail::nn_descent(points, 12, params, ctx);
    expect_full_candidate_lists(points, found, 20, 12);
}

TEST(NnDescent, SmallInputsAreExact) {
    // Fewer cells than a tree leaf: one leaf holds every cell, so the lists are exact.
    expect_exact_on_small_inputs(KnnMethod::NnDescent, 14, {2, 3, 17, 30});
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
    EXPECT_GE(test::recall_from(points, result, 600), 0.99);
}

TEST(NnDescent, OptionsAreCheckedByName) {
    const auto expect_named = test::expect_knn_option_named;
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
    EXPECT_EQ(test::knn_option_error(KnnOptions{}), "");

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
