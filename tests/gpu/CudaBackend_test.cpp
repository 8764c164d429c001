// CudaBackend on a real device (skips with a message without one): loading straight
// from a row reader through the pinned staging buffer, the kernels against their host
// loops (gpu/shard_kernels.hpp), run-to-run bit identity and the out-of-memory error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/backend/CpuBackend.hpp"
#include "core/types/errors.hpp"
#include "gpu/devices.hpp"
#include "gpu/shard_kernels.hpp"
#include "tests/support/simulate.hpp"
#if defined(FATHOM_HAVE_CUDA)
#include "core/algo/knn.hpp"
#include "gpu/CudaBackend.hpp"
#include "gpu/knn.hpp"
#include "gpu/umap.hpp"
#include "gpu/umap_kernels.hpp"
#endif

namespace fathom::test {
namespace {

#if defined(FATHOM_HAVE_CUDA)

class CudaBackendTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto query = gpu::query_devices();
        if (query.devices.empty()) GTEST_SKIP() << "no CUDA device: " << query.message;
    }
    static CsrShard simulated(std::int64_t cells, std::int64_t genes, std::uint64_t seed) {
        SimulationOptions options;
        options.num_cells = cells;
        options.num_genes = genes;
        options.seed = seed;
        options.density = 0.2;
        return simulate_counts(options);
    }
    JobContext ctx;
};

TEST_F(CudaBackendTest, LoadsRowsThroughTheReaderInBlocks) {
    const auto whole = simulated(5000, 300, 3);
    const RowRange range{1200, 4100};
    std::int64_t calls = 0;
    const RowBlockReader read = [&](std::int64_t begin, std::int64_t end) {
        ++calls;
        CsrShard block;
        block.row_begin = begin;
        block.num_genes = whole.num_genes;
        for (std::int64_t row = begin; row < end; ++row) {
            for (auto entry = whole.row_offsets[static_cast<std::size_t>(row)]; entry < whole.row_offsets[static_cast<std::size_t>(row) + 1]; ++entry) {
                block.gene_indices.push_back(whole.gene_indices[static_cast<std::size_t>(entry)]);
                block.values.push_back(whole.values[static_cast<std::size_t>(entry)]);
            }
            block.row_offsets.push_back(static_cast<std::int64_t>(block.values.size()));
        }
        return block;
    };
    const auto backend = gpu::CudaBackend::load(read, range, whole.row_offsets, whole.num_genes, 0, ctx);
    EXPECT_GE(calls, 1);
    EXPECT_EQ(backend->row_begin(), range.begin);
    EXPECT_EQ(backend->num_rows(), range.size());
    const auto host = backend->to_host();
    const auto first = whole.row_offsets[static_cast<std::size_t>(range.begin)];
    for (std::int64_t row = 0; row <= range.size(); ++row)
        ASSERT_EQ(host.row_offsets[static_cast<std::size_t>(row)], whole.row_offsets[static_cast<std::size_t>(range.begin + row)] - first);
    EXPECT_TRUE(std::equal(host.values.begin(), host.values.end(), whole.values.begin() + first));
    EXPECT_TRUE(std::equal(host.gene_indices.begin(), host.gene_indices.end(), whole.gene_indices.begin() + first));
}

TEST_F(CudaBackendTest, ColumnStatsEqualTheHostLoopBitForBitAndRepeat) {
    const auto shard = simulated(20000, 500, 5);
    const gpu::CudaBackend backend(shard, 0);
    std::vector<double> scale(static_cast<std::size_t>(shard.num_rows()));
    for (std::size_t row = 0; row < scale.size(); ++row) scale[row] = 0.5 + 0.001 * static_cast<double>(row % 101);
    ColumnStatsRequest request;
    request.row_scale = scale;
    const auto first = backend.column_stats(request, ctx);
    const auto second = backend.column_stats(request, ctx);
    EXPECT_EQ(first.sum, second.sum);
    EXPECT_EQ(first.sum_squares, second.sum_squares);
    std::vector<double> sum(500), squares(500);
    std::vector<std::int64_t> nnz(500);
    gpu::kernels::ValueRequest value_request;
    value_request.row_scale = scale.data();
    gpu::kernels::column_stats_host(shard.row_offsets.data(), shard.gene_indices.data(), shard.values.data(),
                                    gpu::kernels::lane_bounds(shard.row_offsets, gpu::kernels::max_lanes_for_width(500)),
                                    500, value_request, nullptr, sum.data(), squares.data(), nnz.data());
    EXPECT_EQ(first.sum, sum) << "same lanes, same order, no FMA contraction";
    EXPECT_EQ(first.sum_squares, squares);
    EXPECT_EQ(first.nnz, nnz);
}

