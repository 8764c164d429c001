#pragma once
/// The reference backend: one shard in host memory, multi-threaded with oneTBB.
/// Work inside a shard is split into fixed row blocks whose partials are combined in
/// block order (never floating-point atomics), so the number of threads does not
/// change any result.
#include <memory>

#include "core/backend/Backend.hpp"

namespace fathom {

/// A Backend over a CsrShard held in host memory. See Backend for every primitive.
class CpuBackend final : public Backend {
public:
    /// Takes ownership of the shard; `index` names it ("cpu:<index>"). Throws
    /// std::invalid_argument when the shard breaks CsrShard's invariants.
    CpuBackend(CsrShard shard, int index);

    std::string name() const override;
    BackendKind kind() const noexcept override { return BackendKind::Cpu; }
    std::int64_t row_begin() const noexcept override { return m_shard.row_begin; }
    std::int64_t num_rows() const noexcept override { return m_shard.num_rows(); }
    std::int64_t num_genes() const noexcept override { return m_shard.num_genes; }
    std::int64_t nnz() const noexcept override { return m_shard.nnz(); }
    /// The copy of a valid shard is not validated again.
    std::unique_ptr<Backend> clone() const override;
    std::unique_ptr<Backend> clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const override;
    CsrShard to_host() const override { return m_shard; }
    /// Checks the values in place (no copy).
    bool values_are_counts(JobContext& ctx) const override;

    RowStats row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const override;
    ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const override;
    GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                        const ColumnStatsRequest& request, JobContext& ctx) const override;
    std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const override;
    /// One pass over the rows in parallel blocks (backend/gene_columns.cpp).
    std::vector<std::vector<float>> gene_columns(std::span<const std::int32_t> genes, JobContext& ctx) const override;

    GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const override;
    DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const override;

    void scale_rows(std::span<const double> factors, JobContext& ctx) override;
    void log1p(JobContext& ctx) override;
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) override;
    void subset_rows(std::span<const std::uint8_t> keep, std::int64_t new_row_begin, JobContext& ctx) override;

    /// A streamed block's first-pass statistics in one pass over its entries (each row's
    /// entries are read twice while they are in cache). The same arithmetic, lanes and
    /// order as row_stats(gene_mask), the raw column_stats (sum and nnz), the column_stats
    /// with each row scaled by 1 / its total (0 for an empty row; sum and sum_squares)
    /// and values_are_counts, so the bits are theirs.
    struct CountStats {
        RowStats rows;
        std::vector<double> raw_sum;
        std::vector<std::int64_t> raw_nnz;
        std::vector<double> scaled_sum, scaled_sum_squares;
        bool counts = true;
    };
    CountStats count_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const;

    /// Read access for tests and for code that must see the shard itself.
    const CsrShard& shard() const noexcept { return m_shard; }
    /// Gives the shard back and leaves the backend without rows: a streaming pass reuses
    /// one block's arrays for a later block instead of touching fresh memory.
    CsrShard take_shard() noexcept {
        CsrShard out = std::move(m_shard);
        m_shard = CsrShard{};
        m_shard.num_genes = out.num_genes;
        return out;
    }

private:
    struct Trusted {};
    /// For copies of a valid shard: no validation pass.
    CpuBackend(CsrShard shard, int index, Trusted) : m_shard(std::move(shard)), m_index(index) {}
    /// The shard's rows with only the kept columns, renumbered (keep: num_genes flags).
    CsrShard columns_kept(std::span<const std::uint8_t> keep, JobContext& ctx) const;

    CsrShard m_shard;
    int m_index = 0;
};

}  // namespace fathom
