// Tests of core/algo/ivf_knn (the candidate lists) and of KnnMethod::Ivf in
// nearest_neighbors (the method Auto picks from 8192 cells on): recall against the exact
// search on a clustered simulation, on unclustered data and on real data above scanpy's
// exact threshold, the result contract, determinism across threads and partitions,
// duplicates, far-offset data, small inputs, and option checks.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "core/algo/ivf_knn.hpp"
#include "core/algo/knn.hpp"
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

TEST(IvfKnn, RecallOnClusteredDataAndResultContract) {
    // 20000 cells in k-means clusters of about 256: 78 clusters, of which 16 are probed
    // per cell (the defaults).
    const auto points = gaussian_mixture(20000, 30, 12, 31);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Ivf;
    options.recall_sample = 500;
    const auto result = nearest_neighbors(points, options, ctx);
    EXPECT_EQ(result.method_used, KnnMethod::Ivf);
    const double recall = full_recall(points, result);
    std::printf("[ivf] mixture 20000 x 30: recall %.5f (sampled %.5f)\n", recall, result.recall);
    EXPECT_GE(recall, 0.99);
    EXPECT_NEAR(result.recall, recall, 0.01);
    expect_knn_contract(points, result.graph, 30);
}

TEST(IvfKnn, RefinementLiftsTheRecallOfTooFewProbes) {
    // Unclustered 40-dimensional data, the hard case of an inverted file: one probe
    // misses many neighbours across cluster borders; the neighbours-of-neighbours pass
    // recovers a large part of them.
    std::mt19937_64 generator(32);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    DenseMatrix<float> points(8000, 40);
    for (auto& value : points.values()) value = normal(generator);
    KnnOptions options;
    options.method = KnnMethod::Ivf;
    options.recall_sample = 0;
    options.ivf_cluster_size = 100;
    options.ivf_probes = 2;
    options.ivf_refine_rounds = 0;
    JobContext ctx;
    const double plain = full_recall(points, nearest_neighbors(points, options, ctx));
    options.ivf_refine_rounds = 2;
    const double refined = full_recall(points, nearest_neighbors(points, options, ctx));
    options.ivf_refine_rounds = 1;
    options.ivf_probes = 24;
    const auto good = nearest_neighbors(points, options, ctx);
    const double many_probes = full_recall(points, good);
    std::printf("[ivf] gaussian 8000 x 40: 2 probes %.5f, refined twice %.5f; 24 probes refined once %.5f\n", plain,
                refined, many_probes);
    EXPECT_LT(plain, 0.5);
    EXPECT_GE(refined, plain + 0.1);
    EXPECT_GE(many_probes, 0.84);  // measured 0.860: unclustered data is the hard case
    expect_knn_contract(points, good.graph, 40);
}

TEST(IvfKnn, ReverseNeighboursLiftTheRefinement) {
    // The refinement joins the lists of the points that list a cell besides those the
    // cell lists (NN-descent's local join): on unclustered data with too few probes this
    // finds more of the neighbours the search missed than the forward lists alone, and
    // later passes, which only join new entries, keep adding.
    std::mt19937_64 generator(34);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    DenseMatrix<float> points(8000, 40);
    for (auto& value : points.values()) value = normal(generator);
    KnnOptions options;
    options.method = KnnMethod::Ivf;
    options.recall_sample = 0;
    options.ivf_cluster_size = 100;
    options.ivf_probes = 4;
    options.ivf_refine_rounds = 2;
    options.ivf_refine_reverse = 0;
    JobContext ctx;
    const double forward = full_recall(points, nearest_neighbors(points, options, ctx));
    options.ivf_refine_reverse = 10;
    const double joint = full_recall(points, nearest_neighbors(points, options, ctx));
    options.ivf_refine_rounds = 4;
    const auto more = nearest_neighbors(points, options, ctx);
    const double more_rounds = full_recall(points, more);
    std::printf("[ivf] gaussian 8000 x 40, 4 probes, 2 passes: forward %.5f, with reverse %.5f; 4 passes %.5f\n",
                forward, joint, more_rounds);
    EXPECT_GE(joint, forward + 0.03);
    EXPECT_GE(more_rounds, joint + 0.01);
    expect_knn_contract(points, more.graph, 40);
}

