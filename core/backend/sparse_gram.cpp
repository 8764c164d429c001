#include "core/backend/sparse_gram.hpp"

#include <algorithm>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace fathom::detail {

namespace {

/// Rows of a chunk: the dense copy of a panel's part of the chunk is kChunkRows x
/// kGramPanelWidth floats (256 KiB), in a core's L2 cache.
constexpr std::int64_t kChunkRows = 128;
/// Doubles updated together by the kernel (kept in registers across a column's entries).
constexpr std::int64_t kLanes = 16;
static_assert(kGramPanelWidth % kLanes == 0);

/// The block's stored entries as CSR with block column numbers: the shard's own arrays
/// when every gene is in the block, in order; a compact copy otherwise.
struct BlockEntries {
    const std::int64_t* offsets = nullptr;
    const std::int32_t* columns = nullptr;
    const float* values = nullptr;
    std::vector<std::int64_t> own_offsets;
    std::vector<std::int32_t> own_columns;
    std::vector<float> own_values;
};

BlockEntries block_entries(const CsrShard& shard, std::span<const std::int32_t> map, std::int64_t block_size) {
    BlockEntries entries;
    if (block_size == shard.num_genes) {  // map is the identity (sorted, unique, all genes)
        entries.offsets = shard.row_offsets.data();
        entries.columns = shard.gene_indices.data();
        entries.values = shard.values.data();
        return entries;
    }
    const auto rows = static_cast<std::size_t>(shard.num_rows());
    entries.own_offsets.assign(rows + 1, 0);
    for (std::size_t row = 0; row < rows; ++row) {
        for (auto entry = shard.row_offsets[row]; entry < shard.row_offsets[row + 1]; ++entry) {
            const auto column = map[static_cast<std::size_t>(shard.gene_indices[static_cast<std::size_t>(entry)])];
            if (column < 0) continue;
            entries.own_columns.push_back(column);
            entries.own_values.push_back(shard.values[static_cast<std::size_t>(entry)]);
        }
        entries.own_offsets[row + 1] = static_cast<std::int64_t>(entries.own_columns.size());
    }
    entries.offsets = entries.own_offsets.data();
    entries.columns = entries.own_columns.data();
    entries.values = entries.own_values.data();
    return entries;
}

/// rectangle[i][t] += value * dense[row][t] for every entry (row, value) of chunk column
/// i (slots i * kChunkRows .. + counts[i] of entry_rows / entry_values), for t in
/// [0, kGramPanelWidth) -- from i's lane group on when `diagonal` (the upper triangle and
/// a few entries below it, which the caller ignores). `dense` holds the stored float32
/// values as they are (half the bytes to stream; the products are the same doubles).
/// Each t sums its products in entry (row) order, one multiply and one add each (the
/// file is compiled without FMA contraction), so every clone gives the same bits; the
/// SIMD clones keep kLanes accumulators in registers over a column's entries.
__attribute__((target_clones("avx512f", "avx2", "default"))) void accumulate_rectangle(
    double* rectangle, const float* dense, const std::int32_t* entry_rows, const double* entry_values,
    const std::int32_t* counts, std::int64_t columns, bool diagonal) {
    for (std::int64_t column = 0; column < columns; ++column) {
        const std::int64_t begin = column * kChunkRows;
        const std::int64_t end = begin + counts[column];
        if (begin == end) continue;
        double* target = rectangle + column * kGramPanelWidth;
        for (std::int64_t group = diagonal ? column / kLanes * kLanes : 0; group < kGramPanelWidth; group += kLanes) {
            double sums[kLanes];
            for (std::int64_t lane = 0; lane < kLanes; ++lane) sums[lane] = target[group + lane];
            for (std::int64_t entry = begin; entry < end; ++entry) {
                const double value = entry_values[entry];
                const float* source = dense + static_cast<std::int64_t>(entry_rows[entry]) * kGramPanelWidth + group;
                for (std::int64_t lane = 0; lane < kLanes; ++lane) sums[lane] += value * static_cast<double>(source[lane]);
            }
            for (std::int64_t lane = 0; lane < kLanes; ++lane) target[group + lane] = sums[lane];
        }
    }
}

}  // namespace

