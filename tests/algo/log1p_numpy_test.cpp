// log1p of float32 values against NumPy's np.log1p on float32 arrays (what scanpy's
// sc.pp.log1p runs on X.data). NumPy 1.24 picks its float32 log1p by CPU: on CPUs with
// AVX512_SKX an Intel SVML vector routine (__svml_log1pf16), elsewhere the C library's
// log1pf. Fathom computes the SVML routine's arithmetic on every CPU
// (core/backend/log1p_float.hpp), so it equals NumPy's dispatched path bit for bit
// (checked where this CPU has AVX512_SKX) and NumPy's portable path within two units in
// the last place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/algo/normalize.hpp"
#include "core/backend/log1p_float.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

std::uint32_t bits_of(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float float_of(std::uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

/// Values log1p meets in a pipeline: normalised counts (integer counts times target /
/// total) and uniform values over the same range; one cell of 220,000 genes (no zeros).
CsrShard pipeline_cell() {
    std::mt19937_64 random(11);
    std::uniform_real_distribution<float> uniform(0.0f, 50.0f);
    std::uniform_int_distribution<int> count(1, 199), total(500, 19999);
    CsrShard shard;
    shard.num_genes = 220000;
    for (std::int32_t gene = 0; gene < 220000; ++gene) {
        const float value = gene < 100000 ? uniform(random)
                                          : static_cast<float>(count(random) * (1e4 / static_cast<double>(total(random))));
        if (value == 0.0f) continue;
        shard.gene_indices.push_back(gene);
        shard.values.push_back(value);
    }
    shard.row_offsets = {0, static_cast<std::int64_t>(shard.values.size())};
    return shard;
}

/// Every 257th float32 in [0, 64] and in (-1, 0], every 4099th in [2^127, 2^128) (the
/// routine's table path), and the special values: zeros, subnormals, the smallest
/// normals, -1 and below, infinities, NaNs, the largest floats.
std::vector<float> sweep_values() {
    std::vector<float> values;
    for (std::uint64_t bits = 0; bits <= bits_of(64.0f); bits += 257) values.push_back(float_of(static_cast<std::uint32_t>(bits)));
    for (std::uint64_t bits = 0x80000000u; bits < bits_of(-1.0f); bits += 257) values.push_back(float_of(static_cast<std::uint32_t>(bits)));
    for (std::uint64_t bits = bits_of(0x1p127f); bits < 0x7f800000u; bits += 4099) values.push_back(float_of(static_cast<std::uint32_t>(bits)));
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (const float value : {0.0f, -0.0f, float_of(1), float_of(2), float_of(0x007fffffu), float_of(0x80000001u),
                              float_of(0x807fffffu), std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                              1e-30f, -1e-30f, 1e-7f, -1e-7f, 0x1p-24f, -1.0f, float_of(0xbf7fffffu), -1.5f, -2.0f, -1e30f,
                              -std::numeric_limits<float>::max(), -inf, inf, nan, -nan, float_of(0x7fa00001u),
                              float_of(0xffc12345u), 1e30f, float_of(0x7effffffu), 0x1p127f, 3e38f,
                              std::numeric_limits<float>::max(), 65.0f, 1e4f, 16777216.0f})
        values.push_back(value);
    return values;
}

void write_floats(const std::filesystem::path& path, const std::vector<float>& values) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> read_floats(const std::filesystem::path& path, std::size_t count) {
    std::vector<float> values(count);
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
    return values;
}

/// Fathom's log1p of one row's values through ShardSet::log1p (the pipeline's step).
std::vector<float> shard_set_log1p(const CsrShard& shard) {
    auto shards = ShardSet::make_cpu(ShardedCsr(MatrixShape{1, shard.num_genes}, {shard}));
    JobContext ctx;
    log1p(shards, ctx);
    std::vector<float> out;
    const auto host = shards.to_host();
    for (const auto& part : host.shards()) out.insert(out.end(), part.values.begin(), part.values.end());
    return out;
}

/// Values whose bits differ, the first few described in `first`.
std::size_t bit_differences(const std::vector<float>& input, const std::vector<float>& ours, const std::vector<float>& numpy,
                            std::string& first) {
    std::size_t differ = 0;
    for (std::size_t entry = 0; entry < input.size(); ++entry) {
        if (bits_of(ours[entry]) == bits_of(numpy[entry])) continue;
        if (++differ <= 5) {
            char line[160];
            std::snprintf(line, sizeof line, "\n  log1p(%a, bits %08x): ours %08x, NumPy's %08x", static_cast<double>(input[entry]),
                          bits_of(input[entry]), bits_of(ours[entry]), bits_of(numpy[entry]));
            first += line;
        }
    }
    return differ;
}

TEST(Log1pParity, EqualsNumpysDispatchedFloat32Log1pBitForBit) {
    FATHOM_REQUIRE_PYTHON("numpy");
    const auto features = test::run_python(R"py(
from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
print("yes" if __cpu_features__.get("AVX512_SKX") and "AVX512_SKX" in __cpu_dispatch__ else "no")
)py");
    ASSERT_EQ(features.exit_code, 0) << features.output;
    if (features.output.find("yes") != 0)
        GTEST_SKIP() << "this CPU (or this NumPy build) has no AVX512_SKX: NumPy's float32 log1p is then the C library's "
                        "log1pf, not the SVML routine that Fathom reproduces";

    const CsrShard cell = pipeline_cell();
    const std::vector<float> sweep = sweep_values();
    const auto folder = test::temp_dir("log1p-numpy-dispatched");
    write_floats(folder / "cell.f32", cell.values);
    write_floats(folder / "sweep.f32", sweep);
    const auto result = test::run_python(R"py(
import sys
import numpy as np
for name in ("cell", "sweep"):
    x = np.fromfile(f"{sys.argv[1]}/{name}.f32", dtype=np.float32)
    with np.errstate(all="ignore"):
        np.log1p(x).tofile(f"{sys.argv[1]}/{name}.log1p.f32")
)py",
                                         {folder.string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;

    // The pipeline's step on the 220,000 values.
    std::string first;
    const auto cell_numpy = read_floats(folder / "cell.log1p.f32", cell.values.size());
    EXPECT_EQ(bit_differences(cell.values, shard_set_log1p(cell), cell_numpy, first), 0u) << "of " << cell.values.size() << first;

    // The sweep, through the in-place kernel (blocks with and without special values) and
    // the scalar function (the column statistics' transform).
    const auto sweep_numpy = read_floats(folder / "sweep.log1p.f32", sweep.size());
    auto in_place = sweep;
    log1p_float_in_place(in_place.data(), in_place.size());
    first.clear();
    EXPECT_EQ(bit_differences(sweep, in_place, sweep_numpy, first), 0u) << "of " << sweep.size() << first;
    std::vector<float> scalar(sweep.size());
    for (std::size_t entry = 0; entry < sweep.size(); ++entry) scalar[entry] = log1p_float(sweep[entry]);
    first.clear();
    EXPECT_EQ(bit_differences(sweep, scalar, sweep_numpy, first), 0u) << "of " << sweep.size() << first;
    std::cout << "log1p: " << cell.values.size() << " pipeline values and " << sweep.size()
              << " sweep values equal NumPy's dispatched float32 log1p bit for bit\n";
}

TEST(Log1pParity, IsWithinOneRoundingOfNumpysPortableFloat32Log1p) {
    FATHOM_REQUIRE_PYTHON("numpy");
    const CsrShard cell = pipeline_cell();
    const auto folder = test::temp_dir("log1p-numpy-portable");
    const auto input = folder / "values.f32", output = folder / "log1p.f32";
    write_floats(input, cell.values);

    // NumPy's portable path (the C library's log1pf): its AVX-512 dispatch targets that
    // this CPU has, turned off (NumPy refuses to disable targets that are not part of its
    // build). Where the CPU has none, it is NumPy's only path.
    const auto result = test::run_python(R"py(
import os, subprocess, sys
import numpy as np
from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
off = [name for name in __cpu_dispatch__ if name.startswith("AVX512") and __cpu_features__.get(name)]
script = "import sys, numpy as np; x = np.fromfile(sys.argv[1], dtype=np.float32); np.log1p(x).tofile(sys.argv[2])"
env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(off))
subprocess.run([sys.executable, "-c", script, sys.argv[1], sys.argv[2]], env=env, check=True)
x = np.fromfile(sys.argv[1], dtype=np.float32)
print("dispatched float32 log1p differs from the portable one on", int((np.log1p(x) != np.fromfile(sys.argv[2], dtype=np.float32)).sum()), "of", x.size, "values; AVX-512 targets turned off:", off)
)py",
                                         {input.string(), output.string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::cout << result.output;
    const auto portable = read_floats(output, cell.values.size());
    const auto ours = shard_set_log1p(cell);
    std::size_t by_distance[3] = {0, 0, 0}, glibc_differ = 0;
    for (std::size_t entry = 0; entry < ours.size(); ++entry) {
        // Both positive here: the distance between the bits counts units in the last place.
        const auto distance = std::abs(static_cast<std::int64_t>(bits_of(ours[entry])) - static_cast<std::int64_t>(bits_of(portable[entry])));
        // The SVML routine is within 2 ulp of log1p, log1pf within 1 (measured on every
        // 7th float32 in [0, 64]: at most 2 apart, 0.008% of them).
        ASSERT_LE(distance, 2) << "log1p(" << cell.values[entry] << "): ours " << ours[entry] << ", NumPy's portable "
                               << portable[entry];
        ++by_distance[distance];
        glibc_differ += bits_of(std::log1p(cell.values[entry])) != bits_of(portable[entry]) ? 1 : 0;
    }
    // NumPy's portable path is this C library's log1pf (the test's premise).
    EXPECT_EQ(glibc_differ, 0u) << "of " << ours.size();
    // The two routines disagree on a few percent of values (8,053 of 220,000 measured).
    const std::size_t differ = by_distance[1] + by_distance[2];
    EXPECT_GT(differ, 0u);
    EXPECT_LT(differ, ours.size() / 10);
    std::cout << "log1p: ours differs from NumPy's portable path on " << differ << " of " << ours.size() << " values ("
              << by_distance[1] << " by 1 ulp, " << by_distance[2] << " by 2)\n";
}

}  // namespace
}  // namespace fathom
