#include "core/engine/detail/Streaming.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/stats_wire.hpp"
#include "core/memory/first_touch.hpp"

namespace fathom::detail {

namespace {

/// Reads row blocks in order, the next one on a background thread while the caller
/// computes on the current one, so that decompression and the statistics overlap.
/// Only this reader touches the source (HDF5 is used from one thread at a time).
class BlockReader {
public:
    BlockReader(io::RowSource& source, std::int64_t begin, std::int64_t end, std::int64_t block_rows)
        : m_source(source), m_next(begin), m_end(end), m_block_rows(std::max<std::int64_t>(1, block_rows)) {
        launch();
    }
    BlockReader(const BlockReader&) = delete;
    BlockReader& operator=(const BlockReader&) = delete;
    /// Waits for any read in flight (its result or error is dropped).
    ~BlockReader() {
        if (m_pending.valid()) m_pending.wait();
    }

    /// The next block's rows [first, last), or false after the last block. Rethrows a
    /// read error of that block. What `rows` held before (the caller's previous block,
    /// given back) is recycled: the block after this one is read into its arrays, so a
    /// pass touches the memory of two blocks instead of fresh pages for every block.
    bool next(CsrShard& rows, std::int64_t& first, std::int64_t& last) {
        if (!m_pending.valid()) return false;
        first = m_pending_begin;
        last = m_pending_end;
        CsrShard previous = std::move(rows);
        rows = m_pending.get();
        m_largest = std::max(m_largest, rows.nnz());
        m_spare = std::move(previous);
        launch();
        return true;
    }

private:
    void launch() {
        if (m_next >= m_end) return;
        m_pending_begin = m_next;
        m_pending_end = std::min(m_end, m_next + m_block_rows);
        m_next = m_pending_end;
        CsrShard arrays = std::move(m_spare);
        m_spare = CsrShard{};
        // Room for a block a little larger than any so far: a block that outgrew the
        // recycled arrays would get fresh ones (the old freed), and fresh memory is paid
        // for page by page (the kernel zeroes it), which cost about a fifth of pass 1.
        const auto room = static_cast<std::size_t>(m_largest + m_largest / 8);
        m_pending = std::async(std::launch::async, [this, begin = m_pending_begin, end = m_pending_end, room,
                                                    rows = std::move(arrays)]() mutable {
            rows.row_begin = begin;
            rows.row_offsets.assign(1, 0);
            rows.gene_indices.clear();
            rows.values.clear();
            rows.gene_indices.reserve(room);
            rows.values.reserve(room);
            m_source.append_rows(begin, end, rows);
            return std::move(rows);
        });
    }

    CsrShard m_spare;  ///< a finished block's arrays, for the next read

