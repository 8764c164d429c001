// Tests of core/algo/umap and spectral: the a/b curve fit, the spectral solver against
// a dense eigensolver, determinism across runs and thread counts, and neighbourhood
// preservation (trustworthiness) against scanpy's own X_umap on the shared references.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "core/algo/neighbors.hpp"
#include "core/algo/spectral.hpp"
#include "core/algo/umap.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/errors.hpp"
#include "tests/support/accelerators.hpp"
#include "tests/support/graph_metrics.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

DenseMatrix<float> mixture(std::int64_t cells, int dims, int clusters, std::uint64_t seed, float spread = 5.0f) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    DenseMatrix<float> centres(clusters, dims);
    for (auto& value : centres.values()) value = spread * normal(generator);
    DenseMatrix<float> points(cells, dims);
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        const auto cluster = static_cast<std::int64_t>(cell % clusters);
        for (int dim = 0; dim < dims; ++dim) points(cell, dim) = centres(cluster, dim) + normal(generator);
    }
    return points;
}

CsrGraph graph_of(const DenseMatrix<float>& points) {
    JobContext ctx;
    return neighbors(points, NeighborsOptions{}, ctx).connectivities;
}

bool all_finite(const DenseMatrix<float>& matrix) {
    for (const float value : matrix.values())
        if (!std::isfinite(value)) return false;
    return true;
}

TEST(FindAbParams, MatchesUmapForScanpyDefaults) {
    const auto curve = find_ab_params(1.0, 0.5);
    EXPECT_NEAR(curve.a, 0.5830, 1e-3);
    EXPECT_NEAR(curve.b, 1.3350, 2e-3);
    std::printf("[umap] find_ab_params(1, 0.5): a=%.6f b=%.6f\n", curve.a, curve.b);
    // umap's own default min_dist=0.1: a = 1.577, b = 0.895.
    const auto umap_default = find_ab_params(1.0, 0.1);
    EXPECT_NEAR(umap_default.a, 1.577, 2e-3);
    EXPECT_NEAR(umap_default.b, 0.895, 2e-3);
    EXPECT_THROW(find_ab_params(0.0, 0.5), std::invalid_argument);
}

TEST(Spectral, KrylovSchurMatchesDenseEigenvectors) {
    // 800 cells: above the dense cut-off, so the iterative solver runs.
    const auto points = mixture(800, 10, 3, 11, 1.5f);
    const auto graph = graph_of(points);
    JobContext ctx;
    SpectralOptions options;
    options.tolerance = 1e-8;
    const auto layout = spectral_layout(graph, {}, options, ctx);
    ASSERT_EQ(layout.num_graph_components, 1);
    EXPECT_TRUE(layout.converged);
    // Dense reference: eigenvectors 2 and 3 of I - D^-1/2 W D^-1/2.
    const auto n = graph.num_cells;
    Eigen::MatrixXd adjacency = Eigen::MatrixXd::Zero(n, n);
    for (std::int64_t row = 0; row < n; ++row)
        for (std::size_t entry = 0; entry < graph.row_indices(row).size(); ++entry)
            adjacency(row, graph.row_indices(row)[entry]) = graph.row_values(row)[entry];
    const Eigen::VectorXd scale = adjacency.rowwise().sum().cwiseSqrt().cwiseInverse();
    const Eigen::MatrixXd laplacian =
        Eigen::MatrixXd::Identity(n, n) - scale.asDiagonal() * adjacency * scale.asDiagonal();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(laplacian);
    for (int column = 0; column < 2; ++column) {
        Eigen::VectorXd ours(n);
        for (std::int64_t cell = 0; cell < n; ++cell) ours[cell] = layout.coordinates(cell, column);
        const double cosine = std::fabs(ours.normalized().dot(solver.eigenvectors().col(column + 1)));
        EXPECT_GT(cosine, 0.999) << "eigenvector " << column + 1;
    }
}

// ---- an accelerator's sparse product (Accelerator::upload_sparse_matrix) ----

