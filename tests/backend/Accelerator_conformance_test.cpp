// Conformance suite of the Accelerator interface: every operation of every
// implementation (the CPU reference, core/algo/CpuAccelerator; the CUDA devices through
// the provider of gpu/, core/backend/DeviceAccelerator) against a plain brute-force or
// host reference on small simulated data, under the named tolerances below; then the
// algorithms given the accelerator against the same algorithms without it. The CUDA
// cases (ctest label gpu) skip with a message when no device is usable.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/algo/CpuAccelerator.hpp"
#include "core/algo/knn.hpp"
#include "core/algo/normalize.hpp"
#include "core/algo/pca.hpp"
#include "core/algo/scale.hpp"
#include "core/algo/umap.hpp"
#include "core/backend/CpuBackend.hpp"
#include "core/backend/DeviceAccelerator.hpp"
#include "core/types/JobContext.hpp"
#include "gpu/provider.hpp"
#include "tests/support/simulate.hpp"

namespace fathom::test {
namespace {

// ---- tolerances ----

/// kNN distances: computed in double from the float coordinates and stored as float,
/// so within float rounding of the double reference (relative).
constexpr double kDistanceTolerance = 1e-6;
/// Eigenvalues, relative to the largest: LAPACK-class solvers in double.
constexpr double kEigenvalueTolerance = 1e-10;
/// Eigenvectors of well separated eigenvalues: 1 - |cos| of the angle with the reference.
constexpr double kEigenvectorTolerance = 1e-9;
/// Sparse products, relative to sum_j |a_ij x_j| of the row (implementations may sum a
/// row in another order).
constexpr double kProductTolerance = 1e-13;
/// UMAP's SGD, largest coordinate difference after 10 epochs on a layout in [0, 10]: the
/// device kernels round as the host loop (--fmad=false) but the device's powf may round
/// the last bit differently, and the SGD carries such differences along.
constexpr double kSgdTolerance = 1e-2;
/// PCA through the accelerator against the host PCA: variances relative to the
/// largest, scores of the leading (well separated) components relative to their scale.
constexpr double kPcaVarianceTolerance = 1e-9;
constexpr double kPcaScoreTolerance = 1e-4;

// ---- the implementations ----

/// How to make one implementation.
struct AcceleratorFactory {
    std::string name;                                        ///< "cpu", "cuda"
    std::function<std::string()> unavailable_reason;         ///< empty = available
    std::function<std::unique_ptr<Accelerator>()> make;
};

const std::shared_ptr<DeviceProvider>& cuda_provider() {
    static const std::shared_ptr<DeviceProvider> provider = gpu::make_device_provider();
    return provider;
}

DeviceResolution cuda_devices() {
    DeviceSpec every_device;
    every_device.kind = BackendKind::Cuda;
    return cuda_provider()->resolve(every_device);
}

const std::vector<AcceleratorFactory>& accelerator_factories() {
    static const std::vector<AcceleratorFactory> factories{
        {"cpu", [] { return std::string(); }, []() -> std::unique_ptr<Accelerator> { return std::make_unique<CpuAccelerator>(); }},
        // Every usable device (the kNN queries are split across them); the eigensolver
        // takes matrices of any size here (the engine keeps small ones on the host).
        {"cuda", [] { return cuda_devices().reason; },
         []() -> std::unique_ptr<Accelerator> {
             return std::make_unique<DeviceAccelerator>(*cuda_provider(), cuda_devices().devices, 0);
         }},
    };
    return factories;
}

std::vector<std::string> accelerator_names() {
    std::vector<std::string> names;
    for (const auto& factory : accelerator_factories()) names.push_back(factory.name);
    return names;
}

const AcceleratorFactory& accelerator_factory(const std::string& name) {
    for (const auto& factory : accelerator_factories())
        if (factory.name == name) return factory;
    throw std::invalid_argument("no accelerator factory named " + name);
}

class AcceleratorConformance : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const auto& factory = accelerator_factory(GetParam());
        const std::string reason = factory.unavailable_reason();
        if (!reason.empty()) GTEST_SKIP() << GetParam() << " accelerator unavailable: " << reason;
        accelerator = factory.make();
    }
    std::unique_ptr<Accelerator> accelerator;
    JobContext ctx;
};

// ---- data and references ----

