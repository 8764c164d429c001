#pragma once
/// The arithmetic of UMAP's deterministic SGD (core/algo/umap.cpp,
/// UmapParallelism::Deterministic) as __host__ __device__ functions over raw arrays:
/// the CUDA kernel (gpu/umap.cu) updates one vertex per thread with process_vertex, and
/// the host loop at the end runs the same epochs on the CPU, so that tests/gpu can
/// check it reproduces the CPU's deterministic UMAP bit for bit. The generator, the
/// gradient coefficients and the per-vertex update follow umap.cpp line by line.
/// C++17 and no project headers: nvcc compiles this file.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/shard_kernels.hpp"

namespace fathom::gpu::kernels {

/// splitmix64 (umap.cpp's mix64).
FATHOM_HD inline std::uint64_t mix64(std::uint64_t value) {
    value += 0x9e3779b97f4a7c15ULL;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
}

/// The key of the generator of (seed, epoch, vertex) (umap.cpp's stream_key).
FATHOM_HD inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t item) {
    return mix64(mix64(seed ^ 0x6a09e667f3bcc909ULL) ^ mix64(epoch * 0x100000001b3ULL + 0x3c6ef372fe94f82bULL) ^ item);
}

/// xorshift64* negative sampler (umap.cpp's SampleRng).
struct SampleRng {
    std::uint64_t state;
    FATHOM_HD explicit SampleRng(std::uint64_t seed) : state(mix64(seed) | 1ULL) {}
    FATHOM_HD std::int64_t below(std::int64_t bound) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        const std::uint64_t bits = (state * 0x2545F4914F6CDD1DULL) >> 32;
        return static_cast<std::int64_t>((bits * static_cast<std::uint64_t>(bound)) >> 32);
    }
};

FATHOM_HD inline float clip4(float value) { return value > 4.0f ? 4.0f : (value < -4.0f ? -4.0f : value); }

/// -2ab d^(2(b-1)) / (1 + a d^(2b)), 0 at d = 0 (powf: the CPU's std::pow on floats).
FATHOM_HD inline float attraction(float dist_squared, float a, float b) {
    if (!(dist_squared > 0.0f)) return 0.0f;
    const float power = ::powf(dist_squared, b);
    return -2.0f * a * b * (power / dist_squared) / (a * power + 1.0f);
}

/// 2 gamma b / ((0.001 + d^2)(1 + a d^(2b))).
FATHOM_HD inline float repulsion(float dist_squared, float a, float b, float gamma) {
    const float power = ::powf(dist_squared, b);
    return 2.0f * gamma * b / ((0.001f + dist_squared) * (a * power + 1.0f));
}

/// The SGD's arrays: the graph and schedule (read-only) and the per-edge state.
struct SgdArrays {
    std::int64_t num_vertices = 0;
    int dim = 2;
    const std::int64_t* offsets = nullptr;
    const std::int32_t* tail = nullptr;
    const double* epochs_per_sample = nullptr;
    const double* epochs_per_negative_sample = nullptr;
    double* next_sample = nullptr;    ///< per edge, starts at epochs_per_sample
    double* next_negative = nullptr;  ///< per edge, starts at epochs_per_negative_sample
    float a = 0.0f, b = 0.0f, gamma = 1.0f;
};

/// Deterministic update of vertex j (umap.cpp's process_vertex): reads its block from
/// block_start and other vertices from live, writes only j's position and j's edges.
FATHOM_HD inline void process_vertex(const SgdArrays& sgd, float* live, const float* block_start, std::int64_t block_begin,
                                     std::int64_t block_end, std::int64_t j, int epoch, float alpha, std::uint64_t seed) {
    const int dim = sgd.dim;
    float cur[8];
    for (int d = 0; d < dim; ++d) cur[d] = block_start[j * dim + d];
    SampleRng rng(stream_key(seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(j)));
    for (std::int64_t edge = sgd.offsets[j]; edge < sgd.offsets[j + 1]; ++edge) {
        if (sgd.next_sample[edge] > epoch) continue;
        const std::int64_t k_tail = sgd.tail[edge];
        const float* other = (k_tail >= block_begin && k_tail < block_end ? block_start : live) + k_tail * dim;
        float dist_squared = 0.0f;
        for (int d = 0; d < dim; ++d) {
            const float diff = cur[d] - other[d];
            dist_squared += diff * diff;
        }
        const float coefficient = attraction(dist_squared, sgd.a, sgd.b);
        for (int d = 0; d < dim; ++d) cur[d] += 2.0f * clip4(coefficient * (cur[d] - other[d])) * alpha;
        sgd.next_sample[edge] += sgd.epochs_per_sample[edge];
        const int negatives = static_cast<int>((epoch - sgd.next_negative[edge]) / sgd.epochs_per_negative_sample[edge]);
        sgd.next_negative[edge] += negatives * sgd.epochs_per_negative_sample[edge];
        for (int sample = 0; sample < negatives; ++sample) {
            const std::int64_t k = rng.below(sgd.num_vertices);
            if (k == j) continue;
            const float* negative = (k >= block_begin && k < block_end ? block_start : live) + k * dim;
            dist_squared = 0.0f;
            for (int d = 0; d < dim; ++d) {
                const float diff = cur[d] - negative[d];
                dist_squared += diff * diff;
            }
            const float repel = dist_squared > 0.0f ? repulsion(dist_squared, sgd.a, sgd.b, sgd.gamma) : 0.0f;
            for (int d = 0; d < dim; ++d) cur[d] += (repel > 0.0f ? clip4(repel * (cur[d] - negative[d])) : 4.0f) * alpha;
        }
    }
    for (int d = 0; d < dim; ++d) live[j * dim + d] = cur[d];
}

/// The step size of an epoch (alpha, as a float) given the previous epoch's schedule.
inline float epoch_alpha(double learning_rate, int epoch, int num_epochs) {
    const double alpha = epoch == 0 ? learning_rate
                                    : learning_rate * (1.0 - static_cast<double>(epoch - 1) / static_cast<double>(num_epochs));
    return static_cast<float>(alpha);
}

/// Host loop of all epochs [0, num_epochs): blocks in order, vertices in a block in
/// order (the order does not matter: each writes only itself). next_sample and
/// next_negative must start at the schedules.
inline void deterministic_sgd_host(const SgdArrays& sgd, float* embedding, int num_epochs, double learning_rate,
                                   std::uint64_t seed, std::int64_t block_size) {
    std::vector<float> before(static_cast<std::size_t>(sgd.num_vertices * sgd.dim));
    for (int epoch = 0; epoch < num_epochs; ++epoch) {
        const float alpha = epoch_alpha(learning_rate, epoch, num_epochs);
        for (std::int64_t block_begin = 0; block_begin < sgd.num_vertices; block_begin += block_size) {
            const std::int64_t block_end = std::min(sgd.num_vertices, block_begin + block_size);
            std::copy(embedding + block_begin * sgd.dim, embedding + block_end * sgd.dim, before.data() + block_begin * sgd.dim);
            for (std::int64_t vertex = block_begin; vertex < block_end; ++vertex)
                process_vertex(sgd, embedding, before.data(), block_begin, block_end, vertex, epoch, alpha, seed);
        }
    }
}

}  // namespace fathom::gpu::kernels
