// The CUDA exact kNN's arithmetic (gpu/knn_kernels.hpp) run by its host loop, against
// the CPU's certified exact search: the same neighbours and distances.
#include <gtest/gtest.h>

#include <random>

#include "core/algo/knn.hpp"
#include "core/types/JobContext.hpp"
#include "gpu/knn_kernels.hpp"

namespace fathom::test {
namespace {

namespace k = gpu::kernels;

/// Clustered points like PCA scores: a few centres, spread decreasing with the column.
DenseMatrix<float> clustered(std::int64_t cells, int dims, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal;
    DenseMatrix<float> centres(6, dims);
    for (auto& value : centres.values()) value = 8.0f * normal(generator);
    DenseMatrix<float> points(cells, dims);
    for (std::int64_t cell = 0; cell < cells; ++cell)
        for (int dim = 0; dim < dims; ++dim)
            points(cell, dim) = centres(cell % 6, dim) + normal(generator) * 3.0f / (1.0f + 0.2f * static_cast<float>(dim));
    return points;
}

TEST(KnnKernels, InsertCandidateKeepsTheBestSortedWithTiesByIndex) {
    std::vector<float> scores(4);
    std::vector<std::int32_t> indices(4);
    int count = 0;
    const std::vector<std::pair<float, std::int32_t>> inputs{{5, 0}, {3, 1}, {5, 2}, {1, 3}, {9, 4}, {3, 5}, {0.5f, 6}};
    for (const auto& [score, index] : inputs) count = k::insert_candidate(score, index, scores.data(), indices.data(), count, 4, 1);
    EXPECT_EQ(count, 4);
    EXPECT_EQ(scores, (std::vector<float>{0.5f, 1, 3, 3}));
    EXPECT_EQ(indices, (std::vector<std::int32_t>{6, 3, 1, 5}));
    EXPECT_EQ(k::knn_capacity(15, 1000), 46);
    EXPECT_EQ(k::knn_capacity(15, 20), 20);
}

TEST(KnnKernels, HostLoopEqualsTheCpuExactSearch) {
    for (const auto& [cells, dims, neighbors] : std::vector<std::tuple<std::int64_t, int, int>>{{600, 30, 15}, {257, 8, 5}, {40, 50, 30}}) {
        const auto points = clustered(cells, dims, static_cast<std::uint64_t>(cells));
        JobContext ctx;
        const KnnGraph expected = exact_neighbors(points, dims, neighbors, 0, cells, ctx);
        std::vector<std::int32_t> indices(static_cast<std::size_t>(cells * neighbors));
        std::vector<float> distances(indices.size());
        k::exact_knn_host(points.values().data(), cells, dims, neighbors, 0, cells, indices.data(), distances.data());
        std::int64_t same = 0;
        for (std::size_t slot = 0; slot < indices.size(); ++slot) same += indices[slot] == expected.indices[slot] ? 1 : 0;
        EXPECT_EQ(same, static_cast<std::int64_t>(indices.size())) << cells << " cells";
        EXPECT_EQ(distances, expected.distances) << cells << " cells";
    }
}

TEST(KnnKernels, QueryRangesGiveTheRowsOfTheWholeSearch) {
    const auto points = clustered(300, 12, 3);
    std::vector<std::int32_t> whole(300 * 10), part(100 * 10);
    std::vector<float> whole_distances(whole.size()), part_distances(part.size());
    k::exact_knn_host(points.values().data(), 300, 12, 10, 0, 300, whole.data(), whole_distances.data());
    k::exact_knn_host(points.values().data(), 300, 12, 10, 150, 250, part.data(), part_distances.data());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + 150 * 10));
    EXPECT_TRUE(std::equal(part_distances.begin(), part_distances.end(), whole_distances.begin() + 150 * 10));
}

}  // namespace
}  // namespace fathom::test
