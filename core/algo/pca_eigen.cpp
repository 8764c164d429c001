#include "core/algo/pca_eigen.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fathom::pca_detail {

DescendingEigenpairs descending_from_ascending(std::span<const double> ascending_values,
                                               std::span<const double> column_major_vectors, std::int64_t size,
                                               int components) {
    const auto count = static_cast<std::int64_t>(ascending_values.size());
    if (size < 1 || components < 1 || components > count)
        throw std::invalid_argument("pca: the eigensolver returned " + std::to_string(count) + " eigenpairs of a " +
                                    std::to_string(size) + " x " + std::to_string(size) + " matrix; " +
                                    std::to_string(components) + " are needed");
    if (static_cast<std::int64_t>(column_major_vectors.size()) != size * count)
        throw std::invalid_argument("pca: the eigensolver returned " + std::to_string(column_major_vectors.size()) +
                                    " eigenvector entries; expected " + std::to_string(size * count));
    for (std::int64_t index = 0; index < count; ++index) {
        if (!std::isfinite(ascending_values[static_cast<std::size_t>(index)]))
            throw std::invalid_argument("pca: the eigensolver returned a non-finite eigenvalue");
        if (index > 0 && ascending_values[static_cast<std::size_t>(index)] < ascending_values[static_cast<std::size_t>(index - 1)])
            throw std::invalid_argument("pca: the eigensolver's eigenvalues are not in ascending order");
    }
    DescendingEigenpairs out;
    out.vectors = DenseMatrix<double>(size, components);
    for (int component = 0; component < components; ++component) {
        const std::int64_t column = count - 1 - component;
        out.values.push_back(ascending_values[static_cast<std::size_t>(column)]);
        for (std::int64_t row = 0; row < size; ++row) {
            const double value = column_major_vectors[static_cast<std::size_t>(row + column * size)];
            if (!std::isfinite(value)) throw std::invalid_argument("pca: the eigensolver returned a non-finite eigenvector entry");
            out.vectors(row, component) = value;
        }
    }
    return out;
}

void flip_signs_by_largest_score(DenseMatrix<double>& scores, DenseMatrix<double>& loadings) {
    if (scores.cols() != loadings.cols())
        throw std::invalid_argument("pca: scores have " + std::to_string(scores.cols()) + " components, loadings " +
                                    std::to_string(loadings.cols()));
    for (std::int64_t component = 0; component < scores.cols(); ++component) {
        double best = -1.0;
        double sign = 1.0;
        for (std::int64_t cell = 0; cell < scores.rows(); ++cell) {
            const double value = scores(cell, component);
            if (std::abs(value) > best) {
                best = std::abs(value);
                sign = value < 0 ? -1.0 : 1.0;
            }
        }
        if (sign > 0) continue;
        for (std::int64_t cell = 0; cell < scores.rows(); ++cell) scores(cell, component) = -scores(cell, component);
        for (std::int64_t gene = 0; gene < loadings.rows(); ++gene) loadings(gene, component) = -loadings(gene, component);
    }
}

}  // namespace fathom::pca_detail
