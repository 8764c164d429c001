#pragma once
/// The ordered set of shard backends that together hold a cells x genes matrix, and
/// the reductions over them. Partials are combined in shard order (0, 1, 2, ...) with
/// double accumulators, so results agree across shard counts up to rounding and are
/// bit-identical from run to run.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/Backend.hpp"
#include "core/data/ShardedCsr.hpp"
#include "core/types/Comm.hpp"

namespace fathom {

/// How rows are split between shards.
enum class ShardBalance {
    ByNnz,   ///< about equal non-zeros per shard (split_rows_by_nnz); the default
    Evenly,  ///< about equal rows per shard (split_rows_evenly)
};

/// The devices to run on, as given to --devices: "cpu" (= "cpu:1"), "cpu:N" (N CPU
/// shards, N >= 1), "cuda" (every visible CUDA device), "cuda:I[,J...]" (those device
/// indices, distinct, >= 0).
struct DeviceSpec {
    BackendKind kind = BackendKind::Cpu;
    int num_cpu_shards = 1;             ///< Cpu: number of shards
    std::vector<int> cuda_devices;      ///< Cuda: device indices; empty = every visible device
    ShardBalance balance = ShardBalance::ByNnz;

    /// Parses the text; throws std::invalid_argument naming --devices and the text,
    /// e.g. "--devices 'cpu:0': the number of CPU shards must be >= 1".
    static DeviceSpec parse(std::string_view text);
    /// The canonical text ("cpu:4", "cuda:0,1", "cuda").
    std::string to_string() const;
    /// Shards this spec makes: num_cpu_shards, or cuda_devices.size() (0 when "every
    /// visible device" is not resolved yet).
    int num_shards() const noexcept;
};

/// Row ranges for the shards of `spec` given the matrix's global row offsets
/// (num_cells + 1 entries), split by nnz or evenly as spec.balance says.
std::vector<RowRange> plan_row_ranges(std::span<const std::int64_t> row_offsets, int num_shards,
                                      ShardBalance balance = ShardBalance::ByNnz);

/// Ordered shard backends. Move-only (it owns device memory through the backends).
/// Every per-row span passed to a ShardSet function is GLOBAL: num_cells() entries in
/// row order; ShardSet slices it for each shard. Results are global too.
class ShardSet {
public:
    ShardSet() = default;
    /// Takes the backends in row order; throws std::invalid_argument unless they are
    /// contiguous from row 0 and agree on the number of genes. num_genes is used when
    /// the set is empty.
    explicit ShardSet(std::vector<std::unique_ptr<Backend>> backends, std::int64_t num_genes = 0);
    /// One rank's part of a set spread over the ranks of `comm`: the set has one shard per
    /// entry of `layout` (global row ranges, contiguous from row 0, in global shard order)
    /// and this rank holds the shards [first_shard, first_shard + local.size()). Every
    /// reduction gathers the other ranks' per-shard partials and combines all of them in
    /// global shard order, so the results are bit-identical to one process holding the
    /// same shards. Functions are collective: every rank calls them in the same order.
    static ShardSet distributed(std::vector<std::unique_ptr<Backend>> local, std::int64_t num_genes,
                                std::shared_ptr<Comm> comm, std::vector<RowRange> layout, int first_shard);
    ShardSet(ShardSet&&) noexcept = default;
    ShardSet& operator=(ShardSet&&) noexcept = default;

    /// One CpuBackend per shard of `matrix` (shard k is named "cpu:k").
    static ShardSet make_cpu(ShardedCsr matrix);
    /// Deep copy: every backend cloned on its device.
    ShardSet clone() const;
    /// Deep copy holding only the genes with keep[g] = 1 (num_genes() flags), as
    /// clone() followed by subset_columns() but without copying the dropped columns.
    ShardSet clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const;

    /// Shards of the whole set (on every rank when distributed).
    int num_shards() const noexcept { return m_comm ? static_cast<int>(m_layout.size()) : static_cast<int>(m_backends.size()); }
    /// Shards this process holds: global indices [first_local_shard(), + num_local_shards()).
    int num_local_shards() const noexcept { return static_cast<int>(m_backends.size()); }
    int first_local_shard() const noexcept { return m_first; }
    bool is_local(int index) const noexcept { return index >= m_first && index < m_first + num_local_shards(); }
    /// Spread over ranks (distributed()); null for a set held by one process.
    const std::shared_ptr<Comm>& comm() const noexcept { return m_comm; }
    /// The shard of global index `index`; throws std::out_of_range for a shard another
    /// rank holds.
    Backend& shard(int index) { return *m_backends.at(local_index(index)); }
    const Backend& shard(int index) const { return *m_backends.at(local_index(index)); }
    MatrixShape shape() const noexcept;
    std::int64_t num_cells() const noexcept { return shape().num_cells; }
    std::int64_t num_genes() const noexcept { return m_num_genes; }
    /// Stored entries of the whole set (collective when distributed).
    std::int64_t nnz() const;
    /// Current row range of every shard, in order.
    std::vector<RowRange> row_ranges() const;
    /// "cpu:0,cpu:1" — the backends' names joined.
    std::string describe() const;
    /// Host copy of the whole matrix, shard by shard (outputs and tests only). A
    /// distributed set never gathers its matrix: it throws std::logic_error.
    ShardedCsr to_host() const;
    /// One line per shard that left its device because the device ran out of memory
    /// (see "in-place, on every shard"), in the order it happened; copies inherit them.
    const std::vector<std::string>& device_notes() const noexcept { return m_device_notes; }

