#pragma once
/// log1p of float32 values in the arithmetic of NumPy 1.24's np.log1p on a float32 array
/// (what scanpy's pp.log1p runs on X.data) on CPUs with AVX512_SKX, where NumPy calls
/// Intel SVML's `__svml_log1pf16` (numpy/SVML, linux/avx512/svml_z0_log1p_s_la.s;
/// Copyright (C) 2021 Intel Corporation, BSD-3-Clause: the constants and the table
/// below are that routine's). Written here in plain IEEE float32 operations: additions,
/// multiplications and fused multiply-adds rounded to nearest, integer operations on the
/// bits, so that every CPU and GPU gives the same bits as that routine: equal to NumPy's
/// result on every 257th float32 in [0, 64] and (-1, 0] and on the special values
/// (tests/algo/log1p_numpy_test.cpp), and to the routine itself (assembled) on all 2^32
/// inputs when this was written. The routine is within 2 ulp of log1p (the C library's
/// log1pf, NumPy's float32 log1p on other CPUs, within 1: they differ on ~4% of values).
///
/// The routine: 1 + x = s + tail exactly (s rounded); s = 2^k m with m in [2/3, 4/3) from
/// s's bits; r = (m - 1) + tail 2^-k; log1p(x) = k ln2 + r + r^2 p(r) with a degree-7
/// polynomial p. Arguments whose s is not a positive normal below 2^127 (x <= -1,
/// x >= 2^127, NaN, infinity) go to its scalar routine: NaN (x86's default, 0xffc00000)
/// for x < -1 and -inf, -inf at -1, +inf at +inf, NaN in -> NaN out (a CUDA device gives
/// its canonical NaN there), and for x >= 2^127 a 65-entry table of reciprocals and their
/// logarithms.
///
/// Host code calls log1p_float / log1p_float_in_place (core/backend/log1p_float.cpp,
/// compiled without multiply-add contraction, with AVX2 and AVX-512 clones). The inline
/// functions in `log1p_svml` are their body, and the CUDA kernels' (nvcc --fmad=false):
/// a compiler must not contract their multiplications and additions into fused ones.
///
/// C++17 and no project headers: nvcc compiles this file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FATHOM_LOG1P_HD __host__ __device__
#else
#define FATHOM_LOG1P_HD
#endif

