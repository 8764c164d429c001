#pragma once
/// Shared checks of the approximate kNN searches: recall of every cell against the exact
/// search, and the result contract of nearest_neighbors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "core/algo/knn.hpp"
#include "core/engine/JobContext.hpp"
#include "core/types/DenseMatrix.hpp"

namespace fathom::test {

/// Squared distance in double over the first `dims` coordinates.
inline double sq_distance(const DenseMatrix<float>& points, std::int64_t a, std::int64_t b, int dims) {
    double sum = 0.0;
    for (int dim = 0; dim < dims; ++dim) {
        const double difference = static_cast<double>(points(a, dim)) - static_cast<double>(points(b, dim));
        sum += difference * difference;
    }
    return sum;
}

/// Recall of every cell against the exact search.
inline double full_recall(const DenseMatrix<float>& points, const KnnResult& approximate) {
    JobContext ctx;
    KnnOptions exact;
    exact.method = KnnMethod::Exact;
    exact.num_neighbors = approximate.graph.num_neighbors;
    const auto truth = nearest_neighbors(points, exact, ctx);
    std::vector<std::int64_t> all(static_cast<std::size_t>(points.rows()));
    std::iota(all.begin(), all.end(), 0);
    return knn_recall(approximate.graph, truth.graph, all);
}

/// Self first at 0, then the others sorted by (distance, index) with distances equal to
/// the double-precision distance stored as float; no repeats.
inline void expect_knn_contract(const DenseMatrix<float>& points, const KnnGraph& graph, int dims) {
    for (std::int64_t cell = 0; cell < graph.num_cells; ++cell) {
        const auto indices = graph.neighbors(cell);
        const auto distances = graph.neighbor_distances(cell);
        ASSERT_EQ(indices[0], cell);
        ASSERT_EQ(distances[0], 0.0f);
        std::set<std::int32_t> seen(indices.begin(), indices.end());
        ASSERT_EQ(seen.size(), indices.size()) << "repeated neighbour of cell " << cell;
        double previous = -1.0;
        std::int32_t previous_index = -1;
        for (std::size_t rank = 1; rank < indices.size(); ++rank) {
            const double exact = sq_distance(points, cell, indices[rank], dims);
            ASSERT_EQ(distances[rank], static_cast<float>(std::sqrt(exact))) << "cell " << cell << " rank " << rank;
            ASSERT_TRUE(exact > previous || (exact == previous && indices[rank] > previous_index))
                << "cell " << cell << " not sorted at rank " << rank;
            previous = exact;
            previous_index = indices[rank];
        }
    }
}

}  // namespace fathom::test
