#pragma once
/// A RowSource that serves a sorted subset of another source's rows (the cells kept by
/// the pipeline's filters), reading only the covering ranges.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/io/RowSource.hpp"

namespace fathom::detail {

class SelectedRowsSource final : public io::RowSource {
public:
    /// `rows`: strictly increasing row indices of `inner`; empty = every row.
    SelectedRowsSource(std::unique_ptr<io::RowSource> inner, std::vector<std::int64_t> rows)
        : m_inner(std::move(inner)), m_rows(std::move(rows)) {
        // Every row, in order: the same as none selected.
        if (!m_rows.empty() && static_cast<std::int64_t>(m_rows.size()) == m_inner->shape().num_cells &&
            m_rows.front() == 0 && m_rows.back() == m_inner->shape().num_cells - 1)
            m_rows.clear();
    }

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
    /// Selected rows [begin, ...) that are consecutive rows of `inner` (at least
    /// k_min_view_rows of them, or all up to `end`), as inner's view.
    std::optional<CsrRowsView> view_rows(std::int64_t begin, std::int64_t end) override {
        if (m_rows.empty()) return m_inner->view_rows(begin, end);
        if (begin < 0 || begin >= end || end > static_cast<std::int64_t>(m_rows.size())) return std::nullopt;
        const std::int64_t first = m_rows[static_cast<std::size_t>(begin)];
        std::int64_t last = begin + 1;
        while (last < end && m_rows[static_cast<std::size_t>(last)] == first + (last - begin)) ++last;
        if (last < end && last - begin < k_min_view_rows) return std::nullopt;
        std::optional<CsrRowsView> view = m_inner->view_rows(first, first + (last - begin));
        if (view) view->row_begin = begin;
        return view;
    }
    /// Gathers the selected rows from one read of the rows covering them.
    void append_rows(std::int64_t begin, std::int64_t end, CsrShard& rows) override {
        if (m_rows.empty()) return m_inner->append_rows(begin, end, rows);
        if (rows.num_rows() == 0) rows.row_begin = begin;
        if (rows.row_end() != begin)
            throw std::logic_error("SelectedRowsSource::append_rows: rows from " + std::to_string(begin) +
                                   " appended after row " + std::to_string(rows.row_end()));
        rows.num_genes = m_inner->shape().num_genes;
        if (begin >= end) return;
        const std::int64_t first = m_rows[static_cast<std::size_t>(begin)];
        const std::int64_t last = m_rows[static_cast<std::size_t>(end - 1)] + 1;
        m_covering.row_offsets.assign(1, 0);
        m_covering.gene_indices.clear();
        m_covering.values.clear();
        m_covering.row_begin = first;
        m_inner->append_rows(first, last, m_covering);
        std::int64_t entries = 0;
        for (std::int64_t row = begin; row < end; ++row) {
            const auto local = static_cast<std::size_t>(m_rows[static_cast<std::size_t>(row)] - first);
            entries += m_covering.row_offsets[local + 1] - m_covering.row_offsets[local];
        }
        rows.row_offsets.reserve(rows.row_offsets.size() + static_cast<std::size_t>(end - begin));
        rows.gene_indices.reserve(rows.gene_indices.size() + static_cast<std::size_t>(entries));
        rows.values.reserve(rows.values.size() + static_cast<std::size_t>(entries));
        for (std::int64_t row = begin; row < end; ++row) {
            const auto local = static_cast<std::size_t>(m_rows[static_cast<std::size_t>(row)] - first);
            const auto entry_begin = m_covering.row_offsets[local];
            const auto entry_end = m_covering.row_offsets[local + 1];
            rows.gene_indices.insert(rows.gene_indices.end(), m_covering.gene_indices.begin() + entry_begin,
                                     m_covering.gene_indices.begin() + entry_end);
            rows.values.insert(rows.values.end(), m_covering.values.begin() + entry_begin,
                               m_covering.values.begin() + entry_end);
            rows.row_offsets.push_back(static_cast<std::int64_t>(rows.values.size()));
        }
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

    /// Runs of consecutive rows shorter than this are copied, not viewed.
    static constexpr std::int64_t k_min_view_rows = 1024;
    std::unique_ptr<io::RowSource> m_inner;
    std::vector<std::int64_t> m_rows;
    CsrShard m_covering;  ///< the rows covering a selection, reused across reads
    mutable std::vector<std::int64_t> m_offsets;
};

}  // namespace fathom::detail
