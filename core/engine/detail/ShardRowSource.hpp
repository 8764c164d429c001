#pragma once
/// A RowSource over the raw shards held in host memory (CPU backends), so that an
/// export writes X from memory instead of reading and decompressing the file again.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::detail {

class ShardRowSource final : public io::RowSource {
public:
    /// Whether `shards` can be read this way: one process, every shard a CPU backend.
    static bool supports(const ShardSet& shards) {
        if (shards.comm() && shards.comm()->size() > 1) return false;
        for (int index = 0; index < shards.num_local_shards(); ++index)
            if (shards.shard(shards.first_local_shard() + index).kind() != BackendKind::Cpu) return false;
        return shards.num_local_shards() > 0;
    }
    /// `shards` (supports() true) must outlive the source and stay unchanged.
    ShardRowSource(const ShardSet& shards, MatrixShape shape) : m_shape(shape) {
        for (int index = 0; index < shards.num_local_shards(); ++index)
            m_shards.push_back(&static_cast<const CpuBackend&>(shards.shard(shards.first_local_shard() + index)).shard());
        for (const CsrShard* shard : m_shards) m_nnz += shard->nnz();
    }
    MatrixShape shape() const override { return m_shape; }
    std::int64_t nnz() const override { return m_nnz; }
    CsrShard read_rows(std::int64_t begin, std::int64_t end) override {
        if (begin < 0 || end < begin || end > m_shape.num_cells)
            throw std::out_of_range("ShardRowSource::read_rows: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                    ") outside the matrix's " + std::to_string(m_shape.num_cells) + " rows");
        CsrShard out;
        out.row_begin = begin;
        out.num_genes = m_shape.num_genes;
        out.row_offsets.reserve(static_cast<std::size_t>(end - begin + 1));
        // The entries first (sizes), then one copy per shard part.
        struct Part {
            const CsrShard* shard;
            std::int64_t first, last;  ///< rows local to the shard
        };
        std::vector<Part> parts;
        std::int64_t nnz = 0;
        for (const CsrShard* shard : m_shards) {
            const std::int64_t first = std::max(begin, shard->row_begin), last = std::min(end, shard->row_end());
            if (first >= last) continue;
            parts.push_back({shard, first - shard->row_begin, last - shard->row_begin});
            nnz += shard->row_offsets[static_cast<std::size_t>(last - shard->row_begin)] -
                   shard->row_offsets[static_cast<std::size_t>(first - shard->row_begin)];
        }
        out.gene_indices.resize(static_cast<std::size_t>(nnz));
        out.values.resize(static_cast<std::size_t>(nnz));
        for (const Part& part : parts) {
            const auto& offsets = part.shard->row_offsets;
            const std::int64_t from = offsets[static_cast<std::size_t>(part.first)];
            const std::int64_t to = offsets[static_cast<std::size_t>(part.last)];
            const std::int64_t base = out.row_offsets.back() - from;
            for (std::int64_t row = part.first + 1; row <= part.last; ++row)
                out.row_offsets.push_back(base + offsets[static_cast<std::size_t>(row)]);
            const auto at = static_cast<std::size_t>(base + from);
            std::memcpy(out.gene_indices.data() + at, part.shard->gene_indices.data() + from,
                        static_cast<std::size_t>(to - from) * sizeof(std::int32_t));
            std::memcpy(out.values.data() + at, part.shard->values.data() + from,
                        static_cast<std::size_t>(to - from) * sizeof(float));
        }
        if (static_cast<std::int64_t>(out.row_offsets.size()) != end - begin + 1)
            throw std::logic_error("ShardRowSource::read_rows: the shards do not cover rows [" + std::to_string(begin) +
                                   ", " + std::to_string(end) + ")");
        return out;
    }
    /// The rows of the shard holding `begin`, up to `end` or that shard's end.
    std::optional<CsrRowsView> view_rows(std::int64_t begin, std::int64_t end) override {
        for (const CsrShard* shard : m_shards)
            if (begin >= shard->row_begin && begin < shard->row_end())
                return rows_view(*shard, begin - shard->row_begin, std::min(end, shard->row_end()) - shard->row_begin);
        return std::nullopt;
    }
    std::vector<std::int64_t> row_offsets() override {
        std::vector<std::int64_t> offsets{0};
        offsets.reserve(static_cast<std::size_t>(m_shape.num_cells + 1));
        for (const CsrShard* shard : m_shards) {
            const std::int64_t base = offsets.back();
            for (std::size_t row = 1; row < shard->row_offsets.size(); ++row) offsets.push_back(base + shard->row_offsets[row]);
        }
        return offsets;
    }
    std::unique_ptr<io::RowSource> clone() const override { return std::make_unique<ShardRowSource>(*this); }

private:
    MatrixShape m_shape;
    std::vector<const CsrShard*> m_shards;  ///< in row order, covering every row
    std::int64_t m_nnz = 0;
};

}  // namespace fathom::detail
