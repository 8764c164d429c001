#include "core/algo/l2_kernel.hpp"

#include <algorithm>
#include <cstring>

namespace fathom::detail {

__attribute__((target_clones("avx512f", "avx2", "default"))) float l2_padded(const void* a, const void* b,
                                                                           const void* param) {
    const auto* x = static_cast<const float*>(a);
    const auto* y = static_cast<const float*>(b);
    const std::size_t size = *static_cast<const std::size_t*>(param);
    float lanes[kL2Lanes] = {};
    for (std::size_t index = 0; index < size; index += kL2Lanes) {
        for (std::size_t lane = 0; lane < kL2Lanes; ++lane) {
            const float difference = x[index + lane] - y[index + lane];
            lanes[lane] += difference * difference;
        }
    }
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void l2_padded_many(const float* query, const float* base,
                                                                                std::size_t stride,
                                                                                const std::int32_t* rows,
                                                                                std::size_t count, float* out) {
    // The same lanes and the same final sum as l2_padded, four rows at a time.
    const auto finish = [](const float* lanes) {
        return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    };
    std::size_t item = 0;
    for (; item + 4 <= count; item += 4) {
        const float* row0 = base + static_cast<std::size_t>(rows[item]) * stride;
        const float* row1 = base + static_cast<std::size_t>(rows[item + 1]) * stride;
        const float* row2 = base + static_cast<std::size_t>(rows[item + 2]) * stride;
        const float* row3 = base + static_cast<std::size_t>(rows[item + 3]) * stride;
        float lanes0[kL2Lanes] = {}, lanes1[kL2Lanes] = {}, lanes2[kL2Lanes] = {}, lanes3[kL2Lanes] = {};
        for (std::size_t index = 0; index < stride; index += kL2Lanes) {
            for (std::size_t lane = 0; lane < kL2Lanes; ++lane) {
                const float value = query[index + lane];
                const float difference0 = value - row0[index + lane];
                const float difference1 = value - row1[index + lane];
                const float difference2 = value - row2[index + lane];
                const float difference3 = value - row3[index + lane];
                lanes0[lane] += difference0 * difference0;
                lanes1[lane] += difference1 * difference1;
                lanes2[lane] += difference2 * difference2;
                lanes3[lane] += difference3 * difference3;
            }
        }
        out[item] = finish(lanes0);
        out[item + 1] = finish(lanes1);
        out[item + 2] = finish(lanes2);
        out[item + 3] = finish(lanes3);
    }
    for (; item < count; ++item) {
        const float* row = base + static_cast<std::size_t>(rows[item]) * stride;
        float lanes[kL2Lanes] = {};
        for (std::size_t index = 0; index < stride; index += kL2Lanes) {
            for (std::size_t lane = 0; lane < kL2Lanes; ++lane) {
                const float difference = query[index + lane] - row[index + lane];
                lanes[lane] += difference * difference;
            }
        }
        out[item] = finish(lanes);
    }
}

namespace {

/// dot_tile's micro-kernel on the columns [column, column + Lanes): four query rows x
/// Lanes accumulators, held in registers (32 lanes: eight independent sums per
/// coordinate, enough to hide the add latency).
template <std::size_t Lanes>
__attribute__((always_inline)) inline void dot_columns(const float* const (&query)[4], std::size_t rows,
                                                       const float* packed, std::size_t width, std::size_t dims,
                                                       std::size_t column, float* products) {
    float sum0[Lanes] = {}, sum1[Lanes] = {}, sum2[Lanes] = {}, sum3[Lanes] = {};
    const float* block = packed + column;
    for (std::size_t dim = 0; dim < dims; ++dim) {
        const float* values = block + dim * width;
        const float value0 = query[0][dim], value1 = query[1][dim], value2 = query[2][dim], value3 = query[3][dim];
        for (std::size_t lane = 0; lane < Lanes; ++lane) {
            sum0[lane] += value0 * values[lane];
            sum1[lane] += value1 * values[lane];
            sum2[lane] += value2 * values[lane];
            sum3[lane] += value3 * values[lane];
        }
    }
    float* const outs[4] = {products, products + width, products + 2 * width, products + 3 * width};
    const float* const sums[4] = {sum0, sum1, sum2, sum3};
    for (std::size_t row = 0; row < rows && row < 4; ++row)
        for (std::size_t lane = 0; lane < Lanes; ++lane) outs[row][column + lane] = sums[row][lane];
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void dot_tile(const float* const* queries, std::size_t rows,
                                                                          const float* packed, std::size_t width,
                                                                          std::size_t dims, float* products) {
    // Missing rows repeat the first (computed, not stored).
    const float* const query[4] = {queries[0], rows > 1 ? queries[1] : queries[0], rows > 2 ? queries[2] : queries[0],
                                   rows > 3 ? queries[3] : queries[0]};
    std::size_t column = 0;
    for (; column + 2 * kDotTileWidth <= width; column += 2 * kDotTileWidth)
        dot_columns<2 * kDotTileWidth>(query, rows, packed, width, dims, column, products);
    if (column < width) dot_columns<kDotTileWidth>(query, rows, packed, width, dims, column, products);
}

namespace {

// GCC vector extensions: one kDotTileWidth chunk, lowered to each clone's registers.
using Floats16 = float __attribute__((vector_size(64)));
using Floats8 = float __attribute__((vector_size(32)));
using Floats4 = float __attribute__((vector_size(16)));

__attribute__((always_inline)) inline float smallest(Floats16 values) {
    const Floats8 low8 = __builtin_shufflevector(values, values, 0, 1, 2, 3, 4, 5, 6, 7);
    const Floats8 high8 = __builtin_shufflevector(values, values, 8, 9, 10, 11, 12, 13, 14, 15);
    const Floats8 min8 = low8 < high8 ? low8 : high8;
    const Floats4 low4 = __builtin_shufflevector(min8, min8, 0, 1, 2, 3);
    const Floats4 high4 = __builtin_shufflevector(min8, min8, 4, 5, 6, 7);
    const Floats4 min4 = low4 < high4 ? low4 : high4;
    return std::min(std::min(min4[0], min4[1]), std::min(min4[2], min4[3]));
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) std::size_t columns_below(const float* sq_norms, const float* dots,
                                                                                     std::size_t width, float threshold,
                                                                                     std::int32_t* out) {
    static_assert(kDotTileWidth == 16, "one Floats16 per chunk");
    std::size_t count = 0;
    for (std::size_t chunk = 0; chunk < width; chunk += kDotTileWidth) {
        Floats16 norms, products;
        std::memcpy(&norms, sq_norms + chunk, sizeof norms);
        std::memcpy(&products, dots + chunk, sizeof products);
        const Floats16 keys = norms - 2.0f * products;
        if (!(smallest(keys) <= threshold)) continue;
        for (std::size_t lane = 0; lane < kDotTileWidth; ++lane)
            if (keys[lane] <= threshold) out[count++] = static_cast<std::int32_t>(chunk + lane);
    }
    return count;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void chunk_minima(const float* sq_norms, const float* dots,
                                                                              std::size_t width, float* out) {
    for (std::size_t chunk = 0; chunk < width; chunk += kDotTileWidth) {
        Floats16 norms, products;
        std::memcpy(&norms, sq_norms + chunk, sizeof norms);
        std::memcpy(&products, dots + chunk, sizeof products);
        out[chunk / kDotTileWidth] = smallest(norms - 2.0f * products);
    }
}

/// Squared distances in double from `query` to rows[i] (i < count) of the padded rows at
/// `base`: for each pair the sum over the num_dims coordinates in order, as knn.cpp's
/// exact_sq_distance (l2_kernel.hpp) computes it (the same bits), four pairs at a time.
void exact_sq_distances(const float* query, const float* base, std::size_t stride, int num_dims,
                        const std::int32_t* rows, int count, double* out) {
    int item = 0;
    for (; item + 4 <= count; item += 4) {
        const float* row0 = base + static_cast<std::size_t>(rows[item]) * stride;
        const float* row1 = base + static_cast<std::size_t>(rows[item + 1]) * stride;
        const float* row2 = base + static_cast<std::size_t>(rows[item + 2]) * stride;
        const float* row3 = base + static_cast<std::size_t>(rows[item + 3]) * stride;
        double sum0 = 0.0, sum1 = 0.0, sum2 = 0.0, sum3 = 0.0;
        for (int dim = 0; dim < num_dims; ++dim) {
            const double value = query[dim];
            const double difference0 = value - static_cast<double>(row0[dim]);
            const double difference1 = value - static_cast<double>(row1[dim]);
            const double difference2 = value - static_cast<double>(row2[dim]);
            const double difference3 = value - static_cast<double>(row3[dim]);
            sum0 += difference0 * difference0;
            sum1 += difference1 * difference1;
            sum2 += difference2 * difference2;
            sum3 += difference3 * difference3;
        }
        out[item] = sum0;
        out[item + 1] = sum1;
        out[item + 2] = sum2;
        out[item + 3] = sum3;
    }
    for (; item < count; ++item)
        out[item] = exact_sq_distance(query, base + static_cast<std::size_t>(rows[item]) * stride, num_dims);
}

}  // namespace fathom::detail