    io::RowSource& m_source;
    std::int64_t m_next = 0, m_end = 0, m_block_rows = 1;
    std::int64_t m_pending_begin = 0, m_pending_end = 0;
    std::int64_t m_largest = 0;  ///< entries of the largest block read so far
    std::future<CsrShard> m_pending;
};

}  // namespace

namespace {

/// Pass 1's partial of one shard: its cells' QC and its per-gene sums.
struct ShardStatistics {
    std::vector<double> total, subset_total;
    std::vector<std::int64_t> nnz;
    std::vector<double> gene_totals, sum_inverse_total, sum_squares_inverse_total;
    std::vector<std::int64_t> gene_cells;
    bool integer_counts = true;
};

void write_statistics(ByteWriter& out, const ShardStatistics& part) {
    out.put_vector<double>(part.total);
    out.put_vector<double>(part.subset_total);
    out.put_vector<std::int64_t>(part.nnz);
    out.put_vector<double>(part.gene_totals);
    out.put_vector<double>(part.sum_inverse_total);
    out.put_vector<double>(part.sum_squares_inverse_total);
    out.put_vector<std::int64_t>(part.gene_cells);
    out.put(static_cast<std::uint8_t>(part.integer_counts));
}

ShardStatistics read_statistics(ByteReader& in) {
    ShardStatistics part;
    part.total = in.get_vector<double>();
    part.subset_total = in.get_vector<double>();
    part.nnz = in.get_vector<std::int64_t>();
    part.gene_totals = in.get_vector<double>();
    part.sum_inverse_total = in.get_vector<double>();
    part.sum_squares_inverse_total = in.get_vector<double>();
    part.gene_cells = in.get_vector<std::int64_t>();
    part.integer_counts = in.get<std::uint8_t>() != 0;
    return part;
}

/// Pass 1's packed copy of the rows read, while it fits its budget.
struct PackedKeeper {
    std::shared_ptr<PackedMatrix> matrix;  ///< null: not kept (not asked, or over budget)
    std::int64_t budget = 0;
    std::int64_t bytes = 0;                ///< packed bytes reached
    void add(const CsrShard& rows) {
        if (!matrix) return;
        matrix->add(rows);
        bytes = matrix->memory_bytes();
        if (bytes > budget) matrix.reset();  // over budget: the later passes read the file
    }
};

/// One shard's rows [range.begin, range.end), read in blocks.
ShardStatistics shard_statistics(io::RowSource& source, const RowRange& range, std::span<const std::uint8_t> mito_genes,
                                 std::int64_t num_cells, JobContext& ctx, std::int64_t block_rows, PackedKeeper& keeper) {
    const auto num_genes = mito_genes.size();
    ShardStatistics part;
    part.gene_totals.assign(num_genes, 0.0);
    part.gene_cells.assign(num_genes, 0);
    part.sum_inverse_total.assign(num_genes, 0.0);
    part.sum_squares_inverse_total.assign(num_genes, 0.0);
    BlockReader reader(source, range.begin, range.end, block_rows);
    CsrShard rows_read;
    std::int64_t begin = 0, end = 0;
    while (reader.next(rows_read, begin, end)) {
        ctx.checkpoint();
        // One block as a temporary CPU backend, so the statistics are the same
        // primitives (and the same arithmetic) as the in-memory path.
        CpuBackend block(std::move(rows_read), 0);
        // The statistics of row_stats and of the raw and row-scaled column_stats, and the
        // count test, in one pass over the block (CpuBackend::count_stats: the same
        // arithmetic, lanes and order as those primitives).
        const CpuBackend::CountStats stats = block.count_stats(mito_genes, ctx);
        const RowStats& rows = stats.rows;
        part.total.insert(part.total.end(), rows.total.begin(), rows.total.end());
        part.nnz.insert(part.nnz.end(), rows.nnz.begin(), rows.nnz.end());
        part.subset_total.insert(part.subset_total.end(), rows.subset_total.begin(), rows.subset_total.end());
        for (std::size_t gene = 0; gene < num_genes; ++gene) {
            part.gene_totals[gene] += stats.raw_sum[gene];
            part.gene_cells[gene] += stats.raw_nnz[gene];
            part.sum_inverse_total[gene] += stats.scaled_sum[gene];
            part.sum_squares_inverse_total[gene] += stats.scaled_sum_squares[gene];
        }
        part.integer_counts = part.integer_counts && stats.counts;
        keeper.add(block.shard());
        rows_read = block.take_shard();  // its arrays take a later block
        ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, num_cells)));
    }
    return part;
}

}  // namespace

ShardLayout ShardLayout::single(std::vector<RowRange> ranges) {
    ShardLayout out;
    out.count = static_cast<int>(ranges.size());
    out.layout = std::move(ranges);
    return out;
}

ShardLayout ShardLayout::over_ranks(std::span<const std::int64_t> row_offsets, int shards_per_rank,
                                      ShardBalance balance, std::shared_ptr<Comm> comm) {
    shards_per_rank = std::max(1, shards_per_rank);
    if (!comm || comm->size() == 1) return single(plan_row_ranges(row_offsets, shards_per_rank, balance));
    // Every rank's shard count, in rank order: this rank's shards follow the others'.
    ByteWriter count;
    count.put(shards_per_rank);
    int total = 0;
    ShardLayout out;
    const std::vector<Bytes> counts = comm->all_gather(count.bytes());
    for (int rank = 0; rank < comm->size(); ++rank) {
        ByteReader in(counts[static_cast<std::size_t>(rank)]);
        const int theirs = in.get<int>();
        if (rank == comm->rank()) out.first = total;
        total += theirs;
    }
    out.count = shards_per_rank;
    out.layout = plan_row_ranges(row_offsets, total, balance);
    out.comm = std::move(comm);
    return out;
}

