#pragma once
/// Shared checks of the approximate kNN searches: recall of every cell against the exact
/// search, the result contract of nearest_neighbors, and the candidate lists of the
/// searches' detail functions.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/algo/knn.hpp"
#include "core/algo/nn_descent.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/DenseMatrix.hpp"
#include "tests/support/simulate.hpp"

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

/// Recall against the exact search of the cells from `first` on (the cells before it
/// are left out, e.g. duplicates, among which any copies are right).
inline double recall_from(const DenseMatrix<float>& points, const KnnResult& approximate, std::int64_t first) {
    JobContext ctx;
    KnnOptions exact;
    exact.method = KnnMethod::Exact;
    exact.num_neighbors = approximate.graph.num_neighbors;
    const auto truth = nearest_neighbors(points, exact, ctx).graph;
    const std::int64_t count = points.rows() - first;
    const auto skipped = static_cast<std::ptrdiff_t>(first * truth.num_neighbors);
    std::vector<std::int64_t> cells(static_cast<std::size_t>(count));
    std::iota(cells.begin(), cells.end(), first);
    KnnGraph rows;
    rows.num_cells = count;
    rows.num_neighbors = truth.num_neighbors;
    rows.indices.assign(truth.indices.begin() + skipped, truth.indices.end());
    rows.distances.assign(truth.distances.begin() + skipped, truth.distances.end());
    return knn_recall(approximate.graph, rows, cells);
}

/// Every cell's candidate list is full (`pool` entries), of distinct other cells, with
/// the double-precision squared distance over the first `dims` coordinates.
inline void expect_full_candidate_lists(const DenseMatrix<float>& points, const detail::KnnCandidates& found,
                                        int pool, int dims) {
    ASSERT_EQ(found.pool, pool);
    ASSERT_EQ(found.indices.size(), static_cast<std::size_t>(points.rows()) * static_cast<std::size_t>(pool));
    for (std::int64_t cell = 0; cell < points.rows(); ++cell) {
        std::set<std::int32_t> seen;
        for (int slot = 0; slot < pool; ++slot) {
            const auto entry = static_cast<std::size_t>(cell * pool + slot);
            const std::int32_t other = found.indices[entry];
            ASSERT_GE(other, 0) << "cell " << cell << " has a short list";
            ASSERT_NE(other, cell);
            ASSERT_TRUE(seen.insert(other).second) << "cell " << cell << " lists " << other << " twice";
            ASSERT_EQ(found.sq_distances[entry], sq_distance(points, cell, other, dims));
        }
    }
}

/// `method` returns the exact search's graph on tiny mixtures of these numbers of cells.
inline void expect_exact_on_small_inputs(KnnMethod method, std::uint64_t seed, std::initializer_list<std::int64_t> sizes) {
    for (const std::int64_t cells : sizes) {
        const auto points = gaussian_mixture(cells, 5, 2, seed + static_cast<std::uint64_t>(cells));
        JobContext ctx;
        KnnOptions options;
        options.method = method;
        const auto result = nearest_neighbors(points, options, ctx);
        options.method = KnnMethod::Exact;
        const auto exact = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(result.graph.indices, exact.graph.indices) << cells << " cells";
        EXPECT_EQ(result.graph.distances, exact.graph.distances) << cells << " cells";
    }
}

/// nearest_neighbors on one thread, then on two threads with 1 and 3 query partitions:
/// the graphs (and NN-descent's round count) are bit-identical. Returns the first.
inline KnnResult expect_thread_and_partition_invariant(const DenseMatrix<float>& points, KnnOptions options) {
    JobContext ctx;
    KnnResult reference;
    {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        reference = nearest_neighbors(points, options, ctx);
    }
    for (const int partitions : {1, 3}) {
        const tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
        options.num_partitions = partitions;
        const auto other = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(other.graph.indices, reference.graph.indices) << partitions << " partitions";
        EXPECT_EQ(other.graph.distances, reference.graph.distances) << partitions << " partitions";
        EXPECT_EQ(other.nndescent_iterations, reference.nndescent_iterations);
    }
    return reference;
}

/// The message validate() throws for `options` on 1000 cells x 10 dims ("" if none).
inline std::string knn_option_error(const KnnOptions& options) {
    try {
        validate(options, 1000, 10);
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return {};
}

/// validate() rejects `options` with a message naming KnnOptions::<field>.
inline void expect_knn_option_named(const KnnOptions& options, const std::string& field) {
    EXPECT_NE(knn_option_error(options).find("KnnOptions::" + field), std::string::npos) << field;
}

}  // namespace fathom::test
