#include "core/backend/project_kernel.hpp"

namespace fathom::detail {

__attribute__((target_clones("avx512f", "avx2", "default"))) void project_rows(
    const CsrShard& shard, std::int64_t begin, std::int64_t end, const std::int32_t* map, const double* weights,
    const double* offset, std::int64_t width, double* scores) {
    const std::int64_t* row_offsets = shard.row_offsets.data();
    const std::int32_t* gene_indices = shard.gene_indices.data();
    const float* values = shard.values.data();
    for (std::int64_t row = begin; row < end; ++row) {
        double* out = scores + row * width;
        for (std::int64_t component = 0; component < width; ++component) out[component] = -offset[component];
        for (std::int64_t entry = row_offsets[row]; entry < row_offsets[row + 1]; ++entry) {
            const std::int32_t column = map[gene_indices[entry]];
            if (column < 0) continue;
            const double value = values[entry];
            const double* weight = weights + static_cast<std::int64_t>(column) * width;
            for (std::int64_t component = 0; component < width; ++component) out[component] += value * weight[component];
        }
    }
}

}  // namespace fathom::detail