StreamedStats stream_statistics(io::RowSource& source, std::span<const std::string> gene_names,
                                const ShardLayout& layout, JobContext& ctx, std::int64_t block_rows,
                                std::int64_t keep_budget_bytes) {
    const MatrixShape shape = source.shape();
    const auto num_genes = static_cast<std::size_t>(shape.num_genes);
    StreamedStats stats;
    QcResult& qc = stats.qc;
    QcOptions qc_options;
    qc.mito_genes.assign(num_genes, 0);
    for (std::size_t gene = 0; gene < num_genes && gene < gene_names.size(); ++gene)
        for (const auto& prefix : qc_options.mito_prefixes)
            if (gene_names[gene].rfind(prefix, 0) == 0) qc.mito_genes[gene] = 1;
    for (auto flag : qc.mito_genes) qc.num_mito_genes += flag;

    PackedKeeper keeper;
    keeper.budget = keep_budget_bytes;
    if (keep_budget_bytes > 0) keeper.matrix = std::make_shared<PackedMatrix>(shape);
    std::vector<ShardStatistics> parts;
    {
        // Packing the rows: the later passes read them, not the file, so the file's pages
        // are dropped from the page cache as they are read (io::RowSource::set_read_once).
        // A 1.3M-cell 10x file is otherwise 3.9 GB of fresh pages: the 1.3M run without
        // graph steps took 44-46 s of system time with the drops, 61-71 s without. Set for the
        // whole pass (the reader thread reads while this one packs); if the rows outgrow
        // the budget, the later passes read the file from disk.
        const io::ReadOnceScope read_once(source, keeper.matrix != nullptr);
        for (const RowRange& range : layout.local())
            parts.push_back(shard_statistics(source, range, qc.mito_genes, shape.num_cells, ctx, block_rows, keeper));
    }
    stats.packed = std::move(keeper.matrix);
    stats.packed_bytes = keeper.bytes;
    if (layout.distributed()) {
        // Every rank's partials, in rank order = global shard order.
        ByteWriter out;
        for (const ShardStatistics& part : parts) write_statistics(out, part);
        const std::vector<Bytes> gathered = layout.comm->all_gather(out.bytes());
        std::vector<ShardStatistics> all;
        for (std::size_t rank = 0; rank < gathered.size(); ++rank) {
            if (static_cast<int>(rank) == layout.comm->rank()) {
                for (ShardStatistics& part : parts) all.push_back(std::move(part));
                continue;
            }
            ByteReader in(gathered[rank]);
            while (!in.done()) all.push_back(read_statistics(in));
        }
        if (all.size() != layout.layout.size())
            throw std::runtime_error("streamed statistics: gathered " + std::to_string(all.size()) + " partials for " +
                                     std::to_string(layout.layout.size()) + " shards");
        parts = std::move(all);
    }

    // Combined in global shard order.
    std::vector<double> gene_totals(num_genes, 0.0);
    std::vector<std::int64_t> gene_cells(num_genes, 0);
    stats.sum_inverse_total.assign(num_genes, 0.0);
    stats.sum_squares_inverse_total.assign(num_genes, 0.0);
    for (const ShardStatistics& part : parts) {
        for (std::size_t row = 0; row < part.total.size(); ++row) {
            qc.total_counts.push_back(part.total[row]);
            qc.n_genes_by_counts.push_back(part.nnz[row]);
            qc.total_counts_mt.push_back(part.subset_total[row]);
            qc.pct_counts_mt.push_back(part.total[row] > 0.0 ? 100.0 * part.subset_total[row] / part.total[row]
                                                             : std::nan(""));
        }
        for (std::size_t gene = 0; gene < num_genes; ++gene) {
            gene_totals[gene] += part.gene_totals[gene];
            gene_cells[gene] += part.gene_cells[gene];
            stats.sum_inverse_total[gene] += part.sum_inverse_total[gene];
            stats.sum_squares_inverse_total[gene] += part.sum_squares_inverse_total[gene];
        }
        stats.integer_counts = stats.integer_counts && part.integer_counts;
    }
    if (static_cast<std::int64_t>(qc.total_counts.size()) != shape.num_cells)
        throw std::runtime_error("streamed statistics: " + std::to_string(qc.total_counts.size()) + " rows for " +
                                 std::to_string(shape.num_cells) + " cells");
    const double num_cells = static_cast<double>(std::max<std::int64_t>(1, shape.num_cells));
    qc.n_cells_by_counts = gene_cells;
    qc.gene_total_counts = gene_totals;
    qc.mean_counts.resize(num_genes);
    qc.pct_dropout_by_counts.resize(num_genes);
    for (std::size_t gene = 0; gene < num_genes; ++gene) {
        qc.mean_counts[gene] = gene_totals[gene] / num_cells;
        qc.pct_dropout_by_counts[gene] = 100.0 * (1.0 - static_cast<double>(gene_cells[gene]) / num_cells);
    }
    return stats;
}

