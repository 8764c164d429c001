#pragma once
/// The count test on float32 values (raw UMI counts are non-negative whole numbers),
/// without a call to floor per value: the build targets baseline x86-64, where
/// std::floor on a float is a library call and stops the loop from vectorising.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fathom {

/// `value >= 0 && value == floor(value)`, bit for bit the same answer (+inf and -0.0
/// count, NaN does not): every float from 2^23 up is whole, and below it the conversion
/// to int32 is exact, so a whole value converts back to itself.
inline bool is_count(float value) noexcept {
    return value >= 0.0f && (value >= 8388608.0f || static_cast<float>(static_cast<std::int32_t>(value)) == value);
}

/// Whether every value is a count (is_count). Blocks of values are tested without a
/// branch per value, so the test vectorises; the first block holding a non-count ends it.
inline bool all_counts(std::span<const float> values) noexcept {
    constexpr std::size_t block = 4096;
    for (std::size_t first = 0; first < values.size(); first += block) {
        const std::size_t last = std::min(values.size(), first + block);
        unsigned counts = 1;
        for (std::size_t index = first; index < last; ++index) counts &= is_count(values[index]) ? 1u : 0u;
        if (!counts) return false;
    }
    return true;
}

}  // namespace fathom
