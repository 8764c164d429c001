#pragma once
/// Distance kernels of the approximate kNN searches, with SIMD clones chosen at run time:
/// squared euclidean distances on rows padded to a multiple of kL2Lanes floats (zeros in
/// the padding; HNSW, NN-descent, IVF refinement), dot-product tiles against packed point
/// blocks with their screen (IVF search), and double-precision distances for re-ranking.
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

/// Columns of a packed point block (dot_tile): blocks are padded to a multiple.
inline constexpr std::size_t kDotTileWidth = 16;

/// Columns of a packed block holding `count` points: count rounded up to kDotTileWidth.
constexpr std::size_t dot_tile_columns(std::size_t count) noexcept {
    return (count + kDotTileWidth - 1) / kDotTileWidth * kDotTileWidth;
}

/// Dot products of `rows` (1 to 4) query rows with a packed block of points:
/// products[r * width + j] = sum over k < dims of queries[r][k] * packed[k * width + j],
/// for j < width (a multiple of kDotTileWidth). The packed block
/// holds the points as columns (dims x width, row-major), so the inner loop runs over
/// points and every query coordinate is used for kDotTileWidth points at once (the
/// micro-kernel of a GEMM). Summed over k in order without multiply-add contraction:
/// every SIMD clone gives the same bits.
void dot_tile(const float* const* queries, std::size_t rows, const float* packed, std::size_t width, std::size_t dims,
              float* products);

/// The columns c < width (a multiple of kDotTileWidth) of a dot_tile row whose screen
/// key sq_norms[c] - 2 dots[c] is <= threshold, ascending, into out; returns the count.
/// Columns are tested kDotTileWidth at a time, branch-free.
std::size_t columns_below(const float* sq_norms, const float* dots, std::size_t width, float threshold, std::int32_t* out);

/// The smallest screen key sq_norms[c] - 2 dots[c] (as columns_below computes it) of
/// every kDotTileWidth columns of a dot_tile row: out[chunk] for chunk < width /
/// kDotTileWidth. The top-th smallest of these bounds the top-th smallest key from
/// above (they are keys of distinct columns), so columns_below at that bound keeps at
/// least `top` columns, among them the top nearest.
void chunk_minima(const float* sq_norms, const float* dots, std::size_t width, float* out);

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

/// Squared distances in double from `query` to rows[i] (i < count) of the padded rows at
/// `base`: for each pair the sum over the num_dims coordinates in order, as
/// exact_sq_distance computes it (the same bits), four pairs at a time.
void exact_sq_distances(const float* query, const float* base, std::size_t stride, int num_dims,
                        const std::int32_t* rows, int count, double* out);

}  // namespace fathom::detail
