#pragma once
/// A RowSource that serves a sorted subset of another source's rows (the cells kept by
/// the pipeline's filters), reading only the covering ranges.
#include <memory>
#include <vector>

#include "core/io/RowSource.hpp"

namespace fathom::detail {

class SelectedRowsSource final : public io::RowSource {
public:
    /// `rows`: strictly increasing row indices of `inner`; empty = every row.
    SelectedRowsSource(std::unique_ptr<io::RowSource> inner, std::vector<std::int64_t> rows)
        : m_inner(std::move(inner)), m_rows(std::move(rows)) {}

    MatrixShape shape() const override {
        MatrixShape shape = m_inner->shape();
        if (!m_rows.empty()) shape.num_cells = static_cast<std::int64_t>(m_rows.size());
        return shape;
    }
    std::int64_t nnz() const override {
        if (m_rows.empty()) return m_inner->nnz();
        ensure_offsets();
        return m_offsets.back();
    }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
        if (m_rows.empty()) return m_inner->read_rows(begin, end);
        CsrShard out;
        out.row_begin = begin;
        out.num_genes = m_inner->shape().num_genes;
        if (begin >= end) return out;
        const std::int64_t first = m_rows[static_cast<std::size_t>(begin)];
        const std::int64_t last = m_rows[static_cast<std::size_t>(end - 1)] + 1;
        const CsrShard covering = m_inner->read_rows(first, last);
        for (std::int64_t row = begin; row < end; ++row) {
            const auto local = static_cast<std::size_t>(m_rows[static_cast<std::size_t>(row)] - first);
            const auto entry_begin = covering.row_offsets[local];
            const auto entry_end = covering.row_offsets[local + 1];
            out.gene_indices.insert(out.gene_indices.end(), covering.gene_indices.begin() + entry_begin,
                                    covering.gene_indices.begin() + entry_end);
            out.values.insert(out.values.end(), covering.values.begin() + entry_begin,
                              covering.values.begin() + entry_end);
            out.row_offsets.push_back(static_cast<std::int64_t>(out.values.size()));
        }
        return out;
    }
    std::vector<std::int64_t> row_offsets() override {
        if (m_rows.empty()) return m_inner->row_offsets();
        ensure_offsets();
        return m_offsets;
    }
    std::unique_ptr<io::RowSource> clone() const override {
        return std::make_unique<SelectedRowsSource>(m_inner->clone(), m_rows);
    }

private:
    void ensure_offsets() const {
        if (!m_offsets.empty()) return;
        const std::vector<std::int64_t> inner = m_inner->row_offsets();
        m_offsets.reserve(m_rows.size() + 1);
        m_offsets.push_back(0);
        for (auto row : m_rows)
            m_offsets.push_back(m_offsets.back() + inner[static_cast<std::size_t>(row + 1)] - inner[static_cast<std::size_t>(row)]);
    }

    std::unique_ptr<io::RowSource> m_inner;
    std::vector<std::int64_t> m_rows;
    mutable std::vector<std::int64_t> m_offsets;
};

}  // namespace fathom::detail
