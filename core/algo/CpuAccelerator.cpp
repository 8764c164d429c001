#include "core/algo/CpuAccelerator.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Dense>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/algo/knn.hpp"
#include "core/algo/umap.hpp"
#include "core/backend/accelerator_checks.hpp"
#include "core/types/JobContext.hpp"

namespace fathom {

namespace {

/// Square CSR in host memory.
class HostSparseMatrix final : public DeviceSparseMatrix {
public:
    HostSparseMatrix(std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                     std::span<const double> values)
        : m_offsets(offsets.begin(), offsets.end()), m_columns(columns.begin(), columns.end()),
          m_values(values.begin(), values.end()) {}

    void multiply(const double* x, double* y, int count) override {
        const auto rows = static_cast<std::int64_t>(m_offsets.size()) - 1;
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, 2048), [&](const tbb::blocked_range<std::int64_t>& range) {
            for (int vector = 0; vector < count; ++vector) {
                const double* in = x + static_cast<std::int64_t>(vector) * rows;
                double* out = y + static_cast<std::int64_t>(vector) * rows;
                for (std::int64_t row = range.begin(); row < range.end(); ++row) {
                    double sum = 0.0;
                    for (auto entry = m_offsets[static_cast<std::size_t>(row)]; entry < m_offsets[static_cast<std::size_t>(row) + 1];
                         ++entry)
                        sum += m_values[static_cast<std::size_t>(entry)] * in[m_columns[static_cast<std::size_t>(entry)]];
                    out[row] = sum;
                }
            }
        });
    }

private:
    std::vector<std::int64_t> m_offsets;
    std::vector<std::int32_t> m_columns;
    std::vector<double> m_values;
};

}  // namespace

std::string CpuAccelerator::name() const { return "cpu"; }

bool CpuAccelerator::exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors,
                               std::vector<std::int32_t>& indices, std::vector<float>& distances, JobContext& ctx) const {
    accelerator_checks::check_knn(points, num_dims, num_neighbors);
    KnnGraph graph = exact_neighbors(points, num_dims, num_neighbors, 0, points.rows(), ctx);
    indices = std::move(graph.indices);
    distances = std::move(graph.distances);
    return true;
}

bool CpuAccelerator::umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                              const std::function<void(int epochs_done)>& publish, JobContext& ctx) const {
    accelerator_checks::check_umap_sgd(problem, embedding);
    detail::deterministic_umap_sgd(problem, embedding.data(), publish_every, publish, ctx);
    return true;
}

bool CpuAccelerator::symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                                          std::vector<double>& column_major_vectors, JobContext& ctx) const {
    accelerator_checks::check_symmetric_eigenpairs(matrix, count);
    ctx.checkpoint();
    const Eigen::Index size = matrix.rows();
    // Row-major storage read as column-major is the transpose: the same symmetric matrix.
    const Eigen::Map<const Eigen::MatrixXd> map(matrix.data(), size, size);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(map);
    if (solver.info() != Eigen::Success)
        throw std::runtime_error("CpuAccelerator::symmetric_eigenpairs: Eigen's solver did not converge");
    const Eigen::Index first = size - count;
    ascending_values.assign(solver.eigenvalues().data() + first, solver.eigenvalues().data() + size);
    column_major_vectors.assign(solver.eigenvectors().data() + first * size, solver.eigenvectors().data() + size * size);
    ctx.checkpoint();
    return true;
}

std::unique_ptr<DeviceSparseMatrix> CpuAccelerator::upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                                         std::span<const std::int32_t> columns,
                                                                         std::span<const double> values, JobContext&) const {
    accelerator_checks::check_sparse_matrix(offsets, columns, values);
    return std::make_unique<HostSparseMatrix>(offsets, columns, values);
}

}  // namespace fathom
