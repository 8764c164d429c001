// log1p of float32 values, as ShardSet::log1p applies it (rows of values in place): the
// routine Fathom uses (core/backend/log1p_float.hpp, NumPy's arithmetic on AVX512_SKX
// CPUs) against the C library's log1pf (NumPy's elsewhere), on normalised-count-like
// values (count * 1e4 / total). Run: build/bench/bench_log1p
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/backend/log1p_float.hpp"

namespace {

constexpr std::size_t kValues = 1 << 22;
constexpr std::size_t kRow = 2000;  // values per cell

const std::vector<float>& input() {
    static const std::vector<float> values = [] {
        std::vector<float> out(kValues);
        std::mt19937_64 random(3);
        std::uniform_int_distribution<int> count(1, 30), total(500, 19999);
        for (auto& value : out) value = static_cast<float>(count(random) * (1e4 / total(random)));
        return out;
    }();
    return values;
}

void BM_Log1pFloatInPlace(benchmark::State& state) {
    std::vector<float> values;
    for (auto _ : state) {
        state.PauseTiming();
        values = input();
        state.ResumeTiming();
        for (std::size_t begin = 0; begin < values.size(); begin += kRow)
            fathom::log1p_float_in_place(values.data() + begin, kRow);
        benchmark::DoNotOptimize(values.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}
BENCHMARK(BM_Log1pFloatInPlace);

void BM_Log1pFloatScalar(benchmark::State& state) {
    std::vector<float> values;
    for (auto _ : state) {
        state.PauseTiming();
        values = input();
        state.ResumeTiming();
        for (auto& value : values) value = fathom::log1p_float(value);
        benchmark::DoNotOptimize(values.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}
BENCHMARK(BM_Log1pFloatScalar);

void BM_CLibraryLog1pf(benchmark::State& state) {
    std::vector<float> values;
    for (auto _ : state) {
        state.PauseTiming();
        values = input();
        state.ResumeTiming();
        for (auto& value : values) value = std::log1p(value);
        benchmark::DoNotOptimize(values.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}
BENCHMARK(BM_CLibraryLog1pf);

}  // namespace

BENCHMARK_MAIN();
