#pragma once
/// Placing the opened matrix's rows as shards on the requested devices (engine
/// internals; Engine::open).
#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace fathom::detail