TEST(IvfKnn, ProbesGrowWithTheSquareRootOfTheCellsAboveTheThreshold) {
    KnnOptions options;
    EXPECT_EQ(ivf_probes_for(options, 50000), 20);
    EXPECT_EQ(ivf_probes_for(options, 100000), 20);
    EXPECT_EQ(ivf_probes_for(options, 150000), 24);  // 20 sqrt(1.5) = 24.49
    EXPECT_EQ(ivf_probes_for(options, 400000), 40);
    EXPECT_EQ(ivf_probes_for(options, 1300000), 72);  // 20 sqrt(13) = 72.11
    EXPECT_EQ(ivf_probes_for(options, 1000000000), detail::kIvfMaxProbes);
    options.ivf_probes_scale_from = 0;
    EXPECT_EQ(ivf_probes_for(options, 1300000), 20);
}

TEST(IvfKnn, RecallOnRealDataAboveTheExactThreshold) {
    const auto path = test::shared_reference("scanpy_neurons10k_1000genes/X_pca.npy");
    FATHOM_REQUIRE_PATH(path);
    const DenseMatrix<float> points = test::read_npy_float_matrix(path);
    ASSERT_GE(points.rows(), KnnOptions{}.exact_below);
    JobContext ctx;
    const auto result = nearest_neighbors(points, KnnOptions{}, ctx);  // Auto
    EXPECT_EQ(result.method_used, KnnMethod::Ivf);
    const double recall = full_recall(points, result);
    std::printf("[ivf] neurons10k %lld x %lld: recall %.5f (sampled %.5f)\n", static_cast<long long>(points.rows()),
                static_cast<long long>(points.cols()), recall, result.recall);
    EXPECT_GE(recall, 0.99);
    expect_knn_contract(points, result.graph, static_cast<int>(points.cols()));
}


/// The IVF candidate lists on one thread and on all: the same bits (returned).
detail::KnnCandidates candidates_on_one_and_all_threads(const DenseMatrix<float>& points, int num_dims,
                                                        const detail::IvfParams& params, JobContext& ctx) {
    detail::KnnCandidates single;
    {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        single = detail::ivf_knn(points, num_dims, params, ctx);
    }
    auto parallel = detail::ivf_knn(points, num_dims, params, ctx);
    EXPECT_EQ(parallel.indices, single.indices);
    EXPECT_EQ(parallel.sq_distances, single.sq_distances);
    return parallel;
}

TEST(IvfKnn, BitIdenticalAcrossThreadsAndPartitions) {
    const auto points = gaussian_mixture(12000, 20, 8, 33);
    KnnOptions options;
    options.method = KnnMethod::Ivf;
    options.ivf_cluster_size = 100;
    options.recall_sample = 0;
    options.seed = 5;
    test::expect_thread_and_partition_invariant(points, options);
    JobContext ctx;
    // The candidate lists themselves, before the re-ranking, are the same too.
    detail::IvfParams params;
    params.pool = 16;
    params.cluster_size = 100;
    params.seed = 5;
    const detail::KnnCandidates single = candidates_on_one_and_all_threads(points, 20, params, ctx);
    // Another seed gives another k-means, hence other candidates for a few cells.
    params.seed = 6;
    EXPECT_NE(detail::ivf_knn(points, 20, params, ctx).indices, single.indices);
}

