#pragma once
/// Out-of-core execution for matrices larger than the engine's memory budget: the raw
/// matrix is never loaded; it is streamed from the file in row blocks, twice for
/// Zheng17 (statistics, then the HVG block), and only the HVG block is kept as shards.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/algo/normalize.hpp"
#include "core/algo/qc.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/detail/PackedMatrix.hpp"
#include "core/io/RowSource.hpp"
#include "core/types/Comm.hpp"

namespace fathom::detail {

/// Everything the first streamed pass gathers (every vector is global).
struct StreamedStats {
    QcResult qc;                         ///< as calculate_qc_metrics on the raw counts
    bool integer_counts = true;          ///< every value a non-negative integer
    /// Per gene over cells with a non-zero total: sum of x / total and of (x / total)^2.
    /// Multiplying by the normalisation target (and its square) gives the moments of
    /// normalize_total's output without a second pass.
    std::vector<double> sum_inverse_total;
    std::vector<double> sum_squares_inverse_total;
    /// The rows this process read, packed (when pass 1 was asked to keep them and they
    /// fit its budget); null otherwise.
    std::shared_ptr<const PackedMatrix> packed;
    /// Bytes the packed rows reached: all of them when kept, else the size at which they
    /// passed the budget (0 when not asked to keep them).
    std::int64_t packed_bytes = 0;
};

/// Rows per streamed block.
inline constexpr std::int64_t k_stream_block_rows = 32768;

/// The shards of a dataset over ranks (loaded or streamed): the global cut (the same
/// whatever the number of ranks) and the run of shards this process holds. Every pass
/// reduces per-shard partials in global shard order, so one process with N shards and
/// R ranks with N shards in all give the same bits.
struct ShardLayout {
    std::vector<RowRange> layout;  ///< every shard's global rows, contiguous from row 0
    int first = 0;                 ///< this process's shards: [first, first + count)
    int count = 0;
    std::shared_ptr<Comm> comm;    ///< null (or one rank): one process holds every shard
    /// One process streaming every shard of `ranges`.
    static ShardLayout single(std::vector<RowRange> ranges);
    /// This rank's run of shards when it holds `shards_per_rank` of them (>= 1; the
    /// ranks' counts, which may differ, are exchanged: collective), cut over
    /// `row_offsets` (num_cells + 1 entries).
    static ShardLayout over_ranks(std::span<const std::int64_t> row_offsets, int shards_per_rank,
                                  ShardBalance balance, std::shared_ptr<Comm> comm);
    bool distributed() const noexcept { return comm && comm->size() > 1; }
    std::span<const RowRange> local() const noexcept {
        return std::span<const RowRange>(layout).subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count));
    }
    /// The rows this process streams, [begin, end).
    RowRange local_rows() const noexcept {
        return count ? RowRange{layout[static_cast<std::size_t>(first)].begin,
                                layout[static_cast<std::size_t>(first + count - 1)].end}
                     : RowRange{};
    }
};

/// Pass 1: QC metrics and the normalised per-gene moments, reading this process's
/// shards of `layout` once (collective when distributed: every rank gets the global
/// statistics). Blocks are read one ahead on a background thread (block_rows rows
/// each, >= 1). With `keep_budget_bytes` > 0 the rows read are also packed in memory
/// (StreamedStats::packed) while the packed bytes stay within it; once they pass it the
/// packed rows are dropped and the rest are not packed (each rank decides for its own
/// rows: the later passes give the same bits either way).
StreamedStats stream_statistics(io::RowSource& source, std::span<const std::string> gene_names,
                                const ShardLayout& layout, JobContext& ctx,
                                std::int64_t block_rows = k_stream_block_rows, std::int64_t keep_budget_bytes = 0);
/// Pass 1 over the whole matrix as one shard.
StreamedStats stream_statistics(io::RowSource& source, std::span<const std::string> gene_names, JobContext& ctx,
                                std::int64_t block_rows = k_stream_block_rows);

/// Pass 2: every row normalised by normalize_total(`normalization`) — the same
/// per-cell factors the in-memory path applies to the whole matrix — then cut to the
/// columns with keep[g] = 1, as this process's shards of `layout` (CPU backends; a
/// distributed set over the ranks when `layout` is); reads those rows of `source` once.
ShardSet stream_gene_block(io::RowSource& source, const NormalizeTotalOptions& normalization,
                           std::span<const std::uint8_t> keep, const ShardLayout& layout, JobContext& ctx,
                           std::int64_t block_rows = k_stream_block_rows);
/// Pass 2 on one process, one shard per entry of `ranges`.
ShardSet stream_gene_block(io::RowSource& source, const NormalizeTotalOptions& normalization,
                           std::span<const std::uint8_t> keep, const std::vector<RowRange>& ranges, JobContext& ctx,
                           std::int64_t block_rows = k_stream_block_rows);

/// Zheng17 on a non-integer X, once pass 1 gave the gene filter: per row of this
/// process's shards of `layout`, NumPy's float32 sum of the stored values of the genes
/// with keep = 1 (numpy_float32_row_sums: normalize_total's totals on the filtered
/// matrix, as the in-memory path takes them). Every row's sum, in row order (collective
/// when distributed: the ranks' rows are gathered in rank order). Reads those rows once.
std::vector<double> stream_row_sums(io::RowSource& source, std::span<const std::uint8_t> keep,
                                    const ShardLayout& layout, JobContext& ctx,
                                    std::int64_t block_rows = k_stream_block_rows);

/// ShardSet::column_stats with ColumnStatsRequest::row_scale = `row_scale` (one factor
/// per cell of the matrix) over the rows of `layout`: each block's CpuBackend statistics
/// summed per shard, the shards' sums added in global shard order (collective when
/// distributed: every rank gets the same bits as one process streaming every shard).
/// Reads this process's rows once.
ColumnStats stream_column_stats(io::RowSource& source, std::span<const double> row_scale, const ShardLayout& layout,
                                JobContext& ctx, std::int64_t block_rows = k_stream_block_rows);

/// Pass 2 with the per-cell factors given (one per cell of the matrix, as
/// normalize_total_factors gives them) instead of normalize_total's own totals: every
/// row scaled by its factor (Backend::scale_rows), then cut to the columns with keep = 1.
ShardSet stream_gene_block(io::RowSource& source, std::span<const double> row_factors,
                           std::span<const std::uint8_t> keep, const ShardLayout& layout, JobContext& ctx,
                           std::int64_t block_rows = k_stream_block_rows);

/// Counts (values as stored) of the columns `genes` for every row of `source`, one
/// vector per entry of `genes`: the rows are read in blocks of about `block_nnz`
/// non-zeros (>= 1) planned on `row_offsets` (num_cells + 1 entries), and only those
/// columns are kept from each block (ShardSet::gene_columns, as the in-memory queries).
/// Reads `source` once. With a distributed `layout` each rank reads only its own rows
/// and the parts are gathered (collective): every rank gets the whole columns.
std::vector<std::vector<float>> stream_gene_columns(io::RowSource& source, std::span<const std::int64_t> row_offsets,
                                                    std::span<const std::int32_t> genes, std::int64_t block_nnz,
                                                    JobContext& ctx, const ShardLayout* layout = nullptr);

/// The io::ReadOptions that read a file as `read` says.
io::ReadOptions read_options(const DatasetReadOptions& read);

}  // namespace fathom::detail