    // ---- reductions (see Backend for each primitive's meaning) ----
    /// Concatenated per-row statistics (global rows).
    RowStats row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const;
    /// Column statistics summed over shards; request.row_scale / row_mask are global.
    ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const;
    /// Per-group statistics summed over shards; labels is global (num_cells entries).
    GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                        const ColumnStatsRequest& request, JobContext& ctx) const;
    /// One gene's values for every cell (num_cells entries).
    std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const;
    /// Several genes' values for every cell: one column (num_cells entries) per entry of
    /// `genes`, in the order given (Backend::gene_columns on every shard, concatenated).
    std::vector<std::vector<float>> gene_columns(std::span<const std::int32_t> genes, JobContext& ctx) const;
    /// Gram matrix and column sums summed over shards.
    GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const;
    /// Scores of every cell (num_cells x components), shard results stacked in order.
    DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const;

    // ---- in-place, on every shard ----
    // When a device shard runs out of memory in one of these steps (it is then unchanged,
    // see Backend), the shard is copied to host memory as a CpuBackend of the same index,
    // the step runs there, and the shard stays on the CPU for every later step. The job's
    // progress message and device_notes() say so. Results equal the CPU run's.
    /// factors is global (num_cells entries).
    void scale_rows(std::span<const double> factors, JobContext& ctx);
    void log1p(JobContext& ctx);
    /// keep has num_genes() flags.
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx);
    /// keep has num_cells() flags (global); the shards are renumbered contiguously.
    void subset_rows(std::span<const std::uint8_t> keep, JobContext& ctx);

private:
    /// Runs fn(shard_index) for every shard, concurrently across shards; rethrows the
    /// first exception (Cancelled included) after all have finished.
    void for_each_shard(const std::function<void(int)>& fn) const;
    /// Runs the in-place `step` on every shard concurrently (fn(backend, shard_index)),
    /// moving a shard whose device runs out of memory to the CPU as described above.
    void for_each_shard_in_place(const char* step, JobContext& ctx, const std::function<void(Backend&, int)>& fn);

    std::size_t local_index(int index) const;
    /// Every shard's partial in global shard order: `local` (one per local shard) on one
    /// process; gathered from every rank (write / read serialise one partial) when
    /// distributed.
    template <typename Part, typename Write, typename Read>
    std::vector<Part> all_parts(std::vector<Part> local, Write write, Read read) const;
    /// Copies the distribution (comm, layout, first shard) of `other`.
    void share_layout(const ShardSet& other);

    std::vector<std::unique_ptr<Backend>> m_backends;
    std::int64_t m_num_genes = 0;
    std::vector<std::string> m_device_notes;
    // Distributed sets only.
    std::shared_ptr<Comm> m_comm;
    std::vector<RowRange> m_layout;   ///< global row range of every shard
    int m_first = 0;                  ///< global index of m_backends[0]
};

template <typename Part, typename Write, typename Read>
std::vector<Part> ShardSet::all_parts(std::vector<Part> local, Write write, Read read) const {
    if (!m_comm) return local;
    ByteWriter out;
    for (const Part& part : local) write(out, part);
    const std::vector<Bytes> gathered = m_comm->all_gather(out.bytes());
    std::vector<Part> parts;
    parts.reserve(m_layout.size());
    for (std::size_t rank = 0; rank < gathered.size(); ++rank) {
        if (static_cast<int>(rank) == m_comm->rank()) {
            for (Part& part : local) parts.push_back(std::move(part));
            continue;
        }
        ByteReader in(gathered[rank]);
        while (!in.done()) parts.push_back(read(in));
    }
    if (parts.size() != m_layout.size())
        throw std::runtime_error("ShardSet: gathered " + std::to_string(parts.size()) + " partials for " +
                                 std::to_string(m_layout.size()) + " shards");
    return parts;
}

/// Adds `other` into `total` (same number of genes). Used by the reductions; public
/// for backends and tests.
void accumulate(ColumnStats& total, const ColumnStats& other);
void accumulate(GroupColumnStats& total, const GroupColumnStats& other);
void accumulate(GramResult& total, const GramResult& other);

}  // namespace fathom
