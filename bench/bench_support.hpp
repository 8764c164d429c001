#pragma once
/// Helpers shared by the benchmarks (no Qt: the CLI-level benchmarks use them too).
#include <algorithm>
#include <vector>

namespace fathom::bench {

/// Median of `values` (0 when empty).
inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

}  // namespace fathom::bench
