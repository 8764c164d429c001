#pragma once
/// X^T X of a gene block of one CSR shard, for CpuBackend::gram (unclipped). Internal to
/// core/backend.
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/CsrShard.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::detail {

/// Sums over the shard's rows of the stored values of a gene block (no transform).
struct SparseGram {
    std::vector<double> cross;   ///< block x block, row-major, both triangles: sum over rows of x_a * x_b
    std::vector<double> sums;    ///< per block column: sum over rows of x_a
};

/// X^T X and column sums of the block columns of `shard`: map[g] is gene g's block column
/// (-1 = not in the block, increasing with g), block_size the number of block columns.
///
/// The block columns are cut into panels of kGramPanelWidth; each pair of panels (a
/// rectangle of X^T X) is one task that visits
/// every row of the shard in order, a chunk of rows at a time: the chunk's entries of
/// the first panel, by column, times the chunk's second panel made dense, so the inner
/// loop is a contiguous vector update (AVX2 / AVX-512 where the CPU has them) instead of a
/// scattered one. Every entry is summed in row order by one task, whatever the number
/// of threads (bit-identical for any thread count), and no task needs a private copy of
/// the block x block matrix. Checks ctx for cancellation while it runs.
SparseGram sparse_gram(const CsrShard& shard, std::span<const std::int32_t> map, std::int64_t block_size, JobContext& ctx);

/// Block columns per panel of sparse_gram: a chunk's dense slice (128 rows x 512 floats,
/// 256 KiB) stays in a core's L2 cache; each entry of the first panel updates a 4 KiB
/// rectangle row. Measured fastest of 128 / 256 / 512 / 1024 on a 1000-gene block.
inline constexpr std::int64_t kGramPanelWidth = 512;

}  // namespace fathom::detail
