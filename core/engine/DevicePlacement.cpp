#include "core/engine/detail/DevicePlacement.hpp"

#include <algorithm>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/DeviceAccelerator.hpp"
#include "core/engine/detail/Streaming.hpp"
#include "core/types/Comm.hpp"
#include "core/types/errors.hpp"

namespace fathom::detail {

namespace {

/// Reads rows [range.begin, range.end) in blocks so that progress and cancellation
/// work during long reads. `offsets` (the source's row offsets, num_cells + 1) size the
/// shard's arrays once, and each block is decoded into them in place.
CsrShard read_shard(io::RowSource& source, const RowRange& range, std::span<const std::int64_t> offsets,
                    JobContext& ctx, std::int64_t total_rows) {
    constexpr std::int64_t block = 65536;
    CsrShard shard;
    shard.row_begin = range.begin;
    shard.num_genes = source.shape().num_genes;
    shard.row_offsets.reserve(static_cast<std::size_t>(range.size() + 1));
    if (static_cast<std::int64_t>(offsets.size()) > range.end) {
        const auto entries = static_cast<std::size_t>(offsets[static_cast<std::size_t>(range.end)] -
                                                      offsets[static_cast<std::size_t>(range.begin)]);
        shard.gene_indices.reserve(entries);
        shard.values.reserve(entries);
    }
    for (std::int64_t begin = range.begin; begin < range.end; begin += block) {
        ctx.checkpoint();
        const std::int64_t end = std::min(range.end, begin + block);
        source.append_rows(begin, end, shard);
        ctx.report(static_cast<double>(end) / static_cast<double>(std::max<std::int64_t>(1, total_rows)));
    }
    shard.row_begin = range.begin;
    return shard;
}

ShardSet load_cpu(io::RowSource& source, const std::vector<std::int64_t>& offsets, int num_shards, ShardBalance balance,
                  JobContext& ctx) {
    const auto ranges = plan_row_ranges(offsets, std::max(1, num_shards), balance);
    std::vector<CsrShard> shards;
    for (const auto& range : ranges) shards.push_back(read_shard(source, range, offsets, ctx, source.shape().num_cells));
    return ShardSet::make_cpu(ShardedCsr(source.shape(), std::move(shards)));
}

std::string shards_text(int count) { return std::to_string(count) + (count == 1 ? " shard" : " shards"); }

}  // namespace

ShardSet load_shards(io::RowSource& source, const std::vector<std::int64_t>& offsets, const DeviceSpec& spec,
                     const DeviceProvider* provider, JobContext& ctx, std::string& note) {
    note.clear();
    if (spec.kind == BackendKind::Cpu) return load_cpu(source, offsets, spec.num_cpu_shards, spec.balance, ctx);

    const int cpu_shards = std::max(1, spec.num_shards());
    const std::string fallback = "; ran on the CPU instead (" + shards_text(cpu_shards) + ")";
    DeviceResolution resolution;
    if (provider == nullptr) resolution.reason = "this program has no CUDA backend";
    else resolution = provider->resolve(spec);
    if (resolution.devices.empty()) {
        note = "--devices " + spec.to_string() + ": " + resolution.reason + fallback;
        return load_cpu(source, offsets, cpu_shards, spec.balance, ctx);
    }
    try {
        const auto ranges = plan_row_ranges(offsets, static_cast<int>(resolution.devices.size()), spec.balance);
        const std::int64_t num_genes = source.shape().num_genes;
        const RowBlockReader read = [&source](std::int64_t begin, std::int64_t end) { return source.read_rows(begin, end); };
        std::vector<std::unique_ptr<Backend>> backends;
        for (std::size_t shard = 0; shard < ranges.size(); ++shard)
            backends.push_back(provider->load(read, ranges[shard], offsets, num_genes, resolution.devices[shard], ctx));
        return ShardSet(std::move(backends), num_genes);
    } catch (const DeviceOutOfMemory& error) {
        // The device memory is released with the partial shards; the CPU takes over.
        note = "--devices " + spec.to_string() + ": " + error.what() + fallback;
    }
    return load_cpu(source, offsets, cpu_shards, spec.balance, ctx);
}

std::vector<int> node_rank_devices(const std::vector<int>& node_devices, int node_rank, int node_size,
                                   const std::string& host) {
    const auto count = static_cast<int>(node_devices.size());
    if (node_size < 1 || node_rank < 0 || node_rank >= node_size)
        throw std::invalid_argument("node rank " + std::to_string(node_rank) + " of " + std::to_string(node_size));
    if (count < node_size)
        throw std::invalid_argument("--devices cuda: " + std::to_string(node_size) + " ranks share node " + host +
                                    " and its " + std::to_string(count) + (count == 1 ? " GPU" : " GPUs") +
                                    "; a GPU is never shared: start at most " + std::to_string(count) +
                                    " ranks per node (e.g. mpirun --map-by ppr:" + std::to_string(count) +
                                    ":node) or use --devices cpu:N");
    const int base = count / node_size;
    const int extra = count % node_size;
    const int first = node_rank * base + std::min(node_rank, extra);
    const int size = base + (node_rank < extra ? 1 : 0);
    return {node_devices.begin() + first, node_devices.begin() + first + size};
}

ShardSet load_rank_shards(io::RowSource& source, const std::vector<std::int64_t>& offsets, const DeviceSpec& spec,
                          const DeviceProvider* provider, const std::shared_ptr<Comm>& comm, JobContext& ctx,
                          std::string& note) {
    note.clear();
    const int cpu_shards = std::max(1, spec.num_shards());
    std::vector<int> gpus;
    if (spec.kind == BackendKind::Cuda) {
        DeviceResolution resolution;
        if (provider == nullptr) resolution.reason = "this program has no CUDA backend";
        else resolution = provider->resolve(spec);
        if (resolution.devices.empty())
            note = "--devices " + spec.to_string() + ": " + resolution.reason + "; ran on the CPU instead (" +
                   shards_text(cpu_shards) + ")";
        else
            gpus = node_rank_devices(resolution.devices, comm->node_rank(), comm->node_size(), comm->host());
    }
    // Every rank's shard count, in rank order: this rank's shards follow the others'.
    const int mine = gpus.empty() ? cpu_shards : static_cast<int>(gpus.size());
    const ShardLayout shards = ShardLayout::over_ranks(offsets, mine, spec.balance, comm);
    const std::vector<RowRange>& layout = shards.layout;
    const int first = shards.first;
    const std::int64_t num_genes = source.shape().num_genes;
    std::vector<std::unique_ptr<Backend>> local;
    if (!gpus.empty()) {
        try {
            const RowBlockReader read = [&source](std::int64_t begin, std::int64_t end) { return source.read_rows(begin, end); };
            for (int index = 0; index < mine; ++index)
                local.push_back(provider->load(read, layout[static_cast<std::size_t>(first + index)], offsets, num_genes,
                                               gpus[static_cast<std::size_t>(index)], ctx));
        } catch (const DeviceOutOfMemory& error) {
            // The same rows go to CPU shards (the global cut does not change).
            local.clear();
            note = "--devices " + spec.to_string() + ": " + error.what() + "; ran on the CPU instead (" +
                   shards_text(mine) + ")";
        }
    }
    if (local.empty())
        for (int index = first; index < first + mine; ++index)
            local.push_back(std::make_unique<CpuBackend>(
                read_shard(source, layout[static_cast<std::size_t>(index)], offsets, ctx, source.shape().num_cells), index));
    return ShardSet::distributed(std::move(local), num_genes, comm, layout, first);
}

namespace {

/// CUDA device indices of the shards, in shard order.
std::vector<int> cuda_devices_of(const ShardSet& shards) {
    std::vector<int> devices;
    for (int shard = shards.first_local_shard(); shard < shards.first_local_shard() + shards.num_local_shards(); ++shard) {
        const Backend& backend = shards.shard(shard);
        const std::string name = backend.name();  // "cuda:<device>"
        if (backend.kind() == BackendKind::Cuda && name.rfind("cuda:", 0) == 0) devices.push_back(std::stoi(name.substr(5)));
    }
    return devices;
}

}  // namespace

std::unique_ptr<Accelerator> device_accelerator(const DeviceProvider* provider, const ShardSet& shards) {
    if (shards.comm() && shards.comm()->size() > 1) return nullptr;
    std::vector<int> devices = cuda_devices_of(shards);
    if (provider == nullptr || devices.empty()) return nullptr;
    return std::make_unique<DeviceAccelerator>(*provider, std::move(devices));
}

}  // namespace fathom::detail
