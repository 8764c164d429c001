#pragma once
/// Placing the opened matrix's rows as shards on the requested devices (engine
/// internals; Engine::open).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/algo/knn.hpp"
#include "core/algo/pca.hpp"
#include "core/algo/umap.hpp"
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

/// The exact kNN search on the devices that hold `shards`, for
/// KnnOptions::accelerated_exact: DeviceProvider::exact_knn on every CUDA device among
/// the shards, in shard order. Empty (the CPU searches) when no shard is on a CUDA
/// device or there is no provider. When a device runs out of memory it declines, so
/// the CPU searches, and the job's progress message says so.
std::function<bool(const DenseMatrix<float>&, int, KnnGraph&, JobContext&)> accelerated_knn(const DeviceProvider* provider,
                                                                                             const ShardSet& shards);

/// UMAP's deterministic SGD on the first CUDA device among `shards`, for
/// UmapOptions::accelerated_sgd (publishing every publish_every epochs). Empty when no
/// shard is on a CUDA device or there is no provider; declines on out-of-memory (the
/// CPU runs the epochs) and the job's progress message says so.
decltype(UmapOptions::accelerated_sgd) accelerated_umap(const DeviceProvider* provider, const ShardSet& shards,
                                                        int publish_every);

/// Covariances with fewer genes than this stay on the host: below it Eigen's exact
/// solver takes well under a second and the transfer and solver setup would dominate.
inline constexpr std::int64_t kDeviceEigensolverMinGenes = 512;

/// PCA's eigendecomposition by cuSOLVER on the first CUDA device among `shards`, for
/// PcaOptions::accelerated_eigensolver. Empty when no shard is on a CUDA device, there
/// is no provider, or the covariance has fewer than kDeviceEigensolverMinGenes genes.
/// Declines on any device error (out of memory, a solver failure), so the host solves,
/// and the job's progress message says so.
decltype(PcaOptions::accelerated_eigensolver) accelerated_pca_eigensolver(const DeviceProvider* provider,
                                                                          const ShardSet& shards);

/// The spectral initialisation's sparse product on the first CUDA device among
/// `shards`, for UmapOptions::accelerated_spectral_operator. Empty when no shard is on
/// a CUDA device or there is no provider. Declines (the host multiplies) when the
/// matrix does not fit on the device, saying so in the job's progress message.
decltype(UmapOptions::accelerated_spectral_operator) accelerated_spectral_operator(const DeviceProvider* provider,
                                                                                   const ShardSet& shards);

}  // namespace fathom::detail
