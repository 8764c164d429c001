#pragma once
/// The inner loop of CpuBackend::project (unclipped). Internal to core/backend.
#include <cstdint>

#include "core/data/CsrShard.hpp"

namespace fathom::detail {

/// For rows [begin, end) of `shard`: scores[row * width + c] = -offset[c] + the sum over
/// the row's stored entries of block column map[gene] >= 0 of value * weights[column *
/// width + c], in entry order. One multiply and one add per term (no contraction), so
/// the SIMD clones (AVX2, AVX-512) give the same bits as plain code on any CPU.
void project_rows(const CsrShard& shard, std::int64_t begin, std::int64_t end, const std::int32_t* map,
                  const double* weights, const double* offset, std::int64_t width, double* scores);

}  // namespace fathom::detail