TEST(Spectral, NormalizedAdjacencyCsrMultipliesLikeTheDenseOperator) {
    const auto graph = graph_of(mixture(300, 8, 2, 21, 1.5f));
    const auto csr = normalized_adjacency_csr(graph);
    ASSERT_EQ(csr.num_vertices, 300);
    EXPECT_EQ(csr.offsets, graph.row_offsets);
    const auto n = graph.num_cells;
    Eigen::MatrixXd adjacency = Eigen::MatrixXd::Zero(n, n);
    for (std::int64_t row = 0; row < n; ++row)
        for (std::size_t entry = 0; entry < graph.row_indices(row).size(); ++entry)
            adjacency(row, graph.row_indices(row)[entry]) = graph.row_values(row)[entry];
    const Eigen::VectorXd scale = adjacency.rowwise().sum().cwiseSqrt().cwiseInverse();
    const Eigen::MatrixXd normalized = scale.asDiagonal() * adjacency * scale.asDiagonal();
    std::mt19937_64 generator(5);
    std::normal_distribution<double> normal;
    Eigen::VectorXd x(n), y(n);
    for (std::int64_t row = 0; row < n; ++row) x[row] = normal(generator);
    multiply(csr, x.data(), y.data());
    EXPECT_LT((y - normalized * x).norm(), 1e-12 * x.norm());
}

/// A stand-in accelerator: the host product over the CSR it is given (what the device
/// computes), counting uploads and products; throws DeviceError from product
/// `fail_at` on (0 = never).
struct HostOperator {
    int uploads = 0, products = 0, fail_at = 0;
    struct Matrix final : DeviceSparseMatrix {
        HostOperator* owner = nullptr;
        NormalizedAdjacencyCsr csr;
        void multiply(const double* x, double* y, int count) override {
            for (int vector = 0; vector < count; ++vector) {
                if (owner->fail_at > 0 && ++owner->products >= owner->fail_at)
                    throw DeviceError("cuda:0: cusparseSpMM(...) failed: CUSPARSE_STATUS_EXECUTION_FAILED");
                if (owner->fail_at == 0) ++owner->products;
                fathom::multiply(csr, x + vector * csr.num_vertices, y + vector * csr.num_vertices);
            }
        }
    };
    test::FunctionAccelerator accelerator() {
        test::FunctionAccelerator accelerator;
        accelerator.sparse = [this](std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                                    std::span<const double> values, JobContext&) -> std::unique_ptr<DeviceSparseMatrix> {
            ++uploads;
            auto matrix = std::make_unique<Matrix>();
            matrix->owner = this;
            matrix->csr.num_vertices = static_cast<std::int64_t>(offsets.size()) - 1;
            matrix->csr.offsets.assign(offsets.begin(), offsets.end());
            matrix->csr.columns.assign(columns.begin(), columns.end());
            matrix->csr.values.assign(values.begin(), values.end());
            return matrix;
        };
        return accelerator;
    }
};

TEST(Spectral, AcceleratedOperatorGivesTheHostLayout) {
    const auto graph = graph_of(mixture(800, 10, 3, 11, 1.5f));
    JobContext ctx;
    SpectralOptions options;
    options.tolerance = 1e-8;
    const auto host = spectral_layout(graph, {}, options, ctx);
    ASSERT_EQ(host.num_graph_components, 1);
    HostOperator device;
    const test::FunctionAccelerator accelerator = device.accelerator();
    const auto accelerated = spectral_layout(graph, {}, options, ctx, &accelerator);
    EXPECT_EQ(device.uploads, 1);
    EXPECT_GT(device.products, 10) << "the Krylov-Schur iteration multiplies through the accelerator";
    EXPECT_TRUE(accelerated.converged);
    ASSERT_EQ(accelerated.coordinates.rows(), host.coordinates.rows());
    double worst = 0.0;
    for (std::size_t index = 0; index < host.coordinates.values().size(); ++index)
        worst = std::max(worst, std::fabs(host.coordinates.values()[index] - accelerated.coordinates.values()[index]));
    EXPECT_LT(worst, 1e-6) << "same method, same start, same signs; only the product's rounding differs";
}