/// Gaussian clusters, cells x dims.
DenseMatrix<float> clustered_points(std::int64_t cells, int dims, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal;
    DenseMatrix<float> points(cells, dims);
    for (std::int64_t cell = 0; cell < cells; ++cell)
        for (int dim = 0; dim < dims; ++dim)
            points(cell, dim) = normal(generator) + (dim == cell % dims ? 4.0f * static_cast<float>(cell % 3) : 0.0f);
    return points;
}

/// Brute force: every pair's distance in double over the first num_dims columns; self
/// first, then the others by (distance, index).
void brute_force_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::vector<std::int32_t>& indices,
                     std::vector<double>& distances) {
    const std::int64_t cells = points.rows();
    indices.clear();
    distances.clear();
    for (std::int64_t query = 0; query < cells; ++query) {
        std::vector<std::pair<double, std::int32_t>> others;
        for (std::int64_t other = 0; other < cells; ++other) {
            if (other == query) continue;
            double sum = 0.0;
            for (int dim = 0; dim < num_dims; ++dim) {
                const double difference = static_cast<double>(points(query, dim)) - static_cast<double>(points(other, dim));
                sum += difference * difference;
            }
            others.emplace_back(std::sqrt(sum), static_cast<std::int32_t>(other));
        }
        std::sort(others.begin(), others.end());
        indices.push_back(static_cast<std::int32_t>(query));
        distances.push_back(0.0);
        for (int rank = 0; rank + 1 < num_neighbors; ++rank) {
            indices.push_back(others[static_cast<std::size_t>(rank)].second);
            distances.push_back(others[static_cast<std::size_t>(rank)].first);
        }
    }
}

/// A symmetric matrix with known eigenpairs: Q diag(eigenvalues) Q^T, Q a random
/// orthogonal matrix (Householder QR of a Gaussian matrix).
struct KnownEigenproblem {
    DenseMatrix<double> matrix;
    Eigen::VectorXd eigenvalues;  ///< ascending, well separated
    Eigen::MatrixXd eigenvectors; ///< column j for eigenvalues[j]
};

KnownEigenproblem known_eigenproblem(std::int64_t size, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd random(size, size);
    for (Eigen::Index index = 0; index < random.size(); ++index) random.data()[index] = normal(generator);
    KnownEigenproblem problem;
    problem.eigenvectors = Eigen::HouseholderQR<Eigen::MatrixXd>(random).householderQ();
    problem.eigenvalues.resize(size);
    for (Eigen::Index index = 0; index < size; ++index) problem.eigenvalues[index] = -3.0 + 0.25 * static_cast<double>(index);
    Eigen::MatrixXd product = problem.eigenvectors * problem.eigenvalues.asDiagonal() * problem.eigenvectors.transpose();
    product = 0.5 * (product + product.transpose());
    problem.matrix = DenseMatrix<double>(size, size);
    for (std::int64_t row = 0; row < size; ++row)
        for (std::int64_t column = 0; column < size; ++column) problem.matrix(row, column) = product(row, column);
    return problem;
}

/// A square CSR matrix with empty rows and values of both signs.
struct SparseMatrix {
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> columns;
    std::vector<double> values;
};

SparseMatrix random_sparse(std::int64_t rows, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::bernoulli_distribution present(0.08);
    SparseMatrix matrix;
    for (std::int64_t row = 0; row < rows; ++row) {
        if (row % 9 != 4)
            for (std::int64_t column = 0; column < rows; ++column)
                if (present(generator)) {
                    matrix.columns.push_back(static_cast<std::int32_t>(column));
                    matrix.values.push_back(uniform(generator));
                }
        matrix.offsets.push_back(static_cast<std::int64_t>(matrix.columns.size()));
    }
    return matrix;
}

/// A ring of `vertices` with symmetric edges to the 4 nearest on each side, umap's
/// schedule shape, and a start layout in [0, 10).
struct RingProblem {
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> tail;
    std::vector<double> per_sample, per_negative;
    std::vector<float> start;
    UmapSgdProblem problem;
};

