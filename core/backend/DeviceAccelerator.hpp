#pragma once
/// The Accelerator of the CUDA devices that hold the shards, reached through the
/// DeviceProvider that placed them (the CUDA backend's, gpu/provider.hpp): the exact
/// kNN search splits its queries across all the devices, the other operations run on
/// the first. A device that runs out of memory (or, for the eigensolver, fails in any
/// way) declines, so the host runs the operation, and the job's progress message says
/// so, e.g. "cuda:0: GPU out of memory (...); kNN runs on the CPU instead".
#include <cstdint>
#include <vector>

#include "core/backend/Accelerator.hpp"
#include "core/backend/DeviceProvider.hpp"

namespace fathom {

/// See the file comment.
class DeviceAccelerator final : public Accelerator {
public:
    /// Matrices with fewer rows than this stay on the host in symmetric_eigenpairs: for
    /// PCA's covariance below 512 genes Eigen's exact solver takes well under a second
    /// and the transfer and solver setup would dominate.
    static constexpr std::int64_t kDefaultMinEigensolverSize = 512;

    /// `devices`: the provider's device indices, in shard order; not empty (throws
    /// std::invalid_argument). `provider` must outlive the accelerator.
    /// min_eigensolver_size >= 0: smaller matrices are declined by symmetric_eigenpairs.
    DeviceAccelerator(const DeviceProvider& provider, std::vector<int> devices,
                      std::int64_t min_eigensolver_size = kDefaultMinEigensolverSize);

    /// "cuda:" and the devices in order, e.g. "cuda:1,0".
    std::string name() const override;
    /// DeviceProvider::exact_knn on every device; declines on out-of-memory.
    bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::vector<std::int32_t>& indices,
                   std::vector<float>& distances, JobContext& ctx) const override;
    /// DeviceProvider::umap_sgd on the first device; declines on out-of-memory.
    bool umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                  const std::function<void(int epochs_done)>& publish, JobContext& ctx) const override;
    /// DeviceProvider::symmetric_eigenpairs on the first device for matrices of at least
    /// min_eigensolver_size rows; declines on any DeviceError (a solver that did not
    /// converge included).
    bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                              std::vector<double>& column_major_vectors, JobContext& ctx) const override;
    /// DeviceProvider::upload_sparse_matrix on the first device; declines on
    /// out-of-memory. A DeviceError from a later product is the caller's to handle
    /// (spectral_layout repeats the solve on the host).
    std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                             std::span<const std::int32_t> columns,
                                                             std::span<const double> values, JobContext& ctx) const override;

private:
    const DeviceProvider* m_provider;
    std::vector<int> m_devices;
    std::int64_t m_min_eigensolver_size;
};

}  // namespace fathom
