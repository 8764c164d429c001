#pragma once
/// The arithmetic of the CUDA exact kNN (gpu/knn.cu), shared with a host loop that
/// tests/gpu checks against the CPU's certified exact search (core/algo/knn).
///
/// Per query q the device screens every point p by s = |p|^2 - 2 q.p in float (|q|^2
/// is the same for every p, so it does not change the order), from cuBLAS GEMM tiles,
/// keeping the `capacity` best (k plus a margin) in a sorted list; then re-ranks those
/// candidates by the distance computed in double from the float coordinates, as the CPU
/// does: self first at distance 0, then increasing distance, ties by increasing index.
/// C++17 and no project headers: nvcc compiles this file.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/shard_kernels.hpp"

namespace fathom::gpu::kernels {

/// Candidates kept per query: k plus a margin against float rounding in the screen.
inline int knn_capacity(int num_neighbors, std::int64_t num_cells) {
    const std::int64_t wanted = 2 * static_cast<std::int64_t>(num_neighbors) + 16;
    return static_cast<int>(wanted < num_cells ? wanted : num_cells);
}

/// Inserts (score, index) into the ascending list of `count` candidates stored at
/// scores[slot * stride], indices[slot * stride] (ties: the earlier index first, and
/// indices arrive in increasing order); the list keeps at most `capacity`. Returns the
/// new count.
FATHOM_HD inline int insert_candidate(float score, std::int32_t index, float* scores, std::int32_t* indices, int count,
                                      int capacity, std::int64_t stride) {
    if (count == capacity && !(score < scores[static_cast<std::int64_t>(count - 1) * stride])) return count;
    int slot = count < capacity ? count : capacity - 1;
    while (slot > 0 && score < scores[static_cast<std::int64_t>(slot - 1) * stride]) {
        scores[static_cast<std::int64_t>(slot) * stride] = scores[static_cast<std::int64_t>(slot - 1) * stride];
        indices[static_cast<std::int64_t>(slot) * stride] = indices[static_cast<std::int64_t>(slot - 1) * stride];
        --slot;
    }
    scores[static_cast<std::int64_t>(slot) * stride] = score;
    indices[static_cast<std::int64_t>(slot) * stride] = index;
    return count < capacity ? count + 1 : count;
}

/// Squared norm of a point in float, dimensions in order.
FATHOM_HD inline float squared_norm(const float* points, int dims, std::int64_t point) {
    float sum = 0.0f;
    for (int dim = 0; dim < dims; ++dim) sum += points[point * dims + dim] * points[point * dims + dim];
    return sum;
}

/// Euclidean distance in double between two rows of a row-major n x dims matrix.
FATHOM_HD inline double point_distance(const float* points, int dims, std::int64_t a, std::int64_t b) {
    double sum = 0.0;
    for (int dim = 0; dim < dims; ++dim) {
        const double difference = static_cast<double>(points[a * dims + dim]) - static_cast<double>(points[b * dims + dim]);
        sum += difference * difference;
    }
    return ::sqrt(sum);
}

/// Final neighbours of `query` from its `count` screened candidates (stored with
/// `stride`): out[0] = the query itself at 0, then the k - 1 nearest other candidates
/// by double distance, ties by index. scratch holds `count` doubles (same stride).
FATHOM_HD inline void rerank_candidates(const float* points, int dims, std::int64_t query, const std::int32_t* candidates,
                                        int count, std::int64_t stride, double* scratch, int num_neighbors,
                                        std::int32_t* out_indices, float* out_distances) {
    for (int slot = 0; slot < count; ++slot) {
        const std::int32_t candidate = candidates[static_cast<std::int64_t>(slot) * stride];
        // The query is placed first whatever its screened rank; mark it taken.
        scratch[static_cast<std::int64_t>(slot) * stride] =
            candidate == query ? -1.0 : point_distance(points, dims, query, candidate);
    }
    out_indices[0] = static_cast<std::int32_t>(query);
    out_distances[0] = 0.0f;
    for (int rank = 1; rank < num_neighbors; ++rank) {
        int best = -1;
        for (int slot = 0; slot < count; ++slot) {
            const double distance = scratch[static_cast<std::int64_t>(slot) * stride];
            if (distance < 0.0) continue;
            if (best < 0) {
                best = slot;
                continue;
            }
            const double best_distance = scratch[static_cast<std::int64_t>(best) * stride];
            const std::int32_t index = candidates[static_cast<std::int64_t>(slot) * stride];
            const std::int32_t best_index = candidates[static_cast<std::int64_t>(best) * stride];
            if (distance < best_distance || (distance == best_distance && index < best_index)) best = slot;
        }
        if (best < 0) {  // fewer candidates than neighbours (cannot happen with knn_capacity)
            out_indices[rank] = static_cast<std::int32_t>(query);
            out_distances[rank] = 0.0f;
            continue;
        }
        out_indices[rank] = candidates[static_cast<std::int64_t>(best) * stride];
        out_distances[rank] = static_cast<float>(scratch[static_cast<std::int64_t>(best) * stride]);
        scratch[static_cast<std::int64_t>(best) * stride] = -1.0;
    }
}

/// Host loop of the whole search for queries [query_begin, query_end): the screen with
/// float dot products (dimensions in order) over points in order, then the re-rank.
/// points: row-major num_cells x dims. Outputs (query_end - query_begin) x k.
inline void exact_knn_host(const float* points, std::int64_t num_cells, int dims, int num_neighbors,
                           std::int64_t query_begin, std::int64_t query_end, std::int32_t* out_indices,
                           float* out_distances) {
    const int capacity = knn_capacity(num_neighbors, num_cells);
    std::vector<float> norms(static_cast<std::size_t>(num_cells));
    for (std::int64_t point = 0; point < num_cells; ++point) norms[static_cast<std::size_t>(point)] = squared_norm(points, dims, point);
    std::vector<float> scores(static_cast<std::size_t>(capacity));
    std::vector<std::int32_t> candidates(static_cast<std::size_t>(capacity));
    std::vector<double> scratch(static_cast<std::size_t>(capacity));
    for (std::int64_t query = query_begin; query < query_end; ++query) {
        int count = 0;
        for (std::int64_t point = 0; point < num_cells; ++point) {
            float dot = 0.0f;
            for (int dim = 0; dim < dims; ++dim) dot += points[query * dims + dim] * points[point * dims + dim];
            count = insert_candidate(norms[static_cast<std::size_t>(point)] - 2.0f * dot, static_cast<std::int32_t>(point),
                                     scores.data(), candidates.data(), count, capacity, 1);
        }
        const std::int64_t row = (query - query_begin) * num_neighbors;
        rerank_candidates(points, dims, query, candidates.data(), count, 1, scratch.data(), num_neighbors,
                          out_indices + row, out_distances + row);
    }
}

}  // namespace fathom::gpu::kernels
