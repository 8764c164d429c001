#include "core/algo/scale.hpp"

#include <cmath>
#include <stdexcept>

namespace fathom {

void validate(const ScaleOptions& options) {
    if (options.max_value && !(*options.max_value > 0.0))
        throw std::invalid_argument("ScaleOptions::max_value must be > 0");
    if (options.clip_below && !options.max_value)
        throw std::invalid_argument("ScaleOptions::clip_below needs ScaleOptions::max_value");
}

Standardization ScaleResult::standardization() const {
    Standardization out;
    out.mean = mean;
    out.inv_std = inv_std;
    out.max_value = max_value;
    out.min_value = min_value;
    return out;
}

ScaleResult scale(const ShardSet& shards, const ScaleOptions& options, JobContext& ctx) {
    validate(options);
    if (shards.num_cells() < 2)
        throw std::invalid_argument("scale: needs at least 2 cells for a ddof=1 standard deviation; the matrix has " +
                                    std::to_string(shards.num_cells()));
    ctx.begin_stage("scale");
    const ColumnStats stats = shards.column_stats({}, ctx);
    ctx.report(1.0);
    const auto genes = stats.sum.size();
    const double cells = static_cast<double>(shards.num_cells());
    ScaleResult result;
    result.mean.resize(genes);
    result.std.resize(genes);
    result.inv_std.resize(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) {
        // scanpy 1.9 _get_mean_var: mean = E[x], var = (E[x^2] - mean^2) * n / (n - 1)
        // (scanpy squares in float32; here in double, which differs by ~1e-7 relative).
        const double mean = stats.sum[gene] / cells;
        double var = (stats.sum_squares[gene] / cells - mean * mean) * (cells / (cells - 1.0));
        if (var < 0.0) var = 0.0;  // rounding for constant genes
        double std = std::sqrt(var);
        if (std == 0.0) std = 1.0;  // scanpy: std[std == 0] = 1
        result.mean[gene] = mean;
        result.std[gene] = std;
        result.inv_std[gene] = 1.0 / std;
    }
    result.max_value = options.max_value;
    if (options.clip_below) result.min_value = -*options.max_value;
    return result;
}

}  // namespace fathom