TEST(Spectral, DeviceFailureMidSolveRestartsOnTheHostAndDecliningKeepsTheHostPath) {
    const auto graph = graph_of(mixture(800, 10, 3, 11, 1.5f));
    JobContext ctx;
    SpectralOptions options;
    const auto host = spectral_layout(graph, {}, options, ctx);
    HostOperator failing;
    failing.fail_at = 5;
    const test::FunctionAccelerator accelerator = failing.accelerator();
    const auto recovered = spectral_layout(graph, {}, options, ctx, &accelerator);
    EXPECT_EQ(failing.products, 5);
    EXPECT_EQ(recovered.coordinates, host.coordinates) << "the host repeats the whole solve from the same start";
    EXPECT_EQ(recovered.restarts, host.restarts);
    EXPECT_NE(ctx.progress().message.find("CUSPARSE_STATUS_EXECUTION_FAILED; the spectral initialisation runs on the CPU instead"),
              std::string::npos) << ctx.progress().message;
    const test::FunctionAccelerator declining;
    EXPECT_EQ(spectral_layout(graph, {}, options, ctx, &declining).coordinates, host.coordinates);
}

TEST(Spectral, ThreeComponentsSpanTheNextThreeEigenvectors) {
    // Four clusters: eigenvalues 2..4 are small and apart from the bulk, but may be
    // close to each other, so the check is on the subspace, not on single vectors.
    const auto points = mixture(800, 10, 4, 13, 1.5f);
    const auto graph = graph_of(points);
    JobContext ctx;
    SpectralOptions options;
    options.num_components = 3;
    options.tolerance = 1e-8;
    const auto layout = spectral_layout(graph, {}, options, ctx);
    ASSERT_EQ(layout.num_graph_components, 1);
    ASSERT_EQ(layout.coordinates.cols(), 3);
    EXPECT_TRUE(layout.converged);
    const auto n = graph.num_cells;
    Eigen::MatrixXd adjacency = Eigen::MatrixXd::Zero(n, n);
    for (std::int64_t row = 0; row < n; ++row)
        for (std::size_t entry = 0; entry < graph.row_indices(row).size(); ++entry)
            adjacency(row, graph.row_indices(row)[entry]) = graph.row_values(row)[entry];
    const Eigen::VectorXd scale = adjacency.rowwise().sum().cwiseSqrt().cwiseInverse();
    const Eigen::MatrixXd laplacian =
        Eigen::MatrixXd::Identity(n, n) - scale.asDiagonal() * adjacency * scale.asDiagonal();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(laplacian);
    const Eigen::MatrixXd basis = solver.eigenvectors().middleCols(1, 3);
    Eigen::MatrixXd ours(n, 3);
    for (std::int64_t cell = 0; cell < n; ++cell)
        for (int column = 0; column < 3; ++column) ours(cell, column) = layout.coordinates(cell, column);
    for (int column = 0; column < 3; ++column) {
        const Eigen::VectorXd vector = ours.col(column).normalized();
        // Length of the projection onto span(eigenvectors 2..4): 1 when inside it.
        EXPECT_GT((basis.transpose() * vector).norm(), 0.999) << "column " << column;
    }
    // The three columns are distinct directions (not one eigenvector repeated).
    const Eigen::MatrixXd gram = ours.colwise().normalized().transpose() * ours.colwise().normalized();
    for (int a = 0; a < 3; ++a)
        for (int b = a + 1; b < 3; ++b) EXPECT_LT(std::fabs(gram(a, b)), 0.01) << a << "," << b;
}