SparseGram sparse_gram(const CsrShard& shard, std::span<const std::int32_t> map, std::int64_t block_size, JobContext& ctx) {
    const std::int64_t rows = shard.num_rows();
    const auto block = static_cast<std::size_t>(block_size);
    SparseGram out;
    out.cross.assign(block * block, 0.0);
    out.sums.assign(block, 0.0);
    if (rows == 0 || block == 0) return out;
    ctx.checkpoint();
    const BlockEntries entries = block_entries(shard, map, block_size);

    // cuts[row * (panels + 1) + p]: the row's first entry in panel p (columns sorted).
    const std::int64_t panels = (block_size + kGramPanelWidth - 1) / kGramPanelWidth;
    const auto stride = static_cast<std::size_t>(panels + 1);
    std::vector<std::int64_t> cuts(static_cast<std::size_t>(rows) * stride);
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, 1024), [&](const tbb::blocked_range<std::int64_t>& range) {
        for (std::int64_t row = range.begin(); row < range.end(); ++row) {
            std::int64_t* cut = cuts.data() + static_cast<std::size_t>(row) * stride;
            auto entry = entries.offsets[row];
            const auto end = entries.offsets[row + 1];
            for (std::int64_t panel = 0; panel < panels; ++panel) {
                const std::int64_t first_column = panel * kGramPanelWidth;
                while (entry < end && entries.columns[entry] < first_column) ++entry;
                cut[panel] = entry;
            }
            cut[panels] = end;
        }
    });

    // One task per panel pair (first <= second), upper triangle of panels.
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::int64_t first = 0; first < panels; ++first)
        for (std::int64_t second = first; second < panels; ++second) pairs.emplace_back(first, second);
    tbb::parallel_for(std::size_t{0}, pairs.size(), [&](std::size_t task) {
        const auto [first, second] = pairs[task];
        const bool diagonal = first == second;
        const std::int64_t first_begin = first * kGramPanelWidth;
        const std::int64_t second_begin = second * kGramPanelWidth;
        const std::int64_t first_width = std::min(kGramPanelWidth, block_size - first_begin);
        const std::int64_t second_width = std::min(kGramPanelWidth, block_size - second_begin);
        // Rectangle and dense chunk are kGramPanelWidth wide (zeros past a narrow last panel).
        std::vector<double> rectangle(static_cast<std::size_t>(kGramPanelWidth * kGramPanelWidth), 0.0);
        std::vector<float> dense(static_cast<std::size_t>(kChunkRows * kGramPanelWidth), 0.0f);
        std::vector<double> sums(diagonal ? static_cast<std::size_t>(first_width) : 0, 0.0);
        // The chunk's entries of the first panel by column, in row order: column c's
        // entries are slots [c * kChunkRows, c * kChunkRows + counts[c]).
        std::vector<std::int32_t> counts(static_cast<std::size_t>(kGramPanelWidth));
        std::vector<std::int32_t> entry_rows(static_cast<std::size_t>(kGramPanelWidth * kChunkRows));
        std::vector<double> entry_values(static_cast<std::size_t>(kGramPanelWidth * kChunkRows));
        for (std::int64_t chunk = 0; chunk < rows; chunk += kChunkRows) {
            ctx.checkpoint();
            const std::int64_t chunk_rows = std::min(kChunkRows, rows - chunk);
            std::fill(counts.begin(), counts.end(), 0);
            for (std::int64_t local = 0; local < chunk_rows; ++local) {
                const std::int64_t* cut = cuts.data() + static_cast<std::size_t>(chunk + local) * stride;
                for (auto entry = cut[first]; entry < cut[first + 1]; ++entry) {
                    const auto column = static_cast<std::size_t>(entries.columns[entry] - first_begin);
                    const double value = entries.values[entry];
                    const auto slot = column * static_cast<std::size_t>(kChunkRows) + static_cast<std::size_t>(counts[column]++);
                    entry_rows[slot] = static_cast<std::int32_t>(local);
                    entry_values[slot] = value;
                    if (diagonal) sums[column] += value;
                }
                float* dense_row = dense.data() + local * kGramPanelWidth;
                for (auto entry = cut[second]; entry < cut[second + 1]; ++entry)
                    dense_row[entries.columns[entry] - second_begin] = entries.values[entry];
            }
            accumulate_rectangle(rectangle.data(), dense.data(), entry_rows.data(), entry_values.data(), counts.data(),
                                 first_width, diagonal);
            // Back to zeros for the next chunk (only the entries set).
            for (std::int64_t local = 0; local < chunk_rows; ++local) {
                const std::int64_t* cut = cuts.data() + static_cast<std::size_t>(chunk + local) * stride;
                float* dense_row = dense.data() + local * kGramPanelWidth;
                for (auto entry = cut[second]; entry < cut[second + 1]; ++entry)
                    dense_row[entries.columns[entry] - second_begin] = 0.0f;
            }
        }
        for (std::int64_t a = 0; a < first_width; ++a) {
            const auto global_a = static_cast<std::size_t>(first_begin + a);
            if (diagonal) out.sums[global_a] = sums[static_cast<std::size_t>(a)];
            for (std::int64_t b = diagonal ? a : 0; b < second_width; ++b) {
                const auto global_b = static_cast<std::size_t>(second_begin + b);
                const double value = rectangle[static_cast<std::size_t>(a * kGramPanelWidth + b)];
                out.cross[global_a * block + global_b] = value;
                out.cross[global_b * block + global_a] = value;
            }
        }
    });
    return out;
}

}  // namespace fathom::detail