TEST_F(CudaBackendTest, OutOfDeviceMemoryRunsThePrimitiveOnTheCpuAndSaysSo) {
    // A 6000-gene Gram matrix needs 288 MiB on the device; leave 64 MiB free.
    const auto shard = simulated(3000, 6000, 11);
    const gpu::CudaBackend backend(shard, 0);
    std::vector<double> mean(6000, 0.1), inv(6000, 1.3);
    const Standardization standardization{mean, inv, {}, {}};
    GramResult fallback;
    {
        const gpu::DeviceReservation full(0, std::int64_t{64} << 20);
        fallback = backend.gram({}, standardization, ctx);
    }
    EXPECT_NE(ctx.progress().message.find("GPU out of memory"), std::string::npos) << ctx.progress().message;
    EXPECT_NE(ctx.progress().message.find("gram ran on the CPU instead"), std::string::npos) << ctx.progress().message;
    JobContext fresh;
    const auto expected = CpuBackend(shard, 0).gram({}, standardization, fresh);
    EXPECT_EQ(fallback.gram.values(), expected.gram.values()) << "the fallback is the CPU backend itself";
    // The device is usable again once memory is free.
    const auto on_device = backend.gram({}, standardization, fresh);
    for (std::size_t index = 0; index < expected.gram.values().size(); index += 997)
        EXPECT_NEAR(on_device.gram.values()[index], expected.gram.values()[index], 1e-9 * (1 + std::abs(expected.gram.values()[index])));
}

TEST_F(CudaBackendTest, ExactKnnMatchesTheCpuSearchWithQueriesSplitAcrossDevices) {
    const std::int64_t cells = 20000;
    const int dims = 30, neighbors = 15;
    DenseMatrix<float> points(cells, dims);
    std::uint64_t state = 12345;
    for (auto& value : points.values()) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        value = static_cast<float>(static_cast<double>(state >> 11) / 9007199254740992.0 * 10.0 - 5.0);
    }
    const KnnGraph expected = exact_neighbors(points, dims, neighbors, 0, cells, ctx);
    std::vector<std::int32_t> indices(static_cast<std::size_t>(cells * neighbors));
    std::vector<float> distances(indices.size());
    // Device 0 twice: two query partitions, as with two GPUs.
    const std::vector<int> devices{0, 0};
    gpu::exact_knn(points.values().data(), cells, dims, neighbors, devices, indices.data(), distances.data(), ctx);
    std::int64_t found = 0;
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        ASSERT_EQ(indices[static_cast<std::size_t>(cell * neighbors)], cell) << "self first";
        const auto truth = expected.neighbors(cell);
        for (int slot = 1; slot < neighbors; ++slot)
            found += std::find(truth.begin() + 1, truth.end(), indices[static_cast<std::size_t>(cell * neighbors + slot)]) != truth.end();
    }
    const double recall = static_cast<double>(found) / static_cast<double>(cells * (neighbors - 1));
    EXPECT_GE(recall, 0.999);
}

TEST_F(CudaBackendTest, UmapSgdFollowsTheHostLoop) {
    // A ring graph of 5000 vertices with symmetric edges to the 4 nearest on each side.
    const std::int64_t vertices = 5000;
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> tail;
    for (std::int64_t vertex = 0; vertex < vertices; ++vertex) {
        for (int step : {-4, -3, -2, -1, 1, 2, 3, 4}) tail.push_back(static_cast<std::int32_t>((vertex + step + vertices) % vertices));
        std::sort(tail.end() - 8, tail.end());
        offsets.push_back(static_cast<std::int64_t>(tail.size()));
    }
    std::vector<double> per_sample(tail.size()), per_negative(tail.size());
    for (std::size_t edge = 0; edge < tail.size(); ++edge) {
        per_sample[edge] = 1.0 + static_cast<double>(edge % 3);
        per_negative[edge] = per_sample[edge] / 5.0;
    }
    UmapSgdProblem problem;
    problem.num_vertices = vertices;
    problem.offsets = offsets;
    problem.tail = tail;
    problem.epochs_per_sample = per_sample;
    problem.epochs_per_negative_sample = per_negative;
    problem.a = 0.583f;
    problem.b = 1.334f;
    problem.num_epochs = 10;
    problem.block_size = 256;
    std::vector<float> start(static_cast<std::size_t>(vertices * 2));
    for (std::size_t index = 0; index < start.size(); ++index) start[index] = static_cast<float>((index * 7919) % 1000) / 100.0f;
    auto on_device = start;
    int published = 0;
    gpu::umap_sgd(problem, on_device.data(), 5, [&published](int) { ++published; }, 0, ctx);
    EXPECT_EQ(published, 1) << "epoch 5 (the last is not an intermediate frame)";
    auto on_host = start;
    std::vector<double> next_sample = per_sample, next_negative = per_negative;
    gpu::kernels::SgdArrays sgd;
    sgd.num_vertices = vertices;
    sgd.offsets = offsets.data();
    sgd.tail = tail.data();
    sgd.epochs_per_sample = per_sample.data();
    sgd.epochs_per_negative_sample = per_negative.data();
    sgd.next_sample = next_sample.data();
    sgd.next_negative = next_negative.data();
    sgd.a = problem.a;
    sgd.b = problem.b;
    gpu::kernels::deterministic_sgd_host(sgd, on_host.data(), 10, 1.0, 0, 256);
    // The device's powf may round the last bit differently; 10 epochs stay close.
    double worst = 0.0;
    for (std::size_t index = 0; index < on_host.size(); ++index) worst = std::max(worst, double(std::abs(on_host[index] - on_device[index])));
    EXPECT_LT(worst, 1e-2);
}

#else

TEST(CudaBackendTest, BuiltWithoutCuda) { GTEST_SKIP() << "this build has no CUDA support (FATHOM_WITH_CUDA=OFF)"; }

#endif

}  // namespace
}  // namespace fathom::test
