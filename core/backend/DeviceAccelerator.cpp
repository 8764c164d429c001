#include "core/backend/DeviceAccelerator.hpp"

#include <stdexcept>
#include <string>

#include "core/backend/accelerator_checks.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/errors.hpp"

namespace fathom {

DeviceAccelerator::DeviceAccelerator(const DeviceProvider& provider, std::vector<int> devices,
                                     std::int64_t min_eigensolver_size)
    : m_provider(&provider), m_devices(std::move(devices)), m_min_eigensolver_size(min_eigensolver_size) {
    if (m_devices.empty()) throw std::invalid_argument("DeviceAccelerator: devices must not be empty");
    if (m_min_eigensolver_size < 0)
        throw std::invalid_argument("DeviceAccelerator: min_eigensolver_size must be >= 0, got " +
                                    std::to_string(m_min_eigensolver_size));
}

std::string DeviceAccelerator::name() const {
    std::string text = "cuda:";
    for (std::size_t index = 0; index < m_devices.size(); ++index)
        text += (index > 0 ? "," : "") + std::to_string(m_devices[index]);
    return text;
}

bool DeviceAccelerator::exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors,
                                  std::vector<std::int32_t>& indices, std::vector<float>& distances, JobContext& ctx) const {
    accelerator_checks::check_knn(points, num_dims, num_neighbors);
    try {
        return m_provider->exact_knn(points, num_dims, num_neighbors, m_devices, indices, distances, ctx);
    } catch (const DeviceOutOfMemory& error) {
        ctx.report(0.0, std::string(error.what()) + "; kNN runs on the CPU instead");
        return false;
    }
}

bool DeviceAccelerator::umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                                 const std::function<void(int epochs_done)>& publish, JobContext& ctx) const {
    accelerator_checks::check_umap_sgd(problem, embedding);
    try {
        return m_provider->umap_sgd(problem, embedding.data(), publish_every, publish, m_devices.front(), ctx);
    } catch (const DeviceOutOfMemory& error) {
        ctx.report(0.0, std::string(error.what()) + "; UMAP runs on the CPU instead");
        return false;
    }
}

bool DeviceAccelerator::symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count,
                                             std::vector<double>& ascending_values,
                                             std::vector<double>& column_major_vectors, JobContext& ctx) const {
    accelerator_checks::check_symmetric_eigenpairs(matrix, count);
    if (matrix.rows() < m_min_eigensolver_size) return false;
    try {
        return m_provider->symmetric_eigenpairs(matrix, count, m_devices.front(), ascending_values, column_major_vectors, ctx);
    } catch (const DeviceError& error) {
        ctx.report(ctx.progress().fraction, std::string(error.what()) + "; the PCA eigendecomposition runs on the CPU instead");
        return false;
    }
}

std::unique_ptr<DeviceSparseMatrix> DeviceAccelerator::upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                                            std::span<const std::int32_t> columns,
                                                                            std::span<const double> values,
                                                                            JobContext& ctx) const {
    accelerator_checks::check_sparse_matrix(offsets, columns, values);
    try {
        return m_provider->upload_sparse_matrix(offsets, columns, values, m_devices.front());
    } catch (const DeviceOutOfMemory& error) {
        ctx.report(ctx.progress().fraction, std::string(error.what()) + "; the spectral initialisation runs on the CPU instead");
        return nullptr;
    }
}

}  // namespace fathom
