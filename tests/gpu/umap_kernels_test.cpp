// UMAP's deterministic SGD as the CUDA kernel computes it (gpu/umap_kernels.hpp),
// run by its host loop as an accelerator's umap_sgd: the same embedding, bit
// for bit, as the CPU's deterministic UMAP.
#include <gtest/gtest.h>

#include <random>

#include "core/algo/neighbors.hpp"
#include "core/algo/umap.hpp"
#include "core/types/JobContext.hpp"
#include "gpu/umap_kernels.hpp"
#include "tests/support/accelerators.hpp"

namespace fathom::test {
namespace {

namespace k = gpu::kernels;

CsrGraph clustered_graph(std::int64_t cells, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal;
    DenseMatrix<float> points(cells, 10);
    for (std::int64_t cell = 0; cell < cells; ++cell)
        for (int dim = 0; dim < 10; ++dim) points(cell, dim) = static_cast<float>(cell % 4) * 6.0f * (dim == cell % 4) + normal(generator);
    JobContext ctx;
    return neighbors(points, NeighborsOptions{}, ctx).connectivities;
}

/// The host loop of the kernel, as an accelerated SGD; counts its publications.
bool host_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, const std::function<void(int)>& publish,
              int publish_every, int& published) {
    std::vector<double> next_sample(problem.epochs_per_sample.begin(), problem.epochs_per_sample.end());
    std::vector<double> next_negative(problem.epochs_per_negative_sample.begin(), problem.epochs_per_negative_sample.end());
    k::SgdArrays sgd;
    sgd.num_vertices = problem.num_vertices;
    sgd.dim = problem.dim;
    sgd.offsets = problem.offsets.data();
    sgd.tail = problem.tail.data();
    sgd.epochs_per_sample = problem.epochs_per_sample.data();
    sgd.epochs_per_negative_sample = problem.epochs_per_negative_sample.data();
    sgd.next_sample = next_sample.data();
    sgd.next_negative = next_negative.data();
    sgd.a = problem.a;
    sgd.b = problem.b;
    sgd.gamma = problem.gamma;
    k::deterministic_sgd_host(sgd, embedding.data(), problem.num_epochs, problem.learning_rate, problem.seed,
                              problem.block_size);
    for (int done = publish_every; done < problem.num_epochs; done += publish_every) {
        publish(done);
        ++published;
    }
    return true;
}

TEST(UmapKernels, HostLoopReproducesTheCpuDeterministicUmapBitForBit) {
    for (const auto& [cells, components] : std::vector<std::pair<std::int64_t, int>>{{700, 2}, {300, 3}}) {
        const CsrGraph graph = clustered_graph(cells, static_cast<std::uint64_t>(cells));
        UmapOptions options;
        options.num_components = components;
        options.num_epochs = 60;
        options.seed = 11;
        options.parallelism = UmapParallelism::Deterministic;
        JobContext ctx;
        const UmapResult cpu = umap(graph, DenseMatrix<float>(), options, ctx);

        int published = 0;
        FunctionAccelerator accelerator;
        accelerator.sgd = [&](const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                              const std::function<void(int)>& publish, JobContext&) {
            EXPECT_EQ(problem.num_vertices, cells);
            EXPECT_EQ(problem.dim, components);
            EXPECT_EQ(problem.num_epochs, 60);
            EXPECT_EQ(publish_every, 10);
            return host_sgd(problem, embedding, publish, publish_every, published);
        };
        struct Frames final : EmbeddingObserver {
            int count = 0;
            void on_epoch(int, const DenseMatrix<float>&) override { ++count; }
        } frames;
        const UmapResult device_logic = umap(graph, DenseMatrix<float>(), options, ctx, &accelerator, &frames);
        EXPECT_EQ(device_logic.embedding.values(), cpu.embedding.values()) << cells << " cells";
        EXPECT_EQ(published, 5);
        EXPECT_EQ(frames.count, 6) << "five intermediate frames and the final one";
    }
}

TEST(UmapKernels, ADecliningAcceleratorLeavesTheCpuRun) {
    const CsrGraph graph = clustered_graph(200, 5);
    UmapOptions options;
    options.num_epochs = 30;
    options.parallelism = UmapParallelism::Deterministic;
    JobContext ctx;
    const UmapResult cpu = umap(graph, DenseMatrix<float>(), options, ctx);
    bool asked = false;
    FunctionAccelerator accelerator;
    accelerator.sgd = [&asked](const UmapSgdProblem&, DenseMatrix<float>&, int, const std::function<void(int)>&, JobContext&) {
        asked = true;
        return false;
    };
    EXPECT_EQ(umap(graph, DenseMatrix<float>(), options, ctx, &accelerator).embedding.values(), cpu.embedding.values());
    EXPECT_TRUE(asked);
    // Other modes never ask.
    asked = false;
    options.parallelism = UmapParallelism::Sequential;
    umap(graph, DenseMatrix<float>(), options, ctx, &accelerator);
    EXPECT_FALSE(asked);
}

TEST(UmapKernels, StepSizeFallsLinearlyAsTheCpuSchedule) {
    EXPECT_EQ(k::epoch_alpha(1.0, 0, 200), 1.0f);
    EXPECT_EQ(k::epoch_alpha(1.0, 1, 200), 1.0f);
    EXPECT_EQ(k::epoch_alpha(1.0, 101, 200), 0.5f);
    EXPECT_EQ(k::epoch_alpha(2.0, 200, 200), static_cast<float>(2.0 * (1.0 - 199.0 / 200.0)));
}

}  // namespace
}  // namespace fathom::test
