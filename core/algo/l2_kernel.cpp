#include "core/algo/l2_kernel.hpp"

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

}  // namespace fathom::detail
