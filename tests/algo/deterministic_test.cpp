// The deterministic settings of the neighbours step and UMAP on real data: from one
// PCA (scanpy's X_pca of neurons10k, 10,000 cells, so Auto picks the approximate
// IVF search), any number of query partitions (devices) and threads gives a
// bit-identical kNN graph and fuzzy graph, and UMAP's deterministic SGD a bit-identical
// embedding.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/algo/neighbors.hpp"
#include "core/algo/umap.hpp"
#include "core/types/JobContext.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

struct Outcome {
    NeighborsResult graph;
    DenseMatrix<float> embedding;
};

Outcome run(const DenseMatrix<float>& points, int partitions, int threads) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    JobContext ctx;
    NeighborsOptions options;
    options.knn.hnsw_parallel_build = false;
    options.knn.num_partitions = partitions;
    options.knn.seed = 7;
    Outcome outcome;
    outcome.graph = neighbors(points, options, ctx);
    UmapOptions umap_options;
    umap_options.parallelism = UmapParallelism::Deterministic;
    umap_options.num_epochs = 100;
    umap_options.seed = 7;
    outcome.embedding = umap(outcome.graph.connectivities, points, umap_options, ctx).embedding;
    return outcome;
}

TEST(Deterministic, NeighborsAndUmapOfRealDataAreBitIdenticalAcrossPartitionsAndThreads) {
    const auto path = test::shared_reference("scanpy_neurons10k_1000genes/X_pca.npy");
    FATHOM_REQUIRE_PATH(path);
    const DenseMatrix<float> points = test::read_npy_float_matrix(path);
    ASSERT_GE(points.rows(), KnnOptions{}.exact_below) << "the approximate search must be the one tested";

    const Outcome reference = run(points, 1, 1);
    EXPECT_EQ(reference.graph.knn.method_used, KnnMethod::Ivf);
    EXPECT_GE(reference.graph.knn.recall, 0.99);
    for (const float value : reference.embedding.values()) ASSERT_TRUE(std::isfinite(value));
    const struct {
        int partitions, threads;
    } variants[] = {{3, 2}, {2, 2}, {1, 2}};
    for (const auto& variant : variants) {
        const Outcome other = run(points, variant.partitions, variant.threads);
        const std::string label =
            std::to_string(variant.partitions) + " partitions, " + std::to_string(variant.threads) + " threads";
        EXPECT_EQ(other.graph.knn.graph.indices, reference.graph.knn.graph.indices) << label;
        EXPECT_EQ(other.graph.knn.graph.distances, reference.graph.knn.graph.distances) << label;
        EXPECT_EQ(other.graph.connectivities.row_offsets, reference.graph.connectivities.row_offsets) << label;
        EXPECT_EQ(other.graph.connectivities.col_indices, reference.graph.connectivities.col_indices) << label;
        EXPECT_EQ(other.graph.connectivities.values, reference.graph.connectivities.values) << label;
        EXPECT_EQ(other.embedding.values(), reference.embedding.values()) << label;
    }
}

}  // namespace
}  // namespace fathom
