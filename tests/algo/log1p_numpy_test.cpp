// log1p of float32 values against NumPy's np.log1p on float32 arrays (what scanpy's
// sc.pp.log1p runs on X.data). NumPy 1.24 picks its float32 log1p by CPU: on CPUs with
// AVX512_SKX an Intel SVML vector routine (__svml_log1pf16), elsewhere the C library's
// log1pf. Fathom computes log1pf (the C library's), so it must equal NumPy's portable
// path bit for bit; that path is forced here with NPY_DISABLE_CPU_FEATURES.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>

#include "core/algo/normalize.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

TEST(Log1pParity, EqualsNumpysFloat32Log1pWithoutItsAvx512Routine) {
    FATHOM_REQUIRE_PYTHON("numpy");
    // Values log1p meets in a pipeline: normalised counts (integer counts times
    // target / total) and uniform values over the same range; one cell of 220,000 genes.
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
    const auto folder = test::temp_dir("log1p-numpy");
    const auto input = folder / "values.f32", output = folder / "log1p.f32";
    std::ofstream(input, std::ios::binary)
        .write(reinterpret_cast<const char*>(shard.values.data()), static_cast<std::streamsize>(shard.values.size() * 4));

    // NumPy's portable path: its AVX-512 dispatch targets that this CPU has, turned off
    // (NumPy refuses to disable targets that are not part of its build).
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
    std::vector<float> expected(shard.values.size());
    std::ifstream(output, std::ios::binary)
        .read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(expected.size() * 4));

    auto shards = ShardSet::make_cpu(ShardedCsr(MatrixShape{1, shard.num_genes}, {shard}));
    JobContext ctx;
    log1p(shards, ctx);
    const auto after = shards.to_host();
    std::size_t entry = 0, differ = 0;
    for (const auto& part : after.shards())
        for (float value : part.values) {
            differ += std::memcmp(&value, &expected[entry], sizeof(float)) != 0;
            ++entry;
        }
    ASSERT_EQ(entry, expected.size());
    EXPECT_EQ(differ, 0u) << "of " << entry << " values";
}

}  // namespace
}  // namespace fathom
