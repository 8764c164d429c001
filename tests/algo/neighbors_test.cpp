// Tests of core/algo/knn, connectivities and neighbors: brute-force references on
// simulated data, partition / thread invariance, and fidelity to scanpy 1.9.6's
// obsp['distances'] / obsp['connectivities'] on every shared reference.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/algo/connectivities.hpp"
#include "core/algo/knn.hpp"
#include "core/algo/neighbors.hpp"
#include "core/types/JobContext.hpp"
#include "tests/support/graph_metrics.hpp"
#include "tests/support/npy.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/simulate.hpp"
#include "tests/support/thread_comm.hpp"

namespace fathom {
namespace {

using test::gaussian_mixture;

/// Obviously-correct kNN: all pairwise distances in double, sorted by (distance, index),
/// self first.
KnnGraph brute_force_knn(const DenseMatrix<float>& points, int dims, int k) {
    KnnGraph graph;
    graph.num_cells = points.rows();
    graph.num_neighbors = k;
    for (std::int64_t cell = 0; cell < points.rows(); ++cell) {
        std::vector<std::pair<double, std::int32_t>> all;
        for (std::int64_t other = 0; other < points.rows(); ++other) {
            if (other == cell) continue;
            double sum = 0;
            for (int dim = 0; dim < dims; ++dim) {
                const double diff = static_cast<double>(points(cell, dim)) - points(other, dim);
                sum += diff * diff;
            }
            all.emplace_back(sum, static_cast<std::int32_t>(other));
        }
        std::sort(all.begin(), all.end());
        graph.indices.push_back(static_cast<std::int32_t>(cell));
        graph.distances.push_back(0.0f);
        for (int rank = 0; rank < k - 1; ++rank) {
            graph.indices.push_back(all[static_cast<std::size_t>(rank)].second);
            graph.distances.push_back(static_cast<float>(std::sqrt(all[static_cast<std::size_t>(rank)].first)));
        }
    }
    return graph;
}

TEST(ExactNeighbors, MatchesBruteForceIncludingDuplicatesAndTies) {
    auto points = gaussian_mixture(1500, 20, 6, 1);
    // Duplicated cells (distance 0 to another cell) and an exact tie pair.
    for (int dim = 0; dim < 20; ++dim) {
        points(10, dim) = points(11, dim);
        points(500, dim) = points(501, dim) = points(502, dim);
    }
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Exact;
    const auto result = nearest_neighbors(points, options, ctx);
    const auto expected = brute_force_knn(points, 20, 15);
    EXPECT_EQ(result.method_used, KnnMethod::Exact);
    EXPECT_EQ(result.graph.indices, expected.indices);
    for (std::size_t entry = 0; entry < expected.distances.size(); ++entry)
        ASSERT_NEAR(result.graph.distances[entry], expected.distances[entry], 1e-5f * (1 + expected.distances[entry]));
    EXPECT_EQ(result.graph.neighbors(10)[0], 10);
    EXPECT_EQ(result.graph.neighbors(10)[1], 11);
    EXPECT_EQ(result.graph.neighbor_distances(10)[1], 0.0f);
}

// The search shared by ranks (threads here, MPI ranks in fathom-cli) gives rank 0 the
// one-process graph bit for bit, for the exact search (split by queries), the IVF search
// (its phases split, lists exchanged between them) and NN-descent (run by rank 0); the
// other ranks hold no graph.
TEST(SharedSearch, RankZeroGetsTheOneProcessGraphBitForBit) {
    auto points = gaussian_mixture(2600, 12, 7, 4);
    for (int dim = 0; dim < 12; ++dim) points(20, dim) = points(21, dim);  // a duplicate
    JobContext ctx;
    struct Case {
        KnnMethod method;
        int refine_rounds;
        int ranks;
    };
    for (const Case& each : {Case{KnnMethod::Auto, 1, 3}, Case{KnnMethod::Ivf, 1, 2}, Case{KnnMethod::Ivf, 0, 3},
                             Case{KnnMethod::Ivf, 2, 3}, Case{KnnMethod::Ivf, 1, 4}, Case{KnnMethod::NnDescent, 1, 2}}) {
        SCOPED_TRACE(std::string(knn_method_name(each.method)) + " refine " + std::to_string(each.refine_rounds) + ", " +
                     std::to_string(each.ranks) + " ranks");
        NeighborsOptions options;  // Auto: exact below 8192 cells
        options.knn.method = each.method;
        options.knn.ivf_cluster_size = 40;  // 65 clusters: every rank searches several
        options.knn.ivf_refine_rounds = each.refine_rounds;
        const NeighborsResult whole = neighbors(points, options, ctx);
        std::vector<KnnResult> results(static_cast<std::size_t>(each.ranks));
        std::vector<std::int64_t> sent(results.size());
        test::run_ranks(each.ranks, [&](Comm& comm) {
            JobContext rank_ctx;
            results[static_cast<std::size_t>(comm.rank())] = nearest_neighbors(points, options.knn, comm, rank_ctx);
            sent[static_cast<std::size_t>(comm.rank())] = comm.bytes_sent();
        });
        const KnnResult& shared = results[0];
        EXPECT_EQ(shared.method_used, whole.knn.method_used);
        EXPECT_EQ(shared.graph.num_cells, points.rows());
        EXPECT_EQ(shared.graph.indices, whole.knn.graph.indices);
        EXPECT_EQ(shared.graph.distances, whole.knn.graph.distances);
        if (each.method != KnnMethod::Auto) {
            EXPECT_EQ(shared.recall, whole.knn.recall);
        }
        for (int rank = 1; rank < each.ranks; ++rank) {
            EXPECT_EQ(results[static_cast<std::size_t>(rank)].graph.num_cells, 0);
            // Ranks that share the search send their part; NN-descent runs on rank 0 alone.
            if (each.method == KnnMethod::NnDescent) {
                EXPECT_EQ(sent[static_cast<std::size_t>(rank)], 0);
            } else {
                EXPECT_GT(sent[static_cast<std::size_t>(rank)], 0);
            }
        }
        const NeighborsResult rebuilt = neighbors_from_knn(KnnResult(shared), options, ctx);
        EXPECT_EQ(rebuilt.connectivities.values, whole.connectivities.values);
        EXPECT_EQ(rebuilt.connectivities.col_indices, whole.connectivities.col_indices);
        EXPECT_EQ(rebuilt.distances.values, whole.distances.values);
    }
}

TEST(ExactNeighbors, UsesOnlyTheLeadingNumPcsColumns) {
    const auto points = gaussian_mixture(400, 30, 4, 2);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Exact;
    options.num_pcs = 7;
    const auto result = nearest_neighbors(points, options, ctx);
    EXPECT_EQ(result.num_dims, 7);
    EXPECT_EQ(result.graph.indices, brute_force_knn(points, 7, 15).indices);
}

TEST(ExactNeighbors, FarOffsetDataStillExact) {
    // A large common offset makes ||q||^2 + ||x||^2 - 2 q.x cancel badly in float; the
    // centred screen plus the certificate must still give the exact answer.
    auto points = gaussian_mixture(800, 10, 3, 3);
    for (auto& value : points.values()) value += 1000.0f;
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Exact;
    EXPECT_EQ(nearest_neighbors(points, options, ctx).graph.indices, brute_force_knn(points, 10, 15).indices);
}

TEST(ExactNeighbors, SmallDatasetAdjustsKAsScanpy) {
    const auto points = gaussian_mixture(10, 3, 2, 4);
    JobContext ctx;
    const auto result = nearest_neighbors(points, KnnOptions{}, ctx);
    EXPECT_EQ(result.graph.num_neighbors, 6);  // 1 + int(0.5 * 10)
}

TEST(Neighbors, PartitionAndThreadCountDoNotChangeTheResult) {
    const auto points = gaussian_mixture(3000, 16, 8, 5);
    JobContext ctx;
    for (const auto method : {KnnMethod::Exact, KnnMethod::Hnsw, KnnMethod::NnDescent, KnnMethod::Ivf}) {
        KnnOptions options;
        options.method = method;
        options.ivf_cluster_size = 40;  // 75 clusters, 16 probed: not an exhaustive search
        options.hnsw_parallel_build = false;
        options.recall_sample = 0;
        const auto reference = nearest_neighbors(points, options, ctx);
        for (int partitions : {3, 7}) {
            options.num_partitions = partitions;
            const auto split = nearest_neighbors(points, options, ctx);
            EXPECT_EQ(split.graph.indices, reference.graph.indices) << knn_method_name(method) << " " << partitions;
            EXPECT_EQ(split.graph.distances, reference.graph.distances) << knn_method_name(method) << " " << partitions;
        }
        options.num_partitions = 1;
        tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
        const auto single = nearest_neighbors(points, options, ctx);
        EXPECT_EQ(single.graph.indices, reference.graph.indices) << knn_method_name(method);
    }
}

TEST(HnswNeighbors, RecallAgainstExactAtLeast99Percent) {
    const auto points = gaussian_mixture(6000, 30, 10, 6);
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Hnsw;
    options.recall_sample = 500;
    const auto result = nearest_neighbors(points, options, ctx);
    EXPECT_EQ(result.method_used, KnnMethod::Hnsw);
    EXPECT_EQ(result.recall_queries, 500);
    EXPECT_GE(result.recall, 0.99);
    // The reported recall agrees with a full comparison.
    options.method = KnnMethod::Exact;
    const auto exact = nearest_neighbors(points, options, ctx);
    std::vector<std::int64_t> all(6000);
    std::iota(all.begin(), all.end(), 0);
    const double full = knn_recall(result.graph, exact.graph, all);
    EXPECT_GE(full, 0.99);
    EXPECT_NEAR(result.recall, full, 0.01);
    for (std::int64_t cell = 0; cell < 6000; ++cell) ASSERT_EQ(result.graph.neighbors(cell)[0], cell);
}

TEST(KnnOptions, ValidateNamesTheField) {
    const auto message = [](KnnOptions options) {
        try {
            validate(options, 100, 10);
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string();
    };
    KnnOptions options;
    options.num_neighbors = 1;
    EXPECT_NE(message(options).find("KnnOptions::num_neighbors"), std::string::npos);
    options = {};
    options.num_pcs = 11;
    EXPECT_NE(message(options).find("KnnOptions::num_pcs"), std::string::npos);
    options = {};
    options.num_partitions = 0;
    EXPECT_NE(message(options).find("KnnOptions::num_partitions"), std::string::npos);
    options = {};
    options.hnsw_ef_construction = 1;
    EXPECT_NE(message(options).find("KnnOptions::hnsw_ef_construction"), std::string::npos);
    ConnectivitiesOptions connectivity;
    connectivity.set_op_mix_ratio = 2;
    EXPECT_THROW(validate(connectivity), std::invalid_argument);
}

/// Straightforward dense implementation of umap 0.5.3 smooth_knn_dist +
/// compute_membership_strengths + fuzzy union, for comparison.
std::vector<double> dense_fuzzy_union(const KnnGraph& knn) {
    const auto n = knn.num_cells;
    const int k = knn.num_neighbors;
    std::vector<double> a(static_cast<std::size_t>(n * n), 0.0);
    double mean_all = 0;
    for (const float d : knn.distances) mean_all += d;
    mean_all /= static_cast<double>(knn.distances.size());
    for (std::int64_t i = 0; i < n; ++i) {
        const auto dist = knn.neighbor_distances(i);
        double rho = 0;
        for (const float d : dist)
            if (d > 0) {
                rho = d;
                break;
            }
        double lo = 0, hi = INFINITY, mid = 1;
        for (int it = 0; it < 64; ++it) {
            double psum = 0;
            for (int j = 1; j < k; ++j) psum += dist[j] - rho > 0 ? std::exp(-(dist[j] - rho) / mid) : 1.0;
            if (std::fabs(psum - std::log2(k)) < 1e-5) break;
            if (psum > std::log2(k)) {
                hi = mid;
                mid = (lo + hi) / 2;
            } else {
                lo = mid;
                mid = std::isinf(hi) ? mid * 2 : (lo + hi) / 2;
            }
        }
        double row_mean = 0;
        for (const float d : dist) row_mean += d;
        row_mean /= k;
        const double sigma = std::max(mid, 1e-3 * (rho > 0 ? row_mean : mean_all));
        for (int j = 0; j < k; ++j) {
            const auto other = knn.neighbors(i)[j];
            if (other == i) continue;
            a[static_cast<std::size_t>(i * n + other)] = dist[j] - rho <= 0 ? 1.0 : std::exp(-(dist[j] - rho) / sigma);
        }
    }
    std::vector<double> result(a.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const double x = a[static_cast<std::size_t>(i * n + j)], y = a[static_cast<std::size_t>(j * n + i)];
            result[static_cast<std::size_t>(i * n + j)] = x + y - x * y;
        }
    return result;
}

TEST(Connectivities, MatchDenseReferenceAndAreSymmetric) {
    auto points = gaussian_mixture(600, 8, 5, 7);
    for (int dim = 0; dim < 8; ++dim) points(3, dim) = points(4, dim);  // a duplicate: d = 0 = rho case
    JobContext ctx;
    KnnOptions options;
    options.method = KnnMethod::Exact;
    const auto knn = nearest_neighbors(points, options, ctx).graph;
    const auto fuzzy = fuzzy_simplicial_set(knn, ConnectivitiesOptions{}, ctx);
    check_csr_graph(fuzzy.connectivities, "connectivities");
    const auto expected = dense_fuzzy_union(knn);
    const auto n = knn.num_cells;
    std::int64_t expected_nnz = 0;
    for (const double value : expected) expected_nnz += value != 0.0;
    EXPECT_EQ(fuzzy.connectivities.nnz(), expected_nnz);
    for (std::int64_t row = 0; row < n; ++row) {
        const auto columns = fuzzy.connectivities.row_indices(row);
        const auto values = fuzzy.connectivities.row_values(row);
        for (std::size_t entry = 0; entry < columns.size(); ++entry) {
            ASSERT_NE(columns[entry], row);
            ASSERT_NEAR(values[entry], expected[static_cast<std::size_t>(row * n + columns[entry])], 1e-5);
        }
    }
    // Symmetric bit for bit (a + b - ab is commutative in float).
    std::map<std::pair<std::int64_t, std::int32_t>, float> entries;
    for (std::int64_t row = 0; row < n; ++row)
        for (std::size_t entry = 0; entry < fuzzy.connectivities.row_indices(row).size(); ++entry)
            entries[{row, fuzzy.connectivities.row_indices(row)[entry]}] = fuzzy.connectivities.row_values(row)[entry];
    for (const auto& [key, value] : entries) ASSERT_EQ((entries[{key.second, static_cast<std::int32_t>(key.first)}]), value);
    // Every cell's sigma solves sum exp(-(d - rho)/sigma) = log2(k) (no floor hit here).
    const auto distances = distances_graph(knn);
    check_csr_graph(distances, "distances");
    EXPECT_EQ(distances.row_indices(3).size(), 13u);  // the duplicate's zero distance is dropped as scanpy does
    EXPECT_EQ(distances.row_indices(0).size(), 14u);
}

// ---------------------------------------------------------------------------------
// Fidelity to the shared Scanpy references.

const char* const kReferenceNames[] = {
    "scanpy_10x_v3_chr21", "scanpy_10x_v3_chr21_mtx", "scanpy_neurons10k_1000genes", "scanpy_pbmc68k_reduced_norecipe",
    "visium_cytassist_mouse_2898", "yeast_844cells", "geo_GSM6544281_min200"};

DenseMatrix<float> read_pca(const std::filesystem::path& folder) { return test::read_npy_float_matrix(folder / "X_pca.npy"); }

test::ReferenceCsr to_reference(const CsrGraph& graph) {
    test::ReferenceCsr csr;
    csr.num_rows = graph.num_cells;
    csr.indptr.assign(graph.row_offsets.begin(), graph.row_offsets.end());
    csr.indices.assign(graph.col_indices.begin(), graph.col_indices.end());
    csr.data.assign(graph.values.begin(), graph.values.end());
    return csr;
}

class ScanpyNeighbors : public ::testing::TestWithParam<const char*> {};

TEST_P(ScanpyNeighbors, DistancesAndConnectivitiesMatchScanpy) {
    const auto folder = test::shared_reference(GetParam());
    FATHOM_REQUIRE_PATH(folder / "X_pca.npy");
    const auto points = read_pca(folder);
    const auto reference_distances = test::read_reference_csr(folder, "distances");
    const auto reference_connectivities = test::read_reference_csr(folder, "connectivities");
    ASSERT_EQ(reference_distances.num_rows, points.rows());
    JobContext ctx;
    NeighborsOptions options;
    const auto start = std::chrono::steady_clock::now();
    const auto result = neighbors(points, options, ctx);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check_csr_graph(result.distances, "distances");
    check_csr_graph(result.connectivities, "connectivities");
    const auto ours = to_reference(result.distances);
    const double recall = test::row_recall(ours, reference_distances);

    // Connectivities: compare entries (i, j) whose two rows have the same neighbour
    // sets in both graphs (the weight depends on rows i and j only).
    const auto n = points.rows();
    std::vector<std::uint8_t> same(static_cast<std::size_t>(n), 0);
    std::int64_t same_rows = 0;
    for (std::int64_t row = 0; row < n; ++row) {
        std::set<std::int64_t> a(ours.indices.begin() + ours.indptr[row], ours.indices.begin() + ours.indptr[row + 1]);
        std::set<std::int64_t> b(reference_distances.indices.begin() + reference_distances.indptr[row],
                                 reference_distances.indices.begin() + reference_distances.indptr[row + 1]);
        same[static_cast<std::size_t>(row)] = a == b;
        same_rows += a == b;
    }
    std::int64_t compared = 0, pattern_mismatch = 0;
    double max_error = 0;
    const auto& conn = result.connectivities;
    for (std::int64_t row = 0; row < n; ++row) {
        if (!same[static_cast<std::size_t>(row)]) continue;
        std::map<std::int64_t, double> expected;
        for (auto entry = reference_connectivities.indptr[row]; entry < reference_connectivities.indptr[row + 1]; ++entry)
            if (same[static_cast<std::size_t>(reference_connectivities.indices[entry])])
                expected[reference_connectivities.indices[entry]] = reference_connectivities.data[entry];
        std::map<std::int64_t, double> found;
        for (std::size_t entry = 0; entry < conn.row_indices(row).size(); ++entry)
            if (same[static_cast<std::size_t>(conn.row_indices(row)[entry])])
                found[conn.row_indices(row)[entry]] = conn.row_values(row)[entry];
        for (const auto& [column, value] : expected) {
            const auto it = found.find(column);
            if (it == found.end()) {
                ++pattern_mismatch;
                continue;
            }
            max_error = std::max(max_error, std::fabs(it->second - value));
            ++compared;
        }
        for (const auto& [column, value] : found) pattern_mismatch += expected.count(column) == 0;
    }
    std::printf("[neighbors] %s: n=%lld method=%s recall_vs_scanpy=%.5f rows_identical=%.4f conn_compared=%lld "
                "conn_max_abs_err=%.2e pattern_mismatch=%lld fallbacks=%lld time=%.3fs\n",
                GetParam(), static_cast<long long>(n), knn_method_name(result.knn.method_used), recall,
                static_cast<double>(same_rows) / static_cast<double>(n), static_cast<long long>(compared), max_error,
                static_cast<long long>(pattern_mismatch), static_cast<long long>(result.knn.exact_fallback_queries), seconds);
    EXPECT_EQ(pattern_mismatch, 0);
    EXPECT_LE(max_error, 1e-4);
    EXPECT_GT(compared, n);
    if (n < 8192) {
        EXPECT_EQ(result.knn.method_used, KnnMethod::Exact);
        EXPECT_GE(recall, 0.99);
    } else {
        // scanpy used pynndescent here; ours is the IVF search.
        EXPECT_EQ(result.knn.method_used, KnnMethod::Ivf);
        EXPECT_GE(recall, 0.95);
        KnnOptions exact = options.knn;
        exact.method = KnnMethod::Exact;
        const auto exact_graph = nearest_neighbors(points, exact, ctx).graph;
        std::vector<std::int64_t> all(static_cast<std::size_t>(n));
        std::iota(all.begin(), all.end(), 0);
        const double approx_vs_exact = knn_recall(result.knn.graph, exact_graph, all);
        const double exact_vs_scanpy = test::row_recall(to_reference(distances_graph(exact_graph)), reference_distances);
        std::printf("[neighbors] %s: approx_vs_exact=%.5f (sampled estimate %.5f) exact_vs_scanpy=%.5f\n", GetParam(),
                    approx_vs_exact, result.knn.recall, exact_vs_scanpy);
        EXPECT_GE(approx_vs_exact, 0.99);
        EXPECT_NEAR(result.knn.recall, approx_vs_exact, 0.01);  // the sampled estimate
    }
}

INSTANTIATE_TEST_SUITE_P(References, ScanpyNeighbors, ::testing::ValuesIn(kReferenceNames),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace fathom