TEST(Spectral, SinglePrecisionSolveOfALargeComponentMatchesTheDoubleOneOnAnyThreadCount) {
    // 20000 cells: at UMAP's tolerance the solver keeps its basis in single precision; at
    // 1e-9 in double. Same eigenvectors 2 and 3 (as a subspace: they may be close to each
    // other), and the same bits on 1 and 2 threads.
    const auto points = mixture(20000, 10, 3, 17, 0.7f);
    const auto graph = graph_of(points);
    JobContext ctx;
    SpectralOptions options;
    options.tolerance = 1e-3;
    const auto single = spectral_layout(graph, {}, options, ctx);
    ASSERT_EQ(single.num_graph_components, 1);
    EXPECT_TRUE(single.converged);
    options.tolerance = 1e-9;
    const auto precise = spectral_layout(graph, {}, options, ctx);
    EXPECT_TRUE(precise.converged);
    const auto n = graph.num_cells;
    Eigen::MatrixXd basis(n, 2), ours(n, 2);
    for (std::int64_t cell = 0; cell < n; ++cell)
        for (int column = 0; column < 2; ++column) {
            basis(cell, column) = precise.coordinates(cell, column);
            ours(cell, column) = single.coordinates(cell, column);
        }
    const Eigen::MatrixXd orthonormal = Eigen::HouseholderQR<Eigen::MatrixXd>(basis).householderQ() * Eigen::MatrixXd::Identity(n, 2);
    for (int column = 0; column < 2; ++column)
        EXPECT_GT((orthonormal.transpose() * ours.col(column).normalized()).norm(), 0.999) << "column " << column;
    options.tolerance = 1e-3;
    {
        tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        EXPECT_EQ(spectral_layout(graph, {}, options, ctx).coordinates, single.coordinates);
    }
    {
        tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
        EXPECT_EQ(spectral_layout(graph, {}, options, ctx).coordinates, single.coordinates);
    }
}

TEST(Spectral, DisconnectedComponentsArePlacedApart) {
    // Three far-apart clusters and one tiny 3-cell component.
    auto points = mixture(903, 5, 3, 12, 200.0f);
    const auto graph = graph_of(points);
    int count = 0;
    const auto labels = connected_components(graph, &count);
    ASSERT_GE(count, 3);
    JobContext ctx;
    const auto layout = spectral_layout(graph, points, SpectralOptions{}, ctx);
    EXPECT_EQ(layout.num_graph_components, count);
    for (const double value : layout.coordinates.values()) ASSERT_TRUE(std::isfinite(value));
    UmapOptions options;
    options.num_epochs = 50;
    const auto result = umap(graph, points, options, ctx);
    EXPECT_EQ(result.num_graph_components, count);
    EXPECT_TRUE(all_finite(result.embedding));
    EXPECT_GT(test::trustworthiness(points, result.embedding, 15), 0.9);
}

TEST(Umap, DeterministicModeIsReproducibleAcrossRunsAndThreads) {
    const auto points = mixture(2000, 20, 6, 13);
    const auto graph = graph_of(points);
    UmapOptions options;
    options.parallelism = UmapParallelism::Deterministic;
    options.num_epochs = 120;
    options.seed = 7;
    JobContext ctx;
    const auto first = umap(graph, points, options, ctx);
    const auto second = umap(graph, points, options, ctx);
    EXPECT_EQ(first.embedding, second.embedding);
    {
        tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        EXPECT_EQ(umap(graph, points, options, ctx).embedding, first.embedding);
    }
    {
        tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
        EXPECT_EQ(umap(graph, points, options, ctx).embedding, first.embedding);
    }
    options.seed = 8;
    EXPECT_NE(umap(graph, points, options, ctx).embedding, first.embedding);
    EXPECT_TRUE(all_finite(first.embedding));
}

