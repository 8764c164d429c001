#pragma once
/// Placing the opened matrix's rows as shards on the requested devices (engine
/// internals; Engine::open).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/Accelerator.hpp"
#include "core/backend/DeviceProvider.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::detail {

/// Loads every row of `source` (global row offsets `offsets`) as shards on `spec`'s
/// devices: CPU shards for "cpu:N"; for "cuda...", one shard per usable device through
/// `provider`, read straight from the file in blocks. When the provider is null, no
/// device is usable or a device runs out of memory while loading, the rows go to CPU
/// shards (one per requested device) and `note` says why, e.g.
/// "--devices cuda:0: no usable CUDA device (...); ran on the CPU instead (1 shard)".
/// `note` is cleared otherwise. Other device failures propagate (DeviceError).
ShardSet load_shards(io::RowSource& source, const std::vector<std::int64_t>& offsets, const DeviceSpec& spec,
                     const DeviceProvider* provider, JobContext& ctx, std::string& note);

/// This rank's shards of a run over the ranks of `comm`: the rows are cut into
/// spec.num_shards() x comm->size() global shards (plan_row_ranges, the same cut as one
/// process with that many shards) and this rank reads only the rows of its own run of
/// them, [rank x num_shards, (rank + 1) x num_shards), as CPU shards. Devices other than
/// the CPU are refused for now (std::invalid_argument naming --devices).
ShardSet load_rank_shards(io::RowSource& source, const std::vector<std::int64_t>& offsets, const DeviceSpec& spec,
                          const std::shared_ptr<Comm>& comm, JobContext& ctx);

/// The accelerator of the CUDA devices that hold `shards` (DeviceAccelerator over
/// every CUDA device among them, in shard order) for the steps after the shards: the
/// exact kNN search on all of them; UMAP's deterministic SGD, PCA's eigensolver (from
/// DeviceAccelerator::kDefaultMinEigensolverSize genes) and the spectral
/// initialisation's products on the first. Null (the host runs those steps) when there
/// is no provider or no shard is on a CUDA device. It declines, so that the host runs
/// the operation, when a device runs out of memory (any device error for the
/// eigensolver), and the job's progress message says so.
std::unique_ptr<Accelerator> device_accelerator(const DeviceProvider* provider, const ShardSet& shards);

}  // namespace fathom::detail