namespace fathom {

/// log1p(value) in float32 as NumPy 1.24 computes it on an AVX512_SKX CPU (see above).
float log1p_float(float value) noexcept;

/// values[i] = log1p_float(values[i]) for i < count.
void log1p_float_in_place(float* values, std::size_t count) noexcept;

namespace log1p_svml {

FATHOM_LOG1P_HD inline std::uint32_t bits_of(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

FATHOM_LOG1P_HD inline float float_of(std::uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

/// a * b + c rounded once (vfmadd...ps {rn-sae}).
FATHOM_LOG1P_HD inline float fused(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

/// Whether the vector routine hands `x` to the scalar one: s = 1 + x is not in
/// [2^-126, 2^127) (for float32 x: x <= -1, x >= 2^127, or NaN).
FATHOM_LOG1P_HD inline bool is_special(float x) { return !(x > -1.0f && x < 0x1p127f); }

/// The vector routine for one lane whose x is not special.
FATHOM_LOG1P_HD inline float main_path(float x) {
    const float one = 1.0f;
    const float hi = one > x ? one : x;  // vmaxps / vminps: 1 + x as hi + lo, |hi| >= |lo|
    const float lo = one < x ? one : x;
    const float sum = hi + lo;
    const float tail = (hi - sum) + lo;  // the rounding error of sum
    // sum = 2^k m with m in [2/3, 4/3): subtract the bits of 2/3 and split.
    const std::uint32_t reduced = bits_of(sum) - 0x3f2aaaabu;
    const std::int32_t k = static_cast<std::int32_t>(reduced) >> 23;
    const float m = float_of((reduced & 0x007fffffu) + 0x3f2aaaabu);
    const float two_to_minus_k = float_of(0x3f800000u - (static_cast<std::uint32_t>(k) << 23));
    const float r = (m - one) + tail * two_to_minus_k;
    float p = fused(r, float_of(0x3e0d84edu), float_of(0xbe1ad9e3u));
    p = fused(r, p, float_of(0x3e0fcb12u));
    p = fused(r, p, float_of(0xbe28ad37u));
    p = fused(r, p, float_of(0x3e4ce190u));
    p = fused(r, p, float_of(0xbe80058eu));
    p = fused(r, p, float_of(0x3eaaaa94u));
    p = fused(r, p, -0.5f);
    const float poly = fused(r, r * p, r);
    const float result = fused(float_of(0x3f317218u), static_cast<float>(k), poly);
    return float_of(bits_of(result) | (bits_of(x) & 0x80000000u));  // log1p(-0) = -0
}

/// The scalar routine, for a special x (is_special(x)).
FATHOM_LOG1P_HD inline float special_path(float x) {
    const float sum = x + 1.0f;
    const std::uint32_t bits = bits_of(sum);
    const std::uint32_t default_nan = 0xffc00000u;  // x86's 0/0
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        if (bits == 0xff800000u) return float_of(default_nan);  // -inf
        return sum * sum;                                         // +inf, NaN (quietened)
    }
    if (sum == 0.0f) return float_of(0xff800000u);  // -1 -> -inf
    if (sum < 0.0f) return float_of(default_nan);
    // sum >= 2^127: log(2^k) + log(m), m in [1, 2), through a table entry i near m:
    // log(m) = -log(inv[i]) + log(m inv[i]), log(1/inv[i]) = log_hi[i] + log_lo[i].
    static constexpr std::uint32_t table[65][3] = {
        {0x3f800000u, 0x00000000u, 0x00000000u}, {0x3f7c0000u, 0x3c810000u, 0x35acb127u},
        {0x3f780000u, 0x3d020000u, 0x372ec4f4u}, {0x3f740000u, 0x3d44c000u, 0xb7d57ad8u},
        {0x3f700000u, 0x3d843000u, 0xb6ce94c4u}, {0x3f6e0000u, 0x3d955000u, 0x349488e3u},
        {0x3f6a0000u, 0x3db80000u, 0x37530aebu}, {0x3f660000u, 0x3ddb5000u, 0x37488dadu},
        {0x3f640000u, 0x3ded4000u, 0xb7589c7cu}, {0x3f600000u, 0x3e08bc00u, 0x35e8227eu},
        {0x3f5e0000u, 0x3e11ec00u, 0xb5ed5b64u}, {0x3f5a0000u, 0x3e248800u, 0x36f60ccfu},
        {0x3f580000u, 0x3e2dfc00u, 0xb6fe52afu}, {0x3f540000u, 0x3e412000u, 0xb6fa6ab9u},
        {0x3f520000u, 0x3e4ad400u, 0xb6948c24u}, {0x3f500000u, 0x3e54a000u, 0xb6161ba9u},
        {0x3f4c0000u, 0x3e688000u, 0x36dfc995u}, {0x3f4a0000u, 0x3e729800u, 0x35effe71u},
        {0x3f480000u, 0x3e7cc800u, 0x3663659eu}, {0x3f460000u, 0x3e838a00u, 0xb5f3f655u},
        {0x3f440000u, 0x3e88bc00u, 0x3668227eu}, {0x3f400000u, 0x3e934b00u, 0x35044d37u},
        {0x3f3e0000u, 0x3e98a800u, 0xb661e2cau}, {0x3f3c0000u, 0x3e9e1300u, 0xb6588ccdu},
        {0x3f3a0000u, 0x3ea38c00u, 0x365c271cu}, {0x3f380000u, 0x3ea91500u, 0x3660738au},
        {0x3f360000u, 0x3eaeae00u, 0xb50829a8u}, {0x3f340000u, 0x3eb45600u, 0x3603e9c7u},
        {0x3f320000u, 0x3eba0f00u, 0xb5f12731u}, {0x3f300000u, 0x3ebfd800u, 0xb5b884fdu},
        {0x3f2e0000u, 0x3ec5b200u, 0xb5caee9au}, {0x3f2c0000u, 0x3ecb9d00u, 0x3550c4d6u},
        {0x3f2a0000u, 0x3ed19a00u, 0x3580449fu}, {0x3f280000u, 0x3ed7a900u, 0x3615248du},
        {0x3f280000u, 0x3ed7a900u, 0x3615248du}, {0x3f260000u, 0x3eddcb00u, 0x348dc071u},
        {0x3f240000u, 0x3ee40000u, 0xb5c71755u}, {0x3f220000u, 0x3eea4800u, 0x3511b7bfu},
        {0x3f200000u, 0x3ef0a400u, 0x3621a272u}, {0x3f200000u, 0x3ef0a400u, 0x3621a272u},
        {0x3f1e0000u, 0x3ef71500u, 0x34ab5a0au}, {0x3f1c0000u, 0x3efd9b00u, 0xb5ea10b7u},
        {0x3f1a0000u, 0x3f021b00u, 0x34be7604u}, {0x3f1a0000u, 0x3f021b00u, 0x34be7604u},
        {0x3f180000u, 0x3f0573c0u, 0xb50e97d6u}, {0x3f160000u, 0x3f08d7c0u, 0x338f1d6bu},
        {0x3f140000u, 0x3f0c4780u, 0xb55f86e2u}, {0x3f140000u, 0x3f0c4780u, 0xb55f86e2u},
        {0x3f120000u, 0x3f0fc300u, 0x35d7f186u}, {0x3f100000u, 0x3f134b00u, 0x35844d37u},
        {0x3f100000u, 0x3f134b00u, 0x35844d37u}, {0x3f0e0000u, 0x3f16dfc0u, 0xb5aa13c8u},
        {0x3f0e0000u, 0x3f16dfc0u, 0xb5aa13c8u}, {0x3f0c0000u, 0x3f1a8140u, 0x34ad9d8du},
        {0x3f0a0000u, 0x3f1e3040u, 0x32c36bfbu}, {0x3f0a0000u, 0x3f1e3040u, 0x32c36bfbu},
        {0x3f080000u, 0x3f21ed00u, 0xb2d06dc4u}, {0x3f080000u, 0x3f21ed00u, 0xb2d06dc4u},
        {0x3f060000u, 0x3f25b800u, 0xb5a41a3du}, {0x3f060000u, 0x3f25b800u, 0xb5a41a3du},
        {0x3f040000u, 0x3f299180u, 0xb56cbcc4u}, {0x3f040000u, 0x3f299180u, 0xb56cbcc4u},
        {0x3f020000u, 0x3f2d7a00u, 0x34386c94u}, {0x3f020000u, 0x3f2d7a00u, 0x34386c94u},
        {0x3f000000u, 0x3f317200u, 0x35bfbe8eu},
    };
    const float k = static_cast<float>(static_cast<std::int32_t>((bits >> 23) & 0xffu) - 127);
    const float k_hi = float_of(0x3f317200u) * k;  // ln2 in two parts
    const float k_lo = k * float_of(0x35bfbe8eu);
    const float m = float_of((bits & 0x807fffffu) | 0x3f800000u);
    const std::uint32_t index = bits_of(m + float_of(0x48000040u)) & 127u;  // round(64 (m - 1))
    const float inv = float_of(table[index][0]), log_hi = float_of(table[index][1]),
                log_lo = float_of(table[index][2]);
    const float high = k_hi + log_hi;
    const float high_error = log_hi - (high - k_hi);
    const float low = high_error + (k_lo + log_lo);
    const float m_hi = (8192.0f + m) - 8192.0f;  // m to 10 bits
    const float m_lo = m - m_hi;
    const float r_hi = m_hi * inv - 1.0f;  // exact
    const float r_lo = inv * m_lo;
    const float r = r_hi + r_lo;
    const float low_sum = r_lo + low;
    const float head_part = r_hi + high;
    const float head = head_part + low_sum;
    const float head_error = low_sum - (head - head_part);
    const float low_error = r_lo - (low_sum - low);
    float p = float_of(0xbe0005a0u) * r + float_of(0x3e124e01u);
    p = p * r + float_of(0xbe2aaaabu);
    p = p * r + float_of(0x3e4ccccdu);
    p = p * r + float_of(0xbe800000u);
    p = p * r + float_of(0x3eaaaaabu);
    p = p * r + -0.5f;
    p = p * r * r;
    return (head_error + (low_error + p)) + head;
}

/// The whole routine for one value.
FATHOM_LOG1P_HD inline float log1p(float x) { return is_special(x) ? special_path(x) : main_path(x); }

}  // namespace log1p_svml
}  // namespace fathom
