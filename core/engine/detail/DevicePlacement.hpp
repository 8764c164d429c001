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

/// This rank's shards of a run over the ranks of `comm`. Every rank places its shards
/// as one process would on its own node: "cpu:N" makes N CPU shards; "cuda..." one shard
/// per GPU of this rank's part of the node's usable GPUs (node_rank_devices: the node's
/// ranks never share a GPU), with the CPU fallbacks and `note` of load_shards. The ranks'
/// shard counts are exchanged, the rows are cut into their total of global shards
/// (plan_row_ranges, the same cut as one process with that many shards) and rank r reads
/// only the rows of its own run of them, which follows the runs of ranks 0..r-1.
ShardSet load_rank_shards(io::RowSource& source, const std::vector<std::int64_t>& offsets, const DeviceSpec& spec,
                          const DeviceProvider* provider, const std::shared_ptr<Comm>& comm, JobContext& ctx,
                          std::string& note);

/// Rank `node_rank`'s part of `node_devices` (its node's usable GPUs, in order) when
/// `node_size` ranks share the node: contiguous, disjoint parts, the first
/// node_devices.size() % node_size ranks one GPU more. Throws std::invalid_argument naming
/// --devices and `host` when the node has fewer GPUs than ranks.
std::vector<int> node_rank_devices(const std::vector<int>& node_devices, int node_rank, int node_size,
                                   const std::string& host);

/// The accelerator of the CUDA devices that hold `shards` (DeviceAccelerator over
/// every CUDA device among them, in shard order) for the steps after the shards: the
/// exact kNN search on all of them; UMAP's deterministic SGD, PCA's eigensolver (from
/// DeviceAccelerator::kDefaultMinEigensolverSize genes) and the spectral
/// initialisation's products on the first. Null (the host runs those steps) when there
/// is no provider or no shard is on a CUDA device. It declines, so that the host runs
/// the operation, when a device runs out of memory (any device error for the
/// eigensolver), and the job's progress message says so. Null for a set spread over
/// ranks: there the shards' own kernels compute the per-shard partials and the ranks
/// combine them (a whole-step accelerator would see this rank's shards only).
std::unique_ptr<Accelerator> device_accelerator(const DeviceProvider* provider, const ShardSet& shards);

}  // namespace fathom::detail