/// A 12000 x 20 Gaussian mixture (8 clusters) with its exact 15-neighbour graph, and the
/// share of every cell's exact neighbours (the cell itself left out) that candidate lists hold.
struct MixtureRecall {
    static constexpr int kNeighbors = 15;
    DenseMatrix<float> points;
    KnnGraph exact;
    explicit MixtureRecall(std::uint64_t seed) : points(gaussian_mixture(12000, 20, 8, seed)) {
        JobContext ctx;
        exact = exact_neighbors(points, 20, kNeighbors, 0, points.rows(), ctx);
    }
    double operator()(const detail::KnnCandidates& found) const {
        std::int64_t hits = 0;
        for (std::int64_t cell = 0; cell < exact.num_cells; ++cell) {
            const auto truth = exact.neighbors(cell);
            const auto* row = found.indices.data() + cell * found.pool;
            for (int slot = 1; slot < kNeighbors; ++slot)
                hits += std::find(row, row + found.pool, truth[static_cast<std::size_t>(slot)]) != row + found.pool;
        }
        return static_cast<double>(hits) / static_cast<double>(exact.num_cells * (kNeighbors - 1));
    }
};

TEST(IvfKnn, TwoLevelKmeansKeepsTheRecallAndIsThreadIndependent) {
    // 240 clusters trained in two levels (16 coarse clusters, each split into its share)
    // against the flat k-means: the candidate lists find as many of the exact neighbours,
    // and the two-level training gives the same bits on one thread and on all.
    const MixtureRecall recall(37);
    const DenseMatrix<float>& points = recall.points;
    const int num_neighbors = MixtureRecall::kNeighbors;
    JobContext ctx;
    detail::IvfParams params;
    params.pool = num_neighbors - 1;
    params.cluster_size = 50;
    params.probes = 12;
    params.two_level_from = 0;
    const double flat = recall(detail::ivf_knn(points, 20, params, ctx));
    params.two_level_from = 64;
    const detail::KnnCandidates parallel = candidates_on_one_and_all_threads(points, 20, params, ctx);
    const double two_level = recall(parallel);
    std::printf("[ivf] mixture 12000 x 20, 240 clusters, 12 probes, one refinement: flat k-means %.5f, two levels %.5f\n",
                flat, two_level);
    EXPECT_GE(two_level, flat - 0.005);
    expect_full_candidate_lists(points, parallel, num_neighbors - 1, 20);
}

TEST(IvfKnn, ProbesChosenByCoarseGroupKeepTheRecallAndAreThreadIndependent) {
    // 1200 clusters trained in two levels (35 coarse groups): a cell's probes chosen among
    // the centres of its 4 nearest groups find as many exact neighbours as probes chosen
    // among all 1200 centres, the same bits on one thread and on all; choosing among every
    // group's centres is the search over all centres, bit for bit.
    const MixtureRecall recall(41);
    const DenseMatrix<float>& points = recall.points;
    const int num_neighbors = MixtureRecall::kNeighbors;
    JobContext ctx;
    detail::IvfParams params;
    params.pool = num_neighbors - 1;
    params.cluster_size = 10;
    params.probes = 24;
    params.two_level_from = 64;
    params.assign_groups = 0;
    const detail::KnnCandidates all_centres = detail::ivf_knn(points, 20, params, ctx);
    params.assign_groups = 1000;
    EXPECT_EQ(detail::ivf_knn(points, 20, params, ctx).indices, all_centres.indices);
    params.assign_groups = 4;
    const detail::KnnCandidates by_group = candidates_on_one_and_all_threads(points, 20, params, ctx);
    const double flat = recall(all_centres);
    const double grouped = recall(by_group);
    std::printf("[ivf] mixture 12000 x 20, 1200 clusters, 24 probes: probes among all centres %.5f, among 4 groups' %.5f\n",
                flat, grouped);
    EXPECT_GE(grouped, flat - 0.005);
    EXPECT_GT(grouped, 0.9);
    expect_full_candidate_lists(points, by_group, num_neighbors - 1, 20);
}

