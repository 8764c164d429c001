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

}  // namespace fathom::detail