StreamedStats stream_statistics(io::RowSource& source, std::span<const std::string> gene_names, JobContext& ctx,
                                std::int64_t block_rows) {
    return stream_statistics(source, gene_names, ShardLayout::single({RowRange{0, source.shape().num_cells}}), ctx,
                             block_rows);
}

ShardSet stream_gene_block(io::RowSource& source, const NormalizeTotalOptions& normalization,
                           std::span<const std::uint8_t> keep, const std::vector<RowRange>& ranges, JobContext& ctx,
                           std::int64_t block_rows) {
    return stream_gene_block(source, normalization, keep, ShardLayout::single(ranges), ctx, block_rows);
}

namespace {

/// A shard's parts (its rows' kept columns, in row order) joined into one CsrShard of
/// the exact size (each part freed once copied, so the shard and the parts
/// together stay about the shard's size).
CsrShard join_parts(std::vector<CsrShard>& parts, std::int64_t row_begin, std::int64_t kept_genes) {
    CsrShard shard;
    shard.row_begin = row_begin;
    shard.num_genes = kept_genes;
    std::int64_t part_rows = 0, part_entries = 0;
    for (const CsrShard& part : parts) {
        part_rows += part.num_rows();
        part_entries += part.nnz();
    }
    if (parts.size() == 1) {  // one part: its arrays become the shard's
        shard = std::move(parts.front());
        shard.row_begin = row_begin;
        shard.num_genes = kept_genes;
        parts.clear();
        return shard;
    }
    shard.row_offsets.reserve(static_cast<std::size_t>(part_rows) + 1);
    shard.gene_indices.reserve(static_cast<std::size_t>(part_entries));
    shard.values.reserve(static_cast<std::size_t>(part_entries));
    for (CsrShard& part : parts) {
        const std::int64_t base = shard.row_offsets.back();
        for (std::size_t row = 1; row < part.row_offsets.size(); ++row) shard.row_offsets.push_back(base + part.row_offsets[row]);
        shard.gene_indices.insert(shard.gene_indices.end(), part.gene_indices.begin(), part.gene_indices.end());
        shard.values.insert(shard.values.end(), part.values.begin(), part.values.end());
        part = CsrShard{};  // freed as soon as it is copied
    }
    return shard;
}

/// Pass 2 over this process's shards of `layout`: each block of rows [begin, end) is
/// normalised by `normalise(block, begin, end)` (a one-shard set), then cut to `keep`.
template <typename Normalise>
ShardSet gene_block(io::RowSource& source, std::span<const std::uint8_t> keep, const ShardLayout& layout,
                    JobContext& ctx, std::int64_t block_rows, Normalise&& normalise) {
    const MatrixShape shape = source.shape();
    std::int64_t kept_genes = 0;
    for (auto flag : keep) kept_genes += flag;
    std::vector<std::unique_ptr<Backend>> backends;
    for (int shard_index = layout.first; shard_index < layout.first + layout.count; ++shard_index) {
        const RowRange& range = layout.layout[static_cast<std::size_t>(shard_index)];
        BlockReader reader(source, range.begin, range.end, block_rows);
        CsrShard rows;
        std::int64_t begin = 0, end = 0;
        // The blocks' kept columns, joined once their total size is known: one copy into
        // memory of the exact size (growing the shard block by block and trimming it
        // touched and copied about three times as much).
        std::vector<CsrShard> parts;
        while (reader.next(rows, begin, end)) {
            ctx.checkpoint();
            rows.row_begin = 0;  // a one-shard set of its own
            std::vector<std::unique_ptr<Backend>> one;
            one.push_back(std::make_unique<CpuBackend>(std::move(rows), 0));
            ShardSet block(std::move(one), shape.num_genes);
            normalise(block, begin, end);
            block.subset_columns(keep, ctx);
            parts.push_back(static_cast<CpuBackend&>(block.shard(0)).take_shard());
            ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, shape.num_cells)));
        }
        backends.push_back(std::make_unique<CpuBackend>(join_parts(parts, range.begin, kept_genes), shard_index));
    }
    if (layout.distributed())
        return ShardSet::distributed(std::move(backends), kept_genes, layout.comm, layout.layout, layout.first);
    return ShardSet(std::move(backends), kept_genes);
}