TEST(IvfKnn, CandidatesAreDistinctOthersWithDoubleDistances) {
    const auto points = gaussian_mixture(3000, 12, 5, 34);
    JobContext ctx;
    detail::IvfParams params;
    params.pool = 20;
    params.cluster_size = 40;
    params.probes = 6;
    const auto found = detail::ivf_knn(points, 12, params, ctx);
    EXPECT_EQ(found.iterations, 1);  // refinement passes run
    expect_full_candidate_lists(points, found, 20, 12);
}

TEST(IvfKnn, SmallInputsAreExact) {
    // Fewer cells than probed clusters hold: every cell is compared with all others.
    expect_exact_on_small_inputs(KnnMethod::Ivf, 35, {2, 3, 17, 300});
}

TEST(IvfKnn, DuplicatePointsAndFarOffsetData) {
    // Many identical cells (one k-means cluster holds them all) and a large common
    // offset (the search centres the points before its float dot products).
    auto points = gaussian_mixture(4000, 8, 3, 36);
    for (std::int64_t cell = 0; cell < 600; ++cell)
        for (int dim = 0; dim < 8; ++dim) points(cell, dim) = points(0, dim);
    for (auto& value : points.values()) value += 1000.0f;
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Ivf;
    options.ivf_cluster_size = 50;
    const auto result = nearest_neighbors(points, options, ctx);
    expect_knn_contract(points, result.graph, 8);
    for (std::int64_t cell = 1; cell < 600; ++cell) ASSERT_EQ(result.graph.neighbor_distances(cell)[14], 0.0f);
    EXPECT_GE(test::recall_from(points, result, 600), 0.99);
}

TEST(IvfKnn, OptionsAreCheckedByName) {
    const auto expect_named = test::expect_knn_option_named;
    KnnOptions options;
    options.ivf_cluster_size = 0;
    expect_named(options, "ivf_cluster_size");
    options = {};
    options.ivf_probes = 0;
    expect_named(options, "ivf_probes");
    options = {};
    options.ivf_probes = detail::kIvfMaxProbes + 1;
    expect_named(options, "ivf_probes");
    options = {};
    options.ivf_refine_rounds = -1;
    expect_named(options, "ivf_refine_rounds");
    options = {};
    options.ivf_refine_fanout = 0;
    expect_named(options, "ivf_refine_fanout");
    options = {};
    options.ivf_refine_reverse = -1;
    expect_named(options, "ivf_refine_reverse");
    options = {};
    options.ivf_assign_groups = -1;
    expect_named(options, "ivf_assign_groups");
    options = {};
    options.ivf_probes_scale_from = -1;
    expect_named(options, "ivf_probes_scale_from");
    options = {};
    options.ivf_extra = -1;
    expect_named(options, "ivf_extra");
    options = {};
    options.ivf_extra = 2000;
    expect_named(options, "ivf_extra");
    EXPECT_EQ(test::knn_option_error(KnnOptions{}), "");
    EXPECT_EQ(parse_knn_method("ivf", "--knn-method"), KnnMethod::Ivf);
    EXPECT_STREQ(knn_method_name(KnnMethod::Ivf), "ivf");

    // ivf_knn's own checks.
    const auto points = gaussian_mixture(50, 4, 2, 37);
    JobContext ctx;
    const auto rejects = [&](detail::IvfParams params, int dims) {
        EXPECT_THROW(detail::ivf_knn(points, dims, params, ctx), std::invalid_argument);
    };
    detail::IvfParams params;
    params.pool = 10;
    rejects(params, 0);
    rejects(params, 5);
    params.pool = 50;
    rejects(params, 4);
    params = {};
    params.pool = 10;
    params.probes = 0;
    rejects(params, 4);
    params.probes = 16;
    params.cluster_size = 0;
    rejects(params, 4);
    params.cluster_size = 8;
    params.refine_fanout = 0;
    rejects(params, 4);
}

}  // namespace
}  // namespace fathom