std::unique_ptr<RingProblem> ring_problem(std::int64_t vertices, int dim, int epochs) {
    auto ring = std::make_unique<RingProblem>();
    for (std::int64_t vertex = 0; vertex < vertices; ++vertex) {
        for (int step : {-4, -3, -2, -1, 1, 2, 3, 4})
            ring->tail.push_back(static_cast<std::int32_t>((vertex + step + vertices) % vertices));
        std::sort(ring->tail.end() - 8, ring->tail.end());
        ring->offsets.push_back(static_cast<std::int64_t>(ring->tail.size()));
    }
    for (std::size_t edge = 0; edge < ring->tail.size(); ++edge) {
        ring->per_sample.push_back(1.0 + static_cast<double>(edge % 3));
        ring->per_negative.push_back(ring->per_sample.back() / 5.0);
    }
    ring->start.resize(static_cast<std::size_t>(vertices * dim));
    for (std::size_t index = 0; index < ring->start.size(); ++index)
        ring->start[index] = static_cast<float>((index * 7919) % 1000) / 100.0f;
    UmapSgdProblem& problem = ring->problem;
    problem.num_vertices = vertices;
    problem.dim = dim;
    problem.offsets = ring->offsets;
    problem.tail = ring->tail;
    problem.epochs_per_sample = ring->per_sample;
    problem.epochs_per_negative_sample = ring->per_negative;
    problem.a = 0.583f;
    problem.b = 1.334f;
    problem.num_epochs = epochs;
    problem.seed = 3;
    problem.block_size = 64;
    return ring;
}

/// The invalid_argument message of `call`, or "" when it does not throw one.
std::string invalid_argument_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return "";
}

// ---- the operations ----

TEST_P(AcceleratorConformance, ExactKnnMatchesBruteForce) {
    auto points = clustered_points(257, 7, 5);
    // Exact duplicates: self stays first, the twin follows at distance 0.
    for (int dim = 0; dim < 7; ++dim) points(40, dim) = points(41, dim) = points(3, dim);
    const int num_dims = 5, num_neighbors = 12;
    std::vector<std::int32_t> indices, expected_indices;
    std::vector<float> distances;
    std::vector<double> expected_distances;
    ASSERT_TRUE(accelerator->exact_knn(points, num_dims, num_neighbors, indices, distances, ctx));
    brute_force_knn(points, num_dims, num_neighbors, expected_indices, expected_distances);
    ASSERT_EQ(indices.size(), expected_indices.size());
    ASSERT_EQ(distances.size(), expected_distances.size());
    EXPECT_EQ(indices, expected_indices);
    for (std::size_t entry = 0; entry < distances.size(); ++entry)
        EXPECT_LE(std::fabs(distances[entry] - expected_distances[entry]), kDistanceTolerance * expected_distances[entry])
            << "entry " << entry;
    EXPECT_EQ(indices[static_cast<std::size_t>(40 * num_neighbors)], 40);
    EXPECT_EQ(indices[static_cast<std::size_t>(40 * num_neighbors) + 1], 3) << "duplicates tie by index";
    EXPECT_EQ(indices[static_cast<std::size_t>(40 * num_neighbors) + 2], 41);
}

TEST_P(AcceleratorConformance, ExactKnnRejectsBadArguments) {
    const auto points = clustered_points(20, 3, 1);
    std::vector<std::int32_t> indices;
    std::vector<float> distances;
    EXPECT_EQ(invalid_argument_of([&] { accelerator->exact_knn(points, 4, 5, indices, distances, ctx); }),
              "Accelerator::exact_knn: num_dims must be in [1, 3], got 4");
    EXPECT_EQ(invalid_argument_of([&] { accelerator->exact_knn(points, 3, 21, indices, distances, ctx); }),
              "Accelerator::exact_knn: num_neighbors must be in [1, 20], got 21");
}

TEST_P(AcceleratorConformance, UmapSgdMatchesTheHostDeterministicSgd) {
    for (const int dim : {2, 3}) {
        SCOPED_TRACE(dim);
        const auto ring = ring_problem(1000, dim, 10);
        DenseMatrix<float> reference(1000, dim, ring->start);
        std::vector<int> reference_frames;
        detail::deterministic_umap_sgd(ring->problem, reference.data(), 4,
                                       [&reference_frames](int epochs) { reference_frames.push_back(epochs); }, ctx);
        DenseMatrix<float> embedding(1000, dim, ring->start);
        std::vector<int> frames;
        ASSERT_TRUE(accelerator->umap_sgd(ring->problem, embedding, 4, [&frames](int epochs) { frames.push_back(epochs); }, ctx));
        EXPECT_EQ(frames, (std::vector<int>{4, 8})) << "every 4 epochs before the last";
        EXPECT_EQ(frames, reference_frames);
        double worst = 0.0;
        for (std::size_t index = 0; index < embedding.values().size(); ++index)
            worst = std::max(worst, static_cast<double>(std::fabs(embedding.values()[index] - reference.values()[index])));
        EXPECT_LE(worst, kSgdTolerance);
        EXPECT_NE(embedding.values(), ring->start) << "the epochs moved the vertices";
    }
}