/// How the second pass over packed rows gets each row's factor: given per cell, or
/// normalize_total's from the row's total with a fixed target (the same factor
/// normalize_total gives that row in a block of any size).
struct RowFactorRule {
    std::span<const double> given;                          ///< one per cell; empty: from the totals
    const NormalizeTotalOptions* normalization = nullptr;   ///< when `given` is empty (target_sum set)
};

/// Pass 2 straight from the packed rows of the first pass: each row is decoded (PackedRowReader),
/// its factor taken (RowFactorRule), and only its kept columns are written, scaled as
/// Backend::scale_rows scales them; chunks of packed rows are decoded in parallel. The
/// same bits as gene_block over a PackedRowSource (normalise the whole row, then cut it
/// to `keep`) without making the rows' CSR blocks.
///
/// Two passes over a shard's chunks: the first counts each row's kept entries (and takes
/// its factor), the second writes them straight into the shard's arrays, allocated once
/// at their exact size. Per-chunk parts joined afterwards held the block twice at the
/// join (1.3M cells: the step's peak RSS 8,837 MiB against 8,040 now, the difference all
/// pages touched for the first time); decoding the packed rows twice costs less.
ShardSet packed_gene_block(const PackedMatrix& packed, std::span<const std::uint8_t> keep, const ShardLayout& layout,
                           JobContext& ctx, const RowFactorRule& rule) {
    const MatrixShape shape = packed.shape();
    std::vector<std::int32_t> renumber(keep.size(), -1);
    std::int32_t kept_genes = 0;
    for (std::size_t gene = 0; gene < keep.size(); ++gene)
        if (keep[gene]) renumber[gene] = kept_genes++;
    // One chunk's rows [first, last) (global) of a shard: each row's kept entries and factor.
    struct ChunkPlan {
        std::int64_t first = 0, last = 0;
        std::vector<std::int32_t> kept;  ///< per row
        std::vector<double> factors;     ///< per row (empty: rule.given's)
        std::int64_t entry_begin = 0;    ///< the chunk's first entry in the shard
    };
    const auto count = [&](const PackedRows& chunk, ChunkPlan& plan) {
        ctx.checkpoint();
        plan.kept.reserve(static_cast<std::size_t>(plan.last - plan.first));
        std::vector<double> totals;
        if (rule.given.empty()) totals.reserve(static_cast<std::size_t>(plan.last - plan.first));
        PackedRowReader reader(chunk, plan.first - chunk.row_begin, plan.last - chunk.row_begin);
        std::span<const std::int32_t> genes;
        std::span<const float> values;
        while (reader.next(genes, values)) {
            if (rule.given.empty()) {
                // X.sum(1) as normalize_total takes it (Backend::row_stats's total, or
                // NumPy's float32 sum for a float X).
                if (rule.normalization->integer_dtype) {
                    double total = 0.0;
                    for (const float value : values) total += static_cast<double>(value);
                    totals.push_back(total);
                } else {
                    totals.push_back(static_cast<double>(numpy_float32_sum(values)));
                }
            }
            std::int32_t kept = 0;
            for (const std::int32_t gene : genes) kept += renumber[static_cast<std::size_t>(gene)] >= 0 ? 1 : 0;
            plan.kept.push_back(kept);
        }
        if (rule.given.empty()) plan.factors = normalize_total_factors(std::move(totals), *rule.normalization).factors;
    };
    struct Scratch {
        std::vector<std::int32_t> genes;
        std::vector<float> values;
    };
    tbb::enumerable_thread_specific<Scratch> scratches;
    // The chunk's kept entries written into `shard` (rows numbered from `shard_first`).
    const auto write = [&](const PackedRows& chunk, const ChunkPlan& plan, CsrShard& shard, std::int64_t shard_first) {
        ctx.checkpoint();
        Scratch& scratch = scratches.local();
        const std::span<const double> factors =
            rule.given.empty() ? std::span<const double>(plan.factors)
                               : rule.given.subspan(static_cast<std::size_t>(plan.first), static_cast<std::size_t>(plan.last - plan.first));
        PackedRowReader reader(chunk, plan.first - chunk.row_begin, plan.last - chunk.row_begin);
        std::span<const std::int32_t> genes;
        std::span<const float> values;
        auto cursor = static_cast<std::size_t>(plan.entry_begin);
        auto row = static_cast<std::size_t>(plan.first - shard_first);
        for (std::size_t local = 0; reader.next(genes, values); ++local, ++row) {
            if (scratch.genes.size() < genes.size()) {
                scratch.genes.resize(genes.size());
                scratch.values.resize(genes.size());
            }
            // Entries compacted without a branch: written, then kept by advancing.
            std::size_t kept = 0;
            for (std::size_t entry = 0; entry < genes.size(); ++entry) {
                const std::int32_t gene = renumber[static_cast<std::size_t>(genes[entry])];
                scratch.genes[kept] = gene;
                scratch.values[kept] = values[entry];
                kept += gene >= 0 ? 1 : 0;
            }
            const double factor = factors[local];
            for (std::size_t entry = 0; entry < kept; ++entry) {
                shard.gene_indices[cursor + entry] = scratch.genes[entry];
                shard.values[cursor + entry] = static_cast<float>(static_cast<double>(scratch.values[entry]) * factor);
            }
            cursor += kept;
            shard.row_offsets[row + 1] = static_cast<std::int64_t>(cursor);
        }
    };
    // Chunks decoded in parallel, a block's worth at a time between progress reports.
    constexpr std::size_t k_batch_chunks =
        static_cast<std::size_t>((k_stream_block_rows + k_packed_chunk_rows - 1) / k_packed_chunk_rows);
    std::vector<std::unique_ptr<Backend>> backends;
    for (int shard_index = layout.first; shard_index < layout.first + layout.count; ++shard_index) {
        const RowRange& range = layout.layout[static_cast<std::size_t>(shard_index)];
        const std::span<const PackedRows> chunks = packed.chunks(range.begin, range.end);
        std::vector<ChunkPlan> plans(chunks.size());
        tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t index) {
            const PackedRows& chunk = chunks[index];
            plans[index].first = std::max(range.begin, chunk.row_begin);
            plans[index].last = std::min(range.end, chunk.row_begin + chunk.num_rows());
            count(chunk, plans[index]);
        });
        std::int64_t entries = 0;
        for (ChunkPlan& plan : plans) {
            plan.entry_begin = entries;
            for (const std::int32_t kept : plan.kept) entries += kept;
        }
        CsrShard shard;
        shard.row_begin = range.begin;
        shard.num_genes = kept_genes;
        shard.row_offsets.resize(static_cast<std::size_t>(range.end - range.begin) + 1);
        shard.row_offsets[0] = 0;
        resize_touched_in_parallel(shard.gene_indices, static_cast<std::size_t>(entries));
        resize_touched_in_parallel(shard.values, static_cast<std::size_t>(entries));
        for (std::size_t batch = 0; batch < chunks.size(); batch += k_batch_chunks) {
            const std::size_t batch_end = std::min(chunks.size(), batch + k_batch_chunks);
            tbb::parallel_for(batch, batch_end,
                              [&](std::size_t index) { write(chunks[index], plans[index], shard, range.begin); });
            ctx.report(static_cast<double>(plans[batch_end - 1].last) / static_cast<double>(std::max<std::int64_t>(1, shape.num_cells)));
        }
        backends.push_back(std::make_unique<CpuBackend>(std::move(shard), shard_index));
    }
    scratches.clear();
    if (layout.distributed())
        return ShardSet::distributed(std::move(backends), kept_genes, layout.comm, layout.layout, layout.first);
    return ShardSet(std::move(backends), kept_genes);
}