TEST(Umap, EveryModePreservesNeighbourhoods) {
    const auto points = mixture(3000, 20, 8, 14);
    const auto graph = graph_of(points);
    JobContext ctx;
    for (const auto mode : {UmapParallelism::Sequential, UmapParallelism::Hogwild, UmapParallelism::Deterministic}) {
        UmapOptions options;
        options.parallelism = mode;
        options.num_epochs = 200;
        const auto result = umap(graph, points, options, ctx);
        ASSERT_TRUE(all_finite(result.embedding));
        const double trust = test::trustworthiness(points, result.embedding, 15);
        std::printf("[umap] simulated 3000 cells, mode %d: trustworthiness %.4f\n", static_cast<int>(mode), trust);
        EXPECT_GT(trust, 0.93);
    }
    // Sequential is reproducible too (one thread, one generator).
    UmapOptions options;
    options.parallelism = UmapParallelism::Sequential;
    options.num_epochs = 30;
    EXPECT_EQ(umap(graph, points, options, ctx).embedding, umap(graph, points, options, ctx).embedding);
}

TEST(Umap, HogwildPullsTwiceOnlyOnAGraphSymmetricInItsValues) {
    // neighbors() makes a graph symmetric in its values: the Hogwild SGD pulls each head
    // twice and leaves the tail to the twin edge. One value changed (or one twin missing)
    // and it moves both ends of every edge, as umap does; the layouts keep the
    // neighbourhoods either way.
    const auto points = mixture(3000, 20, 8, 15);
    const CsrGraph graph = graph_of(points);
    JobContext ctx;
    UmapOptions options;
    options.parallelism = UmapParallelism::Hogwild;
    options.num_epochs = 200;
    const auto twin = umap(graph, points, options, ctx);
    EXPECT_TRUE(twin.twin_pull);
    CsrGraph lopsided = graph;
    ASSERT_GT(lopsided.values.size(), 10u);
    lopsided.values[10] *= 0.5f;
    const auto both = umap(lopsided, points, options, ctx);
    EXPECT_FALSE(both.twin_pull);
    CsrGraph missing = graph;  // the first row loses its last entry (whose twin stays)
    missing.col_indices.erase(missing.col_indices.begin() + missing.row_offsets[1] - 1);
    missing.values.erase(missing.values.begin() + missing.row_offsets[1] - 1);
    for (std::size_t row = 1; row < missing.row_offsets.size(); ++row) --missing.row_offsets[row];
    EXPECT_FALSE(umap(missing, points, options, ctx).twin_pull);
    for (const auto* result : {&twin, &both}) {
        ASSERT_TRUE(all_finite(result->embedding));
        const double trust = test::trustworthiness(points, result->embedding, 15);
        std::printf("[umap] simulated 3000 cells, Hogwild, twin pull %d: trustworthiness %.4f\n", result->twin_pull, trust);
        EXPECT_GT(trust, 0.93);
    }
}

TEST(Umap, PublishesFramesAndHonoursCancel) {
    const auto points = mixture(500, 8, 3, 15);
    const auto graph = graph_of(points);
    UmapOptions options;
    options.num_epochs = 35;
    options.publish_every = 10;
    struct Frames final : EmbeddingObserver {
        std::vector<int> epochs;
        void on_epoch(int epoch, const DenseMatrix<float>& frame) override {
            epochs.push_back(epoch);
            EXPECT_EQ(frame.rows(), 500);
            EXPECT_EQ(frame.cols(), 2);
        }
    } frames;
    JobContext ctx;
    const auto result = umap(graph, points, options, ctx, nullptr, &frames);
    EXPECT_EQ(frames.epochs, (std::vector<int>{10, 20, 30, 35}));
    EXPECT_EQ(result.num_epochs, 35);
    JobContext cancelled;
    cancelled.cancel();
    EXPECT_THROW(umap(graph, points, options, cancelled, nullptr, &frames), Cancelled);
}

TEST(Umap, ValidateNamesTheField) {
    UmapOptions options;
    options.min_dist = -1;
    try {
        validate(options);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("UmapOptions::min_dist"), std::string::npos);
    }
    options = {};
    options.a = 1.0;
    EXPECT_THROW(validate(options), std::invalid_argument);
    options = {};
    options.num_components = 0;
    EXPECT_THROW(validate(options), std::invalid_argument);
}

// ---------------------------------------------------------------------------------