TEST_P(AcceleratorConformance, UmapSgdRejectsAMismatchedEmbedding) {
    const auto ring = ring_problem(100, 2, 3);
    DenseMatrix<float> embedding(100, 3);
    EXPECT_EQ(invalid_argument_of([&] { accelerator->umap_sgd(ring->problem, embedding, 0, [](int) {}, ctx); }),
              "Accelerator::umap_sgd: the embedding is 100 x 3; expected num_vertices x dim = 100 x 2");
}

TEST_P(AcceleratorConformance, SymmetricEigenpairsMatchTheKnownDecomposition) {
    const std::int64_t size = 60;
    const auto known = known_eigenproblem(size, 17);
    const double largest = std::fabs(known.eigenvalues[size - 1]);
    for (const int count : {1, 7, static_cast<int>(size)}) {
        SCOPED_TRACE(count);
        std::vector<double> values, vectors;
        ASSERT_TRUE(accelerator->symmetric_eigenpairs(known.matrix, count, values, vectors, ctx));
        ASSERT_EQ(values.size(), static_cast<std::size_t>(count));
        ASSERT_EQ(vectors.size(), static_cast<std::size_t>(count * size));
        for (int index = 0; index < count; ++index) {
            const Eigen::Index reference = size - count + index;
            EXPECT_LE(std::fabs(values[static_cast<std::size_t>(index)] - known.eigenvalues[reference]),
                      kEigenvalueTolerance * largest)
                << "value " << index;
            const Eigen::Map<const Eigen::VectorXd> vector(vectors.data() + index * size, size);
            EXPECT_LE(1.0 - std::fabs(vector.dot(known.eigenvectors.col(reference))), kEigenvectorTolerance) << "vector " << index;
        }
    }
}

TEST_P(AcceleratorConformance, SymmetricEigenpairsRejectBadArguments) {
    std::vector<double> values, vectors;
    EXPECT_EQ(invalid_argument_of([&] { accelerator->symmetric_eigenpairs(DenseMatrix<double>(4, 5), 2, values, vectors, ctx); }),
              "Accelerator::symmetric_eigenpairs: the matrix is 4 x 5, not square");
    EXPECT_EQ(invalid_argument_of([&] { accelerator->symmetric_eigenpairs(DenseMatrix<double>(4, 4), 5, values, vectors, ctx); }),
              "Accelerator::symmetric_eigenpairs: count must be in [1, 4], got 5");
}

TEST_P(AcceleratorConformance, SparseProductsMatchTheDenseProduct) {
    const std::int64_t rows = 90;
    const auto sparse = random_sparse(rows, 23);
    const auto matrix = accelerator->upload_sparse_matrix(sparse.offsets, sparse.columns, sparse.values, ctx);
    ASSERT_TRUE(matrix);
    std::mt19937_64 generator(29);
    std::normal_distribution<double> normal;
    for (const int count : {1, 3}) {
        SCOPED_TRACE(count);
        std::vector<double> x(static_cast<std::size_t>(rows * count)), y(x.size(), 123.0);
        for (auto& value : x) value = normal(generator);
        matrix->multiply(x.data(), y.data(), count);
        for (int vector = 0; vector < count; ++vector)
            for (std::int64_t row = 0; row < rows; ++row) {
                double expected = 0.0, magnitude = 0.0;
                for (auto entry = sparse.offsets[static_cast<std::size_t>(row)]; entry < sparse.offsets[static_cast<std::size_t>(row) + 1];
                     ++entry) {
                    const double term = sparse.values[static_cast<std::size_t>(entry)] *
                                        x[static_cast<std::size_t>(vector * rows + sparse.columns[static_cast<std::size_t>(entry)])];
                    expected += term;
                    magnitude += std::fabs(term);
                }
                EXPECT_LE(std::fabs(y[static_cast<std::size_t>(vector * rows + row)] - expected), kProductTolerance * magnitude)
                    << "vector " << vector << ", row " << row;
            }
    }
}

TEST_P(AcceleratorConformance, SparseMatrixRejectsBadArrays) {
    const std::vector<std::int64_t> offsets{0, 1, 2};
    const std::vector<std::int32_t> columns{1, 2};
    const std::vector<double> values{0.5, 0.5};
    EXPECT_EQ(invalid_argument_of([&] { accelerator->upload_sparse_matrix(offsets, columns, values, ctx); }),
              "Accelerator::upload_sparse_matrix: column 2 is outside [0, 2)");
    EXPECT_EQ(invalid_argument_of([&] { accelerator->upload_sparse_matrix(offsets, columns, std::vector<double>{1.0}, ctx); }),
              "Accelerator::upload_sparse_matrix: columns and values must have offsets.back() = 2 entries; got 2 and 1");
}