/// Throws unless `values` holds one entry per cell of `source`.
void check_per_cell(const char* function, const char* name, std::size_t size, const MatrixShape& shape) {
    if (static_cast<std::int64_t>(size) != shape.num_cells)
        throw std::invalid_argument(std::string(function) + ": " + name + " has " + std::to_string(size) +
                                    " entries for " + std::to_string(shape.num_cells) + " cells");
}

/// Every rank's parts (each rank's in its own order), in rank order; this rank's own
/// `parts` are moved in. One process: `parts`.
template <typename Part, typename Write, typename Read>
std::vector<Part> gather_in_rank_order(std::vector<Part> parts, const ShardLayout& layout, Write write, Read read) {
    if (!layout.distributed()) return parts;
    ByteWriter out;
    for (const Part& part : parts) write(out, part);
    const std::vector<Bytes> gathered = layout.comm->all_gather(out.bytes());
    std::vector<Part> all;
    for (std::size_t rank = 0; rank < gathered.size(); ++rank) {
        if (static_cast<int>(rank) == layout.comm->rank()) {
            for (Part& part : parts) all.push_back(std::move(part));
            continue;
        }
        ByteReader in(gathered[rank]);
        while (!in.done()) all.push_back(read(in));
    }
    return all;
}

}  // namespace

