// A matrix whose total nnz passes 2^31, served by a generated row source so that no
// more than a few rows are ever stored: int64 offsets all the way through.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "core/data/ShardedCsr.hpp"
#include "core/io/RowSource.hpp"

namespace fathom {
namespace {

/// Row r holds `per_row` entries at genes (r + j * stride) mod num_genes, value 1 + j.
class GeneratedSource final : public io::RowSource {
public:
    GeneratedSource(std::int64_t cells, std::int64_t genes, std::int64_t per_row)
        : m_cells(cells), m_genes(genes), m_per_row(per_row) {}
    MatrixShape shape() const override { return {m_cells, m_genes}; }
    std::int64_t nnz() const override { return m_cells * m_per_row; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
        CsrShard shard;
        shard.row_begin = begin;
        shard.num_genes = m_genes;
        const std::int64_t stride = m_genes / m_per_row;
        for (std::int64_t row = begin; row < end; ++row) {
            std::vector<std::pair<std::int32_t, float>> entries;
            for (std::int64_t j = 0; j < m_per_row; ++j)
                entries.emplace_back(static_cast<std::int32_t>((row + j * stride) % m_genes), static_cast<float>(1 + j));
            std::sort(entries.begin(), entries.end());
            for (const auto& [gene, value] : entries) {
                shard.gene_indices.push_back(gene);
                shard.values.push_back(value);
            }
            shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
        }
        return shard;
    }
    std::vector<std::int64_t> row_offsets() override {
        std::vector<std::int64_t> offsets(static_cast<std::size_t>(m_cells + 1));
        for (std::int64_t row = 0; row <= m_cells; ++row) offsets[static_cast<std::size_t>(row)] = row * m_per_row;
        return offsets;
    }
    std::unique_ptr<io::RowSource> clone() const override {
        return std::make_unique<GeneratedSource>(m_cells, m_genes, m_per_row);
    }

private:
    std::int64_t m_cells, m_genes, m_per_row;
};

TEST(LargeNnz, OffsetsAndShardPlansPass2To31WithoutStoringTheValues) {
    // 1.3M cells x 3000 non-zeros = 3.9e9 (beyond the 1.3M-cell mouse brain's 2.6e9).
    GeneratedSource source(1'300'000, 28'000, 3'000);
    const std::int64_t limit = std::numeric_limits<std::int32_t>::max();
    ASSERT_GT(source.nnz(), limit);
    const auto offsets = source.row_offsets();
    EXPECT_EQ(offsets.back(), source.nnz());
    const auto ranges = split_rows_by_nnz(offsets, 3);
    ASSERT_EQ(ranges.size(), 3u);
    // Balanced by nnz: each shard near a third of 2.6e9, boundaries past 2^31 exact.
    for (const auto& range : ranges) {
        const std::int64_t shard_nnz = offsets[static_cast<std::size_t>(range.end)] - offsets[static_cast<std::size_t>(range.begin)];
        EXPECT_NEAR(static_cast<double>(shard_nnz), source.nnz() / 3.0, 3000.0);
    }
    EXPECT_GT(offsets[static_cast<std::size_t>(ranges[2].begin)], limit);

    // Rows whose global entries lie beyond 2^31 read back with correct local offsets.
    const std::int64_t late = 1'299'990;
    ASSERT_GT(offsets[static_cast<std::size_t>(late)], limit);
    CsrShard tail = source.read_rows(late, late + 10);
    tail.check_invariants();
    EXPECT_EQ(tail.row_begin, late);
    EXPECT_EQ(tail.nnz(), 10 * 3'000);

    // A ShardedCsr made of small shards at the end still reports int64 totals.
    CsrShard head = source.read_rows(0, 2);
    CsrShard empty_middle;
    empty_middle.row_begin = 2;
    empty_middle.num_genes = 28'000;
    empty_middle.row_offsets.assign(static_cast<std::size_t>(late - 2 + 1), 0);
    ShardedCsr matrix(MatrixShape{late + 10, 28'000}, {head, empty_middle, tail});
    EXPECT_EQ(matrix.nnz(), 12 * 3'000);
    EXPECT_EQ(matrix.num_shards(), 3);
}

}  // namespace
}  // namespace fathom
