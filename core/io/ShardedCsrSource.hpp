#pragma once
/// A RowSource over shards already in memory (for writing pipeline outputs).
#include "core/io/RowSource.hpp"

namespace fathom::io {

/// Serves rows of an in-memory ShardedCsr; a read may span several shards. The
/// ShardedCsr must outlive the source.
class ShardedCsrSource final : public RowSource {
public:
    explicit ShardedCsrSource(const ShardedCsr& matrix) : m_matrix(&matrix) {}
    MatrixShape shape() const override { return m_matrix->shape(); }
    std::int64_t nnz() const override { return m_matrix->nnz(); }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override;
    std::vector<std::int64_t> row_offsets() override;
    std::unique_ptr<RowSource> clone() const override { return std::make_unique<ShardedCsrSource>(*m_matrix); }

private:
    const ShardedCsr* m_matrix;
};

}  // namespace fathom::io
