#pragma once
/// Gene columns already read from the raw shards, kept so that a filter whose
/// thresholds change (a histogram brush, a spin box) is re-evaluated from memory
/// instead of the shards. Not part of the public API.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/data/Table.hpp"
#include "core/engine/Engine.hpp"
#include "core/types/JobContext.hpp"

namespace fathom::detail {

struct LoadedData;

/// Columns (one float per raw row, in the layer's values) per (gene, layer), least
/// recently used dropped first once the cache holds more than its byte budget. Lives
/// in LoadedData, so opening another dataset starts an empty one. Thread-safe.
class GeneColumnCache {
public:
    using Column = std::shared_ptr<const std::vector<float>>;

    /// `max_bytes`: budget of the cached values (the newest column is kept even when it
    /// alone is larger).
    explicit GeneColumnCache(std::size_t max_bytes = std::size_t{512} << 20) : m_max_bytes(max_bytes) {}

    /// The cached column, or null; a hit becomes the most recently used.
    Column find(std::int32_t gene, ValueLayer layer) const {
        std::lock_guard lock(m_mutex);
        for (auto entry = m_entries.begin(); entry != m_entries.end(); ++entry) {
            if (entry->gene != gene || entry->layer != layer) continue;
            m_entries.splice(m_entries.begin(), m_entries, entry);
            return m_entries.front().column;
        }
        return nullptr;
    }

    /// Adds (or replaces) a column as the most recently used; drops the least recently
    /// used ones beyond the budget.
    void insert(std::int32_t gene, ValueLayer layer, Column column) {
        std::lock_guard lock(m_mutex);
        m_entries.remove_if([&](const Entry& entry) { return entry.gene == gene && entry.layer == layer; });
        m_entries.push_front({gene, layer, std::move(column)});
        std::size_t bytes = 0;
        for (auto entry = m_entries.begin(); entry != m_entries.end(); ++entry) {
            bytes += entry->column->size() * sizeof(float);
            if (bytes > m_max_bytes && entry != m_entries.begin()) {
                m_entries.erase(entry, m_entries.end());
                break;
            }
        }
    }

    /// Columns held.
    std::size_t size() const {
        std::lock_guard lock(m_mutex);
        return m_entries.size();
    }

private:
    struct Entry {
        std::int32_t gene = -1;
        ValueLayer layer = ValueLayer::LogNorm;
        Column column;
    };
    mutable std::mutex m_mutex;
    mutable std::list<Entry> m_entries;  ///< most recently used first
    std::size_t m_max_bytes;
};

/// The values of `genes` (column indices) in `layer` for every raw row of `data`,
/// from its cache; the genes it lacks are read from the shards in one
/// ShardSet::gene_columns call (under data.raw_mutex) — a streamed dataset: from its
/// file, in one pass of blocks of config.stream_block_nnz non-zeros, read as config.read
/// says — LogNorm'ed when asked (lognorm_in_place, target_sum 1e4) and cached. One column
/// per entry of `genes`. ValueLayer::Raw: `genes` index raw/var, and the columns are
/// streamed from the file's raw/X (LoadedData::raw_matrix; an error without one).
/// The genes a query in `layer` names: raw/var for ValueLayer::Raw, else var. Throws
/// std::invalid_argument starting with `what` when Raw is asked of a dataset without raw/X.
const Table& layer_var(const LoadedData& data, ValueLayer layer, const std::string& what);

std::vector<GeneColumnCache::Column> cached_gene_columns(const LoadedData& data, const EngineConfig& config,
                                                         std::span<const std::int32_t> genes, ValueLayer layer,
                                                         JobContext& ctx);

}  // namespace fathom::detail
