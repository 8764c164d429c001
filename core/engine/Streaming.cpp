#include "core/engine/detail/Streaming.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <stdexcept>

#include "core/backend/CpuBackend.hpp"

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
    /// read error of that block.
    bool next(CsrShard& rows, std::int64_t& first, std::int64_t& last) {
        if (!m_pending.valid()) return false;
        first = m_pending_begin;
        last = m_pending_end;
        rows = m_pending.get();
        launch();
        return true;
    }

private:
    void launch() {
        if (m_next >= m_end) return;
        m_pending_begin = m_next;
        m_pending_end = std::min(m_end, m_next + m_block_rows);
        m_next = m_pending_end;
        m_pending = std::async(std::launch::async, [this, begin = m_pending_begin, end = m_pending_end] {
            return m_source.read_rows(begin, end);
        });
    }

    io::RowSource& m_source;
    std::int64_t m_next = 0, m_end = 0, m_block_rows = 1;
    std::int64_t m_pending_begin = 0, m_pending_end = 0;
    std::future<CsrShard> m_pending;
};

}  // namespace

StreamedStats stream_statistics(io::RowSource& source, std::span<const std::string> gene_names, JobContext& ctx,
                                std::int64_t block_rows) {
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
    std::vector<double> gene_totals(num_genes, 0.0);
    std::vector<std::int64_t> gene_cells(num_genes, 0);
    stats.sum_inverse_total.assign(num_genes, 0.0);
    stats.sum_squares_inverse_total.assign(num_genes, 0.0);

    BlockReader reader(source, 0, shape.num_cells, block_rows);
    CsrShard rows_read;
    std::int64_t begin = 0, end = 0;
    while (reader.next(rows_read, begin, end)) {
        ctx.checkpoint();
        // One block as a temporary CPU backend, so the statistics are the same
        // primitives (and the same arithmetic) as the in-memory path.
        CpuBackend block(std::move(rows_read), 0);
        const RowStats rows = block.row_stats(qc.mito_genes, ctx);
        std::vector<double> inverse_total(rows.total.size());
        for (std::size_t row = 0; row < rows.total.size(); ++row) {
            inverse_total[row] = rows.total[row] > 0.0 ? 1.0 / rows.total[row] : 0.0;
            qc.total_counts.push_back(rows.total[row]);
            qc.n_genes_by_counts.push_back(rows.nnz[row]);
            qc.total_counts_mt.push_back(rows.subset_total[row]);
            qc.pct_counts_mt.push_back(rows.total[row] > 0.0 ? 100.0 * rows.subset_total[row] / rows.total[row]
                                                             : std::nan(""));
        }
        const ColumnStats raw = block.column_stats(ColumnStatsRequest{}, ctx);
        ColumnStatsRequest scaled;
        scaled.row_scale = inverse_total;
        const ColumnStats normalized = block.column_stats(scaled, ctx);
        for (std::size_t gene = 0; gene < num_genes; ++gene) {
            gene_totals[gene] += raw.sum[gene];
            gene_cells[gene] += raw.nnz[gene];
            stats.sum_inverse_total[gene] += normalized.sum[gene];
            stats.sum_squares_inverse_total[gene] += normalized.sum_squares[gene];
        }
        if (stats.integer_counts) {
            const CsrShard& values = block.shard();
            for (float value : values.values)
                if (value < 0.0f || value != std::floor(value)) {
                    stats.integer_counts = false;
                    break;
                }
        }
        ctx.report(static_cast<double>(end) / static_cast<double>(shape.num_cells));
    }
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

ShardSet stream_gene_block(io::RowSource& source, const NormalizeTotalOptions& normalization,
                           std::span<const std::uint8_t> keep, const std::vector<RowRange>& ranges, JobContext& ctx,
                           std::int64_t block_rows) {
    const MatrixShape shape = source.shape();
    std::int64_t kept_genes = 0;
    for (auto flag : keep) kept_genes += flag;
    std::vector<std::unique_ptr<Backend>> backends;
    for (std::size_t shard_index = 0; shard_index < ranges.size(); ++shard_index) {
        const RowRange& range = ranges[shard_index];
        CsrShard shard;
        shard.row_begin = range.begin;
        shard.num_genes = kept_genes;
        BlockReader reader(source, range.begin, range.end, block_rows);
        CsrShard rows;
        std::int64_t begin = 0, end = 0;
        while (reader.next(rows, begin, end)) {
            ctx.checkpoint();
            rows.row_begin = 0;  // a one-shard set of its own
            std::vector<std::unique_ptr<Backend>> one;
            one.push_back(std::make_unique<CpuBackend>(std::move(rows), 0));
            ShardSet block(std::move(one), shape.num_genes);
            normalize_total(block, normalization, ctx);
            block.subset_columns(keep, ctx);
            const CsrShard& part = static_cast<const CpuBackend&>(block.shard(0)).shard();
            const std::int64_t base = shard.row_offsets.back();
            for (std::size_t row = 1; row < part.row_offsets.size(); ++row)
                shard.row_offsets.push_back(base + part.row_offsets[row]);
            shard.gene_indices.insert(shard.gene_indices.end(), part.gene_indices.begin(), part.gene_indices.end());
            shard.values.insert(shard.values.end(), part.values.begin(), part.values.end());
            ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, shape.num_cells)));
        }
        shard.row_offsets.shrink_to_fit();
        shard.gene_indices.shrink_to_fit();
        shard.values.shrink_to_fit();
        backends.push_back(std::make_unique<CpuBackend>(std::move(shard), static_cast<int>(shard_index)));
    }
    return ShardSet(std::move(backends), kept_genes);
}

std::vector<std::vector<float>> stream_gene_columns(io::RowSource& source, std::span<const std::int64_t> row_offsets,
                                                    std::span<const std::int32_t> genes, std::int64_t block_nnz,
                                                    JobContext& ctx) {
    if (block_nnz < 1) throw std::invalid_argument("EngineConfig::stream_block_nnz must be >= 1");
    const MatrixShape shape = source.shape();
    std::vector<std::vector<float>> columns(genes.size());
    for (auto& column : columns) column.reserve(static_cast<std::size_t>(shape.num_cells));
    if (shape.num_cells == 0 || genes.empty()) return columns;
    // At most 2^20 blocks (split_rows_by_nnz takes an int), at most one per row.
    constexpr std::int64_t k_max_blocks = std::int64_t{1} << 20;
    const std::int64_t wanted = row_offsets.back() / block_nnz + 1;
    const auto num_blocks = static_cast<int>(std::min({wanted, shape.num_cells, k_max_blocks}));
    for (const RowRange& block : split_rows_by_nnz(row_offsets, num_blocks)) {
        if (block.size() == 0) continue;
        ctx.checkpoint();
        CsrShard rows = source.read_rows(block.begin, block.end);
        rows.row_begin = 0;  // a one-shard set of its own
        std::vector<CsrShard> shards;
        shards.push_back(std::move(rows));
        const ShardSet values = ShardSet::make_cpu(ShardedCsr(MatrixShape{block.size(), shape.num_genes}, std::move(shards)));
        auto part = values.gene_columns(genes, ctx);
        for (std::size_t gene = 0; gene < genes.size(); ++gene)
            columns[gene].insert(columns[gene].end(), part[gene].begin(), part[gene].end());
        ctx.report(static_cast<double>(block.end) / static_cast<double>(shape.num_cells));
    }
    return columns;
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