/// A symmetric ring of `cells` cells with unit weights.
CsrGraph ring_graph(std::int64_t cells) {
    CsrGraph graph;
    graph.num_cells = cells;
    graph.row_offsets.assign(1, 0);
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        const std::int64_t before = (cell + cells - 1) % cells, after = (cell + 1) % cells;
        graph.col_indices.push_back(static_cast<std::int32_t>(std::min(before, after)));
        graph.col_indices.push_back(static_cast<std::int32_t>(std::max(before, after)));
        graph.values.insert(graph.values.end(), {1.0f, 1.0f});
        graph.row_offsets.push_back(static_cast<std::int64_t>(graph.col_indices.size()));
    }
    return graph;
}

TEST(Umap, AutoParallelismIsDeterministicUpToTheLimitAndHogwildAbove) {
    JobContext ctx;
    UmapOptions options;
    options.init = UmapInit::Random;
    options.num_epochs = 2;
    EXPECT_EQ(options.parallelism, UmapParallelism::Auto);
    const auto small = umap(ring_graph(200), DenseMatrix<float>(), options, ctx);
    EXPECT_EQ(small.parallelism, UmapParallelism::Deterministic);
    EXPECT_EQ(umap(ring_graph(kUmapDeterministicMaxCells), DenseMatrix<float>(), options, ctx).parallelism,
              UmapParallelism::Deterministic);
    EXPECT_EQ(umap(ring_graph(kUmapDeterministicMaxCells + 1), DenseMatrix<float>(), options, ctx).parallelism,
              UmapParallelism::Hogwild);
    // Auto on a small graph equals the explicit deterministic mode bit for bit.
    options.parallelism = UmapParallelism::Deterministic;
    const auto explicit_mode = umap(ring_graph(200), DenseMatrix<float>(), options, ctx);
    EXPECT_EQ(small.embedding.values(), explicit_mode.embedding.values());
    // A graph that is not structurally symmetric cannot take the deterministic SGD: Hogwild.
    CsrGraph one_way = ring_graph(200);
    one_way.col_indices[0] = 2;
    options.parallelism = UmapParallelism::Auto;
    EXPECT_EQ(umap(one_way, DenseMatrix<float>(), options, ctx).parallelism, UmapParallelism::Hogwild);
}

class ScanpyUmap : public ::testing::TestWithParam<const char*> {};

TEST_P(ScanpyUmap, TrustworthinessAtLeastScanpys) {
    const auto folder = test::shared_reference(GetParam());
    FATHOM_REQUIRE_PATH(folder / "X_umap.npy");
    const auto points = test::read_npy_float_matrix(folder / "X_pca.npy");
    const auto reference = test::read_npy_float_matrix(folder / "X_umap.npy");
    JobContext ctx;
    const auto graph = neighbors(points, NeighborsOptions{}, ctx).connectivities;
    const double theirs = test::trustworthiness(points, reference, 15);
    // scanpy defaults (500 epochs up to 10k cells, random_state 0), in the deterministic
    // mode and in the default one (Auto: the deterministic SGD up to 10k cells, which
    // every reference here is; Hogwild's unsynchronised updates collide often on graphs
    // this small and cost about 0.004 trustworthiness on chr21, where it fell under the
    // bound in about one run in six).
    // And Hogwild (the default above kUmapDeterministicMaxCells cells) on the largest
    // reference: on the small ones its colliding updates cost up to 0.01 in some runs.
    std::vector<UmapParallelism> modes{UmapParallelism::Deterministic, UmapOptions{}.parallelism};
    if (points.rows() >= 5000) modes.push_back(UmapParallelism::Hogwild);
    for (const auto mode : modes) {
        UmapOptions options;
        options.parallelism = mode;
        const auto start = std::chrono::steady_clock::now();
        const auto result = umap(graph, points, options, ctx);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const char* mode_name = mode == UmapParallelism::Deterministic ? "deterministic"
                                : mode == UmapParallelism::Hogwild     ? "hogwild"
                                                                       : "default";
        ASSERT_TRUE(all_finite(result.embedding)) << mode_name;
        if (mode == UmapParallelism::Auto && points.rows() <= kUmapDeterministicMaxCells) {
            EXPECT_EQ(result.parallelism, UmapParallelism::Deterministic) << mode_name;
        }
        const double ours = test::trustworthiness(points, result.embedding, 15);
        std::printf("[umap] %s %s: n=%lld epochs=%d edges=%lld components=%d trustworthiness ours=%.4f scanpy=%.4f "
                    "time=%.2fs\n",
                    GetParam(), mode_name, static_cast<long long>(points.rows()), result.num_epochs,
                    static_cast<long long>(result.num_edges), result.num_graph_components, ours, theirs, seconds);
        EXPECT_GE(ours, theirs - 0.01) << mode_name;
    }
}