ShardSet stream_gene_block(io::RowSource& source, const NormalizeTotalOptions& normalization,
                           std::span<const std::uint8_t> keep, const ShardLayout& layout, JobContext& ctx,
                           std::int64_t block_rows) {
    // From the packed rows of the first pass: each row's factor is its own when the
    // target is fixed (the median over a block's rows would depend on the block).
    if (const auto* packed = dynamic_cast<const PackedRowSource*>(&source);
        packed && normalization.target_sum && static_cast<std::int64_t>(keep.size()) == source.shape().num_genes)
        return packed_gene_block(packed->matrix(), keep, layout, ctx, RowFactorRule{{}, &normalization});
    return gene_block(source, keep, layout, ctx, block_rows,
                      [&](ShardSet& block, std::int64_t, std::int64_t) { normalize_total(block, normalization, ctx); });
}

ShardSet stream_gene_block(io::RowSource& source, std::span<const double> row_factors,
                           std::span<const std::uint8_t> keep, const ShardLayout& layout, JobContext& ctx,
                           std::int64_t block_rows) {
    check_per_cell("stream_gene_block", "row_factors", row_factors.size(), source.shape());
    if (const auto* packed = dynamic_cast<const PackedRowSource*>(&source);
        packed && static_cast<std::int64_t>(keep.size()) == source.shape().num_genes)
        return packed_gene_block(packed->matrix(), keep, layout, ctx, RowFactorRule{row_factors, nullptr});
    return gene_block(source, keep, layout, ctx, block_rows, [&](ShardSet& block, std::int64_t begin, std::int64_t end) {
        block.scale_rows(row_factors.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin)), ctx);
    });
}

std::vector<double> stream_row_sums(io::RowSource& source, std::span<const std::uint8_t> keep,
                                    const ShardLayout& layout, JobContext& ctx, std::int64_t block_rows) {
    const MatrixShape shape = source.shape();
    if (static_cast<std::int64_t>(keep.size()) != shape.num_genes)
        throw std::invalid_argument("stream_row_sums: keep has " + std::to_string(keep.size()) + " flags for " +
                                    std::to_string(shape.num_genes) + " genes");
    std::vector<double> sums;
    for (const RowRange& range : layout.local()) {
        BlockReader reader(source, range.begin, range.end, block_rows);
        CsrShard rows;
        std::int64_t begin = 0, end = 0;
        while (reader.next(rows, begin, end)) {
            ctx.checkpoint();
            rows.row_begin = 0;  // a one-shard set of its own
            std::vector<std::unique_ptr<Backend>> one;
            one.push_back(std::make_unique<CpuBackend>(std::move(rows), 0));
            const ShardSet block(std::move(one), shape.num_genes);
            const std::vector<double> part = numpy_float32_row_sums(block, keep, ctx);
            sums.insert(sums.end(), part.begin(), part.end());
            ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, shape.num_cells)));
        }
    }
    // The ranks' rows follow each other in rank order.
    std::vector<std::vector<double>> parts;
    parts.push_back(std::move(sums));
    parts = gather_in_rank_order(
        std::move(parts), layout, [](ByteWriter& out, const std::vector<double>& part) { out.put_vector<double>(part); },
        [](ByteReader& in) { return in.get_vector<double>(); });
    std::vector<double> all;
    all.reserve(static_cast<std::size_t>(shape.num_cells));
    for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
    check_per_cell("stream_row_sums", "the rows read", all.size(), shape);
    return all;
}

