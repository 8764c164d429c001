// The CUDA paths added beside the shard primitives, on a real device (skipped with a
// message without one): PCA's cuSOLVER eigendecomposition against Eigen and through
// the whole PCA, the spectral initialisation's cuSPARSE product against the host
// product and through the whole layout, the in-place out-of-memory fallback driven
// by the allocation-failure hook (gpu/fault_injection.hpp), and that hook itself
// (host-tested).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "core/algo/neighbors.hpp"
#include "core/algo/normalize.hpp"
#include "core/algo/pca.hpp"
#include "core/algo/scale.hpp"
#include "core/algo/spectral.hpp"
#include "core/backend/CpuBackend.hpp"
#include "core/backend/DeviceAccelerator.hpp"
#include "core/types/errors.hpp"
#include "gpu/devices.hpp"
#include "gpu/fault_injection.hpp"
#include "tests/support/accelerators.hpp"
#include "tests/support/simulate.hpp"
#if defined(FATHOM_HAVE_CUDA)
#include "gpu/CudaBackend.hpp"
#include "gpu/linear_algebra.hpp"
#include "gpu/provider.hpp"
#endif

namespace fathom::test {
namespace {

TEST(FaultInjection, FailsExactlyTheArmedNumberOfAllocations) {
    gpu::testing::fail_next_device_allocations(2);
    EXPECT_EQ(gpu::testing::pending_injected_allocation_failures(), 2);
    EXPECT_TRUE(gpu::testing::take_injected_allocation_failure());
    EXPECT_TRUE(gpu::testing::take_injected_allocation_failure());
    EXPECT_FALSE(gpu::testing::take_injected_allocation_failure());
    gpu::testing::fail_next_device_allocations(3);
    gpu::testing::fail_next_device_allocations(0);
    EXPECT_FALSE(gpu::testing::take_injected_allocation_failure()) << "0 disarms";
    gpu::testing::fail_next_device_allocations(-4);
    EXPECT_EQ(gpu::testing::pending_injected_allocation_failures(), 0);
}

#if defined(FATHOM_HAVE_CUDA)

class LinearAlgebraTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto query = gpu::query_devices();
        if (query.devices.empty()) GTEST_SKIP() << "no CUDA device: " << query.message;
    }
    void TearDown() override { gpu::testing::fail_next_device_allocations(0); }
    JobContext ctx;
};

TEST_F(LinearAlgebraTest, SyevdxTopEigenpairsMatchEigen) {
    const int size = 700, count = 30;
    std::mt19937_64 generator(4);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd random(size, size);
    for (Eigen::Index index = 0; index < random.size(); ++index) random.data()[index] = normal(generator);
    const Eigen::MatrixXd matrix = random * random.transpose() / size;
    std::vector<double> values, vectors;
    gpu::symmetric_top_eigenpairs(matrix.data(), size, count, 0, values, vectors, ctx);
    ASSERT_EQ(values.size(), static_cast<std::size_t>(count));
    ASSERT_EQ(vectors.size(), static_cast<std::size_t>(size * count));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> reference(matrix);
    for (int index = 0; index < count; ++index) {
        const double expected = reference.eigenvalues()(size - count + index);
        EXPECT_NEAR(values[static_cast<std::size_t>(index)], expected, 1e-10 * reference.eigenvalues()(size - 1)) << index;
        const Eigen::Map<const Eigen::VectorXd> vector(vectors.data() + index * size, size);
        EXPECT_GT(std::fabs(vector.dot(reference.eigenvectors().col(size - count + index))), 1 - 1e-9) << index;
    }
}

TEST_F(LinearAlgebraTest, PcaWithTheDeviceEigensolverMatchesTheHostPca) {
    SimulationOptions options;
    options.num_cells = 4000;
    options.num_genes = 800;
    options.seed = 12;
    options.density = 0.1;
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<CpuBackend>(simulate_counts(options), 0));
    ShardSet shards(std::move(backends));
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions pca_options;
    pca_options.num_components = 40;
    pca_options.solver = PcaSolver::Exact;
    const auto host = pca(shards, scaling, pca_options, ctx);
    const auto provider = gpu::make_device_provider();
    const DeviceAccelerator accelerator(*provider, {0});
    const auto device = pca(shards, scaling, pca_options, ctx, &accelerator);
    EXPECT_TRUE(device.accelerated_solver);
    for (int component = 0; component < 40; ++component)
        EXPECT_NEAR(device.variance[static_cast<std::size_t>(component)], host.variance[static_cast<std::size_t>(component)],
                    1e-9 * host.variance[0]);
    // Leading components (well separated): same scores with the same signs.
    for (std::int64_t component = 0; component < 10; ++component) {
        double worst = 0.0, scale_of = 0.0;
        for (std::int64_t cell = 0; cell < host.scores.rows(); ++cell) {
            worst = std::max(worst, static_cast<double>(std::fabs(device.scores(cell, component) - host.scores(cell, component))));
            scale_of = std::max(scale_of, static_cast<double>(std::fabs(host.scores(cell, component))));
        }
        EXPECT_LT(worst, 1e-4 * scale_of) << "component " << component;
    }
}

