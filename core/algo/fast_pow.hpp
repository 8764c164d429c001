#pragma once
/// Single-precision natural logarithm, exponential and power for UMAP's gradient
/// coefficients: Cephes' `logf` and `expf` polynomials (the ones SIMD math libraries such
/// as sse_mathfun vectorise), inline and free of branches and library calls, so that a
/// loop over a few distances compiles to vector code. fast_log and fast_exp are
/// accurate to about one float ulp; fast_pow(x, y) = exp(y ln x) rounds y ln x to a
/// float first, so its relative error is about 1e-7 (1 + |y ln x|): under 3e-6 for
/// results in [1e-6, 1e6], under 1e-5 across the float range (powf: under 1e-7).
#include <algorithm>
#include <bit>
#include <cstdint>

namespace fathom::detail {

/// ln x for x > 0. Inputs below the smallest normal float (zero and subnormals) are
/// treated as that smallest normal (about -87.3); NaN and infinity are not handled.
/// Integer arithmetic on the bits (not float comparisons, which GCC treats as possibly
/// trapping and will not turn into vector selects).
inline float fast_log(float x) noexcept {
    const std::int32_t bits = std::max(std::bit_cast<std::int32_t>(x), std::int32_t{0x00800000});
    // x = m 2^e with m in [0.5, 1); Cephes folds m into [sqrt(0.5), sqrt(2)) - 1.
    const std::int32_t mantissa = (bits & 0x007fffff) | 0x3f000000;
    // 1 when m < sqrt(0.5) (0x3f3504f3): the sign of the difference of the bit patterns.
    const auto low = static_cast<std::int32_t>(static_cast<std::uint32_t>(mantissa - 0x3f3504f3) >> 31);
    const auto exponent = static_cast<float>((bits >> 23) - 126 - low);
    const float m = std::bit_cast<float>(mantissa + (low << 23)) - 1.0f;
    const float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y += -2.12194440e-4f * exponent;
    y += -0.5f * z;
    return m + y + 0.693359375f * exponent;
}

/// e^x for |x| < 2^21 (a wider x would break the rounding below). Results saturate at
/// 2^-126 times the polynomial (about 1e-38) below and at 2^127 times it above.
inline float fast_exp(float x) noexcept {
    // n = round(x / ln 2) by the 1.5 2^23 shift: the low bits of the sum are n.
    const float shifted = x * 1.44269504088896341f + 12582912.0f;
    const std::int32_t whole = std::bit_cast<std::int32_t>(shifted) - 0x4b400000;
    const float n = shifted - 12582912.0f;
    x -= n * 0.693359375f;
    x -= n * -2.12194440e-4f;
    const float z = x * x;
    float y = 1.9875691500e-4f;
    y = y * x + 1.3981999507e-3f;
    y = y * x + 8.3334519073e-3f;
    y = y * x + 4.1665795894e-2f;
    y = y * x + 1.6666665459e-1f;
    y = y * x + 5.0000001201e-1f;
    y = y * z + x + 1.0f;
    const std::int32_t scale = std::clamp(whole, std::int32_t{-126}, std::int32_t{127}) + 127;
    return y * std::bit_cast<float>(static_cast<std::uint32_t>(scale) << 23);
}

/// x^y for x > 0 (x = 0 is treated as the smallest normal float), as exp(y ln x).
inline float fast_pow(float x, float y) noexcept { return fast_exp(y * fast_log(x)); }

}  // namespace fathom::detail