ColumnStats stream_column_stats(io::RowSource& source, std::span<const double> row_scale, const ShardLayout& layout,
                                JobContext& ctx, std::int64_t block_rows) {
    const MatrixShape shape = source.shape();
    check_per_cell("stream_column_stats", "row_scale", row_scale.size(), shape);
    const auto num_genes = static_cast<std::size_t>(shape.num_genes);
    const auto empty = [num_genes] {
        ColumnStats stats;
        stats.sum.assign(num_genes, 0.0);
        stats.sum_squares.assign(num_genes, 0.0);
        stats.nnz.assign(num_genes, 0);
        return stats;
    };
    std::vector<ColumnStats> parts;
    for (const RowRange& range : layout.local()) {
        ColumnStats part = empty();
        BlockReader reader(source, range.begin, range.end, block_rows);
        CsrShard rows;
        std::int64_t begin = 0, end = 0;
        while (reader.next(rows, begin, end)) {
            ctx.checkpoint();
            rows.row_begin = 0;
            const CpuBackend block(std::move(rows), 0);
            ColumnStatsRequest request;
            request.row_scale = row_scale.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
            accumulate(part, block.column_stats(request, ctx));
            ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, shape.num_cells)));
        }
        parts.push_back(std::move(part));
    }
    parts = gather_in_rank_order(
        std::move(parts), layout,
        put_column_stats, get_column_stats);
    if (parts.size() != layout.layout.size())
        throw std::runtime_error("stream_column_stats: gathered " + std::to_string(parts.size()) + " partials for " +
                                 std::to_string(layout.layout.size()) + " shards");
    // Added in global shard order, as ShardSet::column_stats adds its shards'.
    ColumnStats total = empty();
    for (const ColumnStats& part : parts) accumulate(total, part);
    return total;
}

std::vector<std::vector<float>> stream_gene_columns(io::RowSource& source, std::span<const std::int64_t> row_offsets,
                                                    std::span<const std::int32_t> genes, std::int64_t block_nnz,
                                                    JobContext& ctx, const ShardLayout* layout) {
    if (block_nnz < 1) throw std::invalid_argument("EngineConfig::stream_block_nnz must be >= 1");
    const MatrixShape shape = source.shape();
    // This process's rows: all of them, or its run of shards when distributed.
    const RowRange rows = layout && layout->distributed() ? layout->local_rows() : RowRange{0, shape.num_cells};
    std::vector<std::vector<float>> columns(genes.size());
    for (auto& column : columns) column.reserve(static_cast<std::size_t>(rows.size()));
    if (rows.size() > 0 && !genes.empty()) {
        // At most 2^20 blocks (split_rows_by_nnz takes an int), at most one per row.
        constexpr std::int64_t k_max_blocks = std::int64_t{1} << 20;
        const auto local_offsets = row_offsets.subspan(static_cast<std::size_t>(rows.begin), static_cast<std::size_t>(rows.size() + 1));
        const std::int64_t wanted = (local_offsets.back() - local_offsets.front()) / block_nnz + 1;
        const auto num_blocks = static_cast<int>(std::min({wanted, rows.size(), k_max_blocks}));
        for (RowRange block : split_rows_by_nnz(local_offsets, num_blocks)) {
            if (block.size() == 0) continue;
            block.begin += rows.begin;
            block.end += rows.begin;
            ctx.checkpoint();
            CsrShard read = source.read_rows(block.begin, block.end);
            read.row_begin = 0;  // a one-shard set of its own
            std::vector<CsrShard> shards;
            shards.push_back(std::move(read));
            const ShardSet values =
                ShardSet::make_cpu(ShardedCsr(MatrixShape{block.size(), shape.num_genes}, std::move(shards)));
            auto part = values.gene_columns(genes, ctx);
            for (std::size_t gene = 0; gene < genes.size(); ++gene)
                columns[gene].insert(columns[gene].end(), part[gene].begin(), part[gene].end());
            ctx.report(static_cast<double>(block.end - rows.begin) / static_cast<double>(rows.size()));
        }
    }
    if (!layout || !layout->distributed()) return columns;
    // Every rank's part of the columns, in rank order (= row order).
    ByteWriter out;
    for (const auto& column : columns) out.put_vector<float>(column);
    const std::vector<Bytes> gathered = layout->comm->all_gather(out.bytes());
    std::vector<std::vector<float>> whole(genes.size());
    for (auto& column : whole) column.reserve(static_cast<std::size_t>(shape.num_cells));
    for (std::size_t rank = 0; rank < gathered.size(); ++rank) {
        ByteReader in(gathered[rank]);
        for (auto& column : whole) {
            const std::vector<float> part = in.get_vector<float>();
            column.insert(column.end(), part.begin(), part.end());
        }
    }
    return whole;
}

io::ReadOptions read_options(const DatasetReadOptions& read) {
    io::ReadOptions options;
    options.matrix = read.matrix;
    options.genome = read.genome;
    options.feature_type = read.feature_type;
    options.make_var_names_unique = read.make_var_names_unique;
    return options;
}

}  // namespace fathom::detail
