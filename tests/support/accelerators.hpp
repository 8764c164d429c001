#pragma once
/// A stand-in Accelerator for the tests of the algorithms' accelerator paths: each
/// operation is a function the test sets; an unset one declines.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/Accelerator.hpp"

namespace fathom::test {

/// See the file comment.
struct FunctionAccelerator final : Accelerator {
    std::function<bool(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::vector<std::int32_t>& indices,
                       std::vector<float>& distances, JobContext& ctx)>
        knn;
    std::function<bool(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                       const std::function<void(int epochs_done)>& publish, JobContext& ctx)>
        sgd;
    std::function<bool(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                       std::vector<double>& column_major_vectors, JobContext& ctx)>
        eigenpairs;
    std::function<std::unique_ptr<DeviceSparseMatrix>(std::span<const std::int64_t> offsets,
                                                      std::span<const std::int32_t> columns, std::span<const double> values,
                                                      JobContext& ctx)>
        sparse;

    std::string name() const override { return "test"; }
    bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::vector<std::int32_t>& indices,
                   std::vector<float>& distances, JobContext& ctx) const override {
        return knn && knn(points, num_dims, num_neighbors, indices, distances, ctx);
    }
    bool umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                  const std::function<void(int epochs_done)>& publish, JobContext& ctx) const override {
        return sgd && sgd(problem, embedding, publish_every, publish, ctx);
    }
    bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                              std::vector<double>& column_major_vectors, JobContext& ctx) const override {
        return eigenpairs && eigenpairs(matrix, count, ascending_values, column_major_vectors, ctx);
    }
    std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                             std::span<const std::int32_t> columns,
                                                             std::span<const double> values, JobContext& ctx) const override {
        return sparse ? sparse(offsets, columns, values, ctx) : nullptr;
    }
};

}  // namespace fathom::test
