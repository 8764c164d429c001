// Compiled with -ffp-contract=off (core/CMakeLists.txt): the clones below give the same
// bits as the plain code on every CPU (fmaf is an exact IEEE operation everywhere; the
// default clone calls the C library's for it).
#include "core/backend/log1p_float.hpp"

#include <algorithm>
#include <cmath>

namespace fathom {

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) float log1p_float(float value) noexcept {
    return log1p_svml::log1p(value);
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void log1p_float_in_place(
    float* values, std::size_t count) noexcept {
    // Blocks of 64: the common block (no special value) runs the branch-free vector
    // routine, which the compiler vectorises; a block with a special value runs the scalar
    // routine per value.
    constexpr std::size_t kBlock = 64;
    for (std::size_t begin = 0; begin < count; begin += kBlock) {
        float* block = values + begin;
        const std::size_t size = std::min(kBlock, count - begin);
        unsigned special = 0;
        for (std::size_t entry = 0; entry < size; ++entry) special |= log1p_svml::is_special(block[entry]) ? 1u : 0u;
        if (special != 0) {
            for (std::size_t entry = 0; entry < size; ++entry) block[entry] = log1p_svml::log1p(block[entry]);
        } else {
            for (std::size_t entry = 0; entry < size; ++entry) block[entry] = log1p_svml::main_path(block[entry]);
        }
    }
}

}  // namespace fathom