TEST_F(LinearAlgebraTest, SparseProductMatchesTheHostProductAndTheSpectralLayout) {
    std::mt19937_64 generator(8);
    std::normal_distribution<float> normal;
    DenseMatrix<float> points(3000, 10);
    for (std::int64_t cell = 0; cell < points.rows(); ++cell)
        for (int dim = 0; dim < 10; ++dim) points(cell, dim) = normal(generator) + static_cast<float>(cell % 3) * 1.5f;
    const auto graph = neighbors(points, NeighborsOptions{}, ctx).connectivities;
    const auto csr = normalized_adjacency_csr(graph);
    const auto matrix = gpu::upload_sparse_matrix(csr.offsets, csr.columns, csr.values, 0);
    std::vector<double> x(static_cast<std::size_t>(csr.num_vertices * 2)), on_device(x.size()), on_host(x.size());
    std::normal_distribution<double> normal_double;
    for (auto& value : x) value = normal_double(generator);
    matrix->multiply(x.data(), on_device.data(), 2);
    multiply(csr, x.data(), on_host.data());
    multiply(csr, x.data() + csr.num_vertices, on_host.data() + csr.num_vertices);
    for (std::size_t index = 0; index < x.size(); ++index) ASSERT_NEAR(on_device[index], on_host[index], 1e-12) << index;

    SpectralOptions options;
    options.tolerance = 1e-8;
    const auto host = spectral_layout(graph, {}, options, ctx);
    const auto provider = gpu::make_device_provider();
    int uploads = 0;
    FunctionAccelerator accelerator;
    accelerator.sparse = [&](std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                             std::span<const double> values, JobContext&) {
        ++uploads;
        return provider->upload_sparse_matrix(offsets, columns, values, 0);
    };
    const auto device = spectral_layout(graph, {}, options, ctx, &accelerator);
    EXPECT_GE(uploads, 1);
    double worst = 0.0;
    for (std::size_t index = 0; index < host.coordinates.values().size(); ++index)
        worst = std::max(worst, std::fabs(host.coordinates.values()[index] - device.coordinates.values()[index]));
    EXPECT_LT(worst, 1e-6);
}

TEST_F(LinearAlgebraTest, InjectedOutOfMemoryInAnInPlaceStepMovesTheShardToTheCpu) {
    SimulationOptions options;
    options.num_cells = 2000;
    options.num_genes = 300;
    options.seed = 13;
    options.density = 0.2;
    const CsrShard shard = simulate_counts(options);
    std::vector<std::unique_ptr<Backend>> device_backends, host_backends;
    device_backends.push_back(std::make_unique<gpu::CudaBackend>(shard, 0));
    host_backends.push_back(std::make_unique<CpuBackend>(shard, 0));
    ShardSet on_device(std::move(device_backends)), on_host(std::move(host_backends));
    std::vector<double> factors(2000);
    for (std::size_t row = 0; row < factors.size(); ++row) factors[row] = 1.0 + static_cast<double>(row % 7) / 3.0;
    // scale_rows uploads the factors first: that allocation fails, as on a full device.
    gpu::testing::fail_next_device_allocations(1);
    on_device.scale_rows(factors, ctx);
    on_host.scale_rows(factors, ctx);
    EXPECT_EQ(gpu::testing::pending_injected_allocation_failures(), 0);
    EXPECT_EQ(on_device.shard(0).kind(), BackendKind::Cpu);
    ASSERT_EQ(on_device.device_notes().size(), 1u);
    EXPECT_NE(on_device.device_notes()[0].find("cuda:0: GPU out of memory"), std::string::npos) << on_device.device_notes()[0];
    EXPECT_NE(ctx.progress().message.find("scale_rows and the later steps of cuda:0 ran on the CPU (cpu:0)"), std::string::npos)
        << ctx.progress().message;
    on_device.log1p(ctx);
    on_host.log1p(ctx);
    EXPECT_EQ(on_device.to_host().shard(0).values, on_host.to_host().shard(0).values) << "the CPU run's values, bit for bit";

    // subset_columns on a device shard: the new arrays cannot be allocated.
    std::vector<std::unique_ptr<Backend>> again;
    again.push_back(std::make_unique<gpu::CudaBackend>(shard, 0));
    ShardSet columns(std::move(again));
    std::vector<std::uint8_t> keep(300, 0);
    for (std::size_t gene = 0; gene < keep.size(); gene += 3) keep[gene] = 1;
    gpu::testing::fail_next_device_allocations(1);
    columns.subset_columns(keep, ctx);
    EXPECT_EQ(columns.shard(0).kind(), BackendKind::Cpu);
    EXPECT_EQ(columns.num_genes(), 100);
    CpuBackend reference(shard, 0);
    reference.subset_columns(keep, ctx);
    EXPECT_EQ(columns.to_host().shard(0).values, reference.shard().values);
    EXPECT_EQ(columns.to_host().shard(0).gene_indices, reference.shard().gene_indices);
}

TEST_F(LinearAlgebraTest, InjectedOutOfMemoryInTheSolversThrowsOutOfMemory) {
    const Eigen::MatrixXd matrix = Eigen::MatrixXd::Identity(16, 16);
    std::vector<double> values, vectors;
    gpu::testing::fail_next_device_allocations(1);
    EXPECT_THROW(gpu::symmetric_top_eigenpairs(matrix.data(), 16, 2, 0, values, vectors, ctx), DeviceOutOfMemory);
    const std::vector<std::int64_t> offsets{0, 1};
    const std::vector<std::int32_t> columns{0};
    const std::vector<double> entries{1.0};
    gpu::testing::fail_next_device_allocations(1);
    EXPECT_THROW(gpu::upload_sparse_matrix(offsets, columns, entries, 0), DeviceOutOfMemory);
    // Nothing is left armed and the device works again.
    gpu::symmetric_top_eigenpairs(matrix.data(), 16, 2, 0, values, vectors, ctx);
    EXPECT_NEAR(values[1], 1.0, 1e-12);
}

#else

TEST(LinearAlgebraTest, BuiltWithoutCuda) { GTEST_SKIP() << "this build has no CUDA support (FATHOM_WITH_CUDA=OFF)"; }

#endif

}  // namespace
}  // namespace fathom::test
