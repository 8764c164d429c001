#include "core/backend/accelerator_checks.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace fathom::accelerator_checks {

namespace {

[[noreturn]] void fail(const char* operation, const std::string& problem) {
    throw std::invalid_argument(std::string("Accelerator::") + operation + ": " + problem);
}

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();

}  // namespace

void check_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors) {
    if (points.rows() > kMaxIndex) fail("exact_knn", "more than 2^31 - 1 points");
    if (num_dims < 1 || num_dims > points.cols())
        fail("exact_knn", "num_dims must be in [1, " + std::to_string(points.cols()) + "], got " + std::to_string(num_dims));
    if (num_neighbors < 1 || num_neighbors > points.rows())
        fail("exact_knn",
             "num_neighbors must be in [1, " + std::to_string(points.rows()) + "], got " + std::to_string(num_neighbors));
}

void check_umap_sgd(const UmapSgdProblem& problem, const DenseMatrix<float>& embedding) {
    if (problem.num_vertices < 0 || problem.num_vertices > kMaxIndex) fail("umap_sgd", "num_vertices is outside [0, 2^31)");
    if (problem.dim < 1 || problem.dim > 8) fail("umap_sgd", "dim must be in [1, 8], got " + std::to_string(problem.dim));
    if (problem.num_epochs < 0) fail("umap_sgd", "num_epochs must be >= 0, got " + std::to_string(problem.num_epochs));
    if (problem.block_size < 1) fail("umap_sgd", "block_size must be >= 1, got " + std::to_string(problem.block_size));
    if (static_cast<std::int64_t>(problem.offsets.size()) != problem.num_vertices + 1 || problem.offsets.front() != 0)
        fail("umap_sgd", "offsets must have num_vertices + 1 entries from 0");
    for (std::size_t vertex = 0; vertex + 1 < problem.offsets.size(); ++vertex)
        if (problem.offsets[vertex + 1] < problem.offsets[vertex])
            fail("umap_sgd", "offsets decrease at vertex " + std::to_string(vertex));
    const auto edges = static_cast<std::size_t>(problem.offsets.back());
    if (problem.tail.size() != edges || problem.epochs_per_sample.size() != edges ||
        problem.epochs_per_negative_sample.size() != edges)
        fail("umap_sgd", "tail, epochs_per_sample and epochs_per_negative_sample must have offsets.back() = " +
                             std::to_string(edges) + " entries");
    for (const std::int32_t vertex : problem.tail)
        if (vertex < 0 || vertex >= problem.num_vertices)
            fail("umap_sgd", "tail vertex " + std::to_string(vertex) + " is outside [0, num_vertices)");
    if (embedding.rows() != problem.num_vertices || embedding.cols() != problem.dim)
        fail("umap_sgd", "the embedding is " + std::to_string(embedding.rows()) + " x " + std::to_string(embedding.cols()) +
                             "; expected num_vertices x dim = " + std::to_string(problem.num_vertices) + " x " +
                             std::to_string(problem.dim));
}

void check_symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count) {
    if (matrix.rows() != matrix.cols())
        fail("symmetric_eigenpairs",
             "the matrix is " + std::to_string(matrix.rows()) + " x " + std::to_string(matrix.cols()) + ", not square");
    if (matrix.rows() > kMaxIndex) fail("symmetric_eigenpairs", "the matrix has more than 2^31 - 1 rows");
    if (count < 1 || count > matrix.rows())
        fail("symmetric_eigenpairs",
             "count must be in [1, " + std::to_string(matrix.rows()) + "], got " + std::to_string(count));
}

void check_sparse_matrix(std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                         std::span<const double> values) {
    if (offsets.empty() || offsets.front() != 0) fail("upload_sparse_matrix", "offsets must start at 0");
    if (static_cast<std::int64_t>(offsets.size()) - 1 > kMaxIndex) fail("upload_sparse_matrix", "more than 2^31 - 1 rows");
    for (std::size_t row = 0; row + 1 < offsets.size(); ++row)
        if (offsets[row + 1] < offsets[row]) fail("upload_sparse_matrix", "offsets decrease at row " + std::to_string(row));
    if (columns.size() != values.size() || offsets.back() != static_cast<std::int64_t>(values.size()))
        fail("upload_sparse_matrix", "columns and values must have offsets.back() = " + std::to_string(offsets.back()) +
                                         " entries; got " + std::to_string(columns.size()) + " and " +
                                         std::to_string(values.size()));
    const auto rows = static_cast<std::int64_t>(offsets.size()) - 1;
    for (const std::int32_t column : columns)
        if (column < 0 || column >= rows)
            fail("upload_sparse_matrix",
                 "column " + std::to_string(column) + " is outside [0, " + std::to_string(rows) + ")");
}

}  // namespace fathom::accelerator_checks
