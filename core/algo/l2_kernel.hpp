#pragma once
/// Squared euclidean distance for the HNSW index on rows padded to a multiple of
/// kL2Lanes floats (zeros in the padding), with SIMD clones chosen at run time.
#include <cstddef>
#include <cstdint>

namespace fathom::detail {

/// Lanes of the distance kernel; rows handed to l2_padded are padded to a multiple.
inline constexpr std::size_t kL2Lanes = 8;

/// Row length padded to a multiple of kL2Lanes.
constexpr std::size_t l2_padded_size(std::size_t dims) noexcept { return (dims + kL2Lanes - 1) / kL2Lanes * kL2Lanes; }

/// hnswlib's distance signature: `a` and `b` are float rows, `param` points at their
/// padded length (a std::size_t, a multiple of kL2Lanes). The sum runs in kL2Lanes
/// fixed lanes without multiply-add contraction, so every clone gives the same bits.
float l2_padded(const void* a, const void* b, const void* param);

/// Squared distances from the padded row `query` to the padded rows
/// `base + rows[i] * stride` (i < count), into out[i]. Each value is bit-identical to
/// l2_padded(query, row, &stride) and to the distance with the two rows swapped; rows are
/// processed four at a time so that the loads and sums of independent pairs overlap.
void l2_padded_many(const float* query, const float* base, std::size_t stride, const std::int32_t* rows,
                    std::size_t count, float* out);

/// Squared euclidean distance in double from float coordinates, summed over the
/// num_dims coordinates in order: the reference value every neighbour list is sorted
/// by (sklearn's euclidean_distances upcasts float32 to float64 the same way).
inline double exact_sq_distance(const float* a, const float* b, int num_dims) noexcept {
    double sum = 0.0;
    for (int dim = 0; dim < num_dims; ++dim) {
        const double diff = static_cast<double>(a[dim]) - static_cast<double>(b[dim]);
        sum += diff * diff;
    }
    return sum;
}

}  // namespace fathom::detail
