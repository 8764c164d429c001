#pragma once
/// The reference Accelerator: every operation on the host with the algorithms' own host
/// code, never declining. An algorithm given it computes what it computes without an
/// accelerator, through the accelerator's interface: the conformance suite
/// (tests/backend/Accelerator_conformance_test.cpp) holds it and the device
/// implementations to the same brute-force references.
#include "core/backend/Accelerator.hpp"

namespace fathom {

/// See the file comment. Stateless; the operations run on the calling thread (and TBB's
/// workers where the host code is parallel).
class CpuAccelerator final : public Accelerator {
public:
    /// "cpu".
    std::string name() const override;
    /// The CPU's certified exact search (exact_neighbors, core/algo/knn.hpp).
    bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::vector<std::int32_t>& indices,
                   std::vector<float>& distances, JobContext& ctx) const override;
    /// The host's deterministic SGD (detail::deterministic_umap_sgd, core/algo/umap.hpp).
    bool umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                  const std::function<void(int epochs_done)>& publish, JobContext& ctx) const override;
    /// Eigen's SelfAdjointEigenSolver (the full decomposition, in double); the `count`
    /// largest pairs.
    bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                              std::vector<double>& column_major_vectors, JobContext& ctx) const override;
    /// A host copy whose product sums each row in stored order, in parallel over rows.
    std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                             std::span<const std::int32_t> columns,
                                                             std::span<const double> values, JobContext& ctx) const override;
};

}  // namespace fathom