// ---- the algorithms through the accelerator ----

TEST_P(AcceleratorConformance, NearestNeighborsThroughItGiveTheExactGraph) {
    const auto points = clustered_points(400, 10, 9);
    KnnOptions options;
    options.method = KnnMethod::Exact;
    options.num_pcs = 8;
    const KnnResult host = nearest_neighbors(points, options, ctx);
    const KnnResult accelerated = nearest_neighbors(points, options, ctx, accelerator.get());
    EXPECT_EQ(accelerated.method_used, KnnMethod::Exact);
    EXPECT_EQ(accelerated.graph.indices, host.graph.indices);
    ASSERT_EQ(accelerated.graph.distances.size(), host.graph.distances.size());
    for (std::size_t entry = 0; entry < host.graph.distances.size(); ++entry)
        EXPECT_LE(std::fabs(accelerated.graph.distances[entry] - host.graph.distances[entry]),
                  kDistanceTolerance * host.graph.distances[entry]);
}

TEST_P(AcceleratorConformance, PcaThroughItMatchesTheHostPca) {
    SimulationOptions simulation;
    simulation.num_cells = 600;
    simulation.num_genes = 120;
    simulation.seed = 31;
    simulation.density = 0.2;
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<CpuBackend>(simulate_counts(simulation), 0));
    ShardSet shards(std::move(backends));
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions options;
    options.num_components = 12;
    options.solver = PcaSolver::Exact;
    const PcaResult host = pca(shards, scaling, options, ctx);
    const PcaResult accelerated = pca(shards, scaling, options, ctx, accelerator.get());
    EXPECT_TRUE(accelerated.accelerated_solver);
    ASSERT_EQ(accelerated.variance.size(), host.variance.size());
    for (std::size_t component = 0; component < host.variance.size(); ++component)
        EXPECT_LE(std::fabs(accelerated.variance[component] - host.variance[component]), kPcaVarianceTolerance * host.variance[0]);
    for (std::int64_t component = 0; component < 4; ++component) {
        double worst = 0.0, magnitude = 0.0;
        for (std::int64_t cell = 0; cell < host.scores.rows(); ++cell) {
            worst = std::max(worst, static_cast<double>(std::fabs(accelerated.scores(cell, component) - host.scores(cell, component))));
            magnitude = std::max(magnitude, static_cast<double>(std::fabs(host.scores(cell, component))));
        }
        EXPECT_LE(worst, kPcaScoreTolerance * magnitude) << "component " << component << " (signs follow the host)";
    }
}

TEST_P(AcceleratorConformance, UmapThroughItPublishesEveryFrame) {
    const auto points = clustered_points(300, 6, 13);
    const auto ring = ring_problem(300, 2, 1);
    CsrGraph connectivities;
    connectivities.num_cells = 300;
    connectivities.row_offsets = ring->offsets;
    connectivities.col_indices = ring->tail;
    connectivities.values.assign(ring->tail.size(), 1.0f);
    UmapOptions options;
    options.parallelism = UmapParallelism::Deterministic;
    options.num_epochs = 25;
    options.publish_every = 10;
    struct Frames final : EmbeddingObserver {
        std::vector<int> epochs;
        void on_epoch(int epoch, const DenseMatrix<float>& embedding) override {
            epochs.push_back(epoch);
            EXPECT_EQ(embedding.rows(), 300);
        }
    } host_frames, frames;
    const UmapResult host = umap(connectivities, points, options, ctx, nullptr, &host_frames);
    const UmapResult accelerated = umap(connectivities, points, options, ctx, accelerator.get(), &frames);
    EXPECT_EQ(frames.epochs, (std::vector<int>{10, 20, 25}));
    EXPECT_EQ(frames.epochs, host_frames.epochs);
    ASSERT_EQ(accelerated.embedding.rows(), 300);
    ASSERT_EQ(accelerated.embedding.cols(), 2);
    for (const float value : accelerated.embedding.values()) EXPECT_TRUE(std::isfinite(value));
}

INSTANTIATE_TEST_SUITE_P(Accelerators, AcceleratorConformance, ::testing::ValuesIn(accelerator_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fathom::test