// n_components = 3 (the 3-D view): the spectral init and the SGD run in three dimensions,
// and the layout keeps neighbourhoods at least as well as the 2-D one of the same graph.
class ThreeDimensionalUmap : public ::testing::TestWithParam<const char*> {};

TEST_P(ThreeDimensionalUmap, TrustworthinessCloseToTwoDimensions) {
    const auto folder = test::shared_reference(GetParam());
    FATHOM_REQUIRE_PATH(folder / "X_pca.npy");
    const auto points = test::read_npy_float_matrix(folder / "X_pca.npy");
    JobContext ctx;
    const auto graph = neighbors(points, NeighborsOptions{}, ctx).connectivities;
    UmapOptions options;
    options.parallelism = UmapParallelism::Deterministic;
    const auto flat = umap(graph, points, options, ctx);
    options.num_components = 3;
    const auto solid = umap(graph, points, options, ctx);
    ASSERT_EQ(solid.embedding.rows(), points.rows());
    ASSERT_EQ(solid.embedding.cols(), 3);
    ASSERT_TRUE(all_finite(solid.embedding));
    EXPECT_EQ(solid.init_used, UmapInit::Spectral);
    EXPECT_TRUE(solid.spectral_converged);
    // Every axis carries the layout: its spread is comparable to the others'.
    std::array<double, 3> spread{};
    for (int column = 0; column < 3; ++column) {
        double sum = 0.0, sum_squares = 0.0;
        for (std::int64_t cell = 0; cell < points.rows(); ++cell) {
            const double value = solid.embedding(cell, column);
            sum += value;
            sum_squares += value * value;
        }
        const double mean = sum / static_cast<double>(points.rows());
        spread[static_cast<std::size_t>(column)] = std::sqrt(sum_squares / static_cast<double>(points.rows()) - mean * mean);
    }
    const auto [low, high] = std::minmax_element(spread.begin(), spread.end());
    EXPECT_GT(*low, 0.2 * *high) << "axis spreads " << spread[0] << " " << spread[1] << " " << spread[2];
    const double trust_2d = test::trustworthiness(points, flat.embedding, 15);
    const double trust_3d = test::trustworthiness(points, solid.embedding, 15);
    std::printf("[umap] %s: n=%lld trustworthiness 2-D %.4f, 3-D %.4f\n", GetParam(),
                static_cast<long long>(points.rows()), trust_2d, trust_3d);
    EXPECT_GE(trust_3d, trust_2d - 0.01);
}

INSTANTIATE_TEST_SUITE_P(References, ThreeDimensionalUmap,
                         ::testing::Values("scanpy_pbmc68k_reduced_norecipe", "yeast_844cells", "scanpy_10x_v3_chr21"),
                         [](const auto& info) { return std::string(info.param); });

INSTANTIATE_TEST_SUITE_P(References, ScanpyUmap,
                         ::testing::Values("scanpy_10x_v3_chr21", "scanpy_10x_v3_chr21_mtx", "scanpy_neurons10k_1000genes",
                                           "scanpy_pbmc68k_reduced_norecipe", "visium_cytassist_mouse_2898", "yeast_844cells",
                                           "geo_GSM6544281_min200"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace fathom
