#pragma once
/// The parts of PCA's eigendecomposition shared by the host solver (Eigen) and an
/// accelerator's (cuSOLVER syevdx): from the ascending eigenpairs a LAPACK-style
/// symmetric solver returns to PCA's descending components, and scikit-learn's sign
/// rule. Both paths go through these functions, so they order and sign alike.
#include <cstdint>
#include <span>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom::pca_detail {

/// The leading eigenpairs, largest eigenvalue first.
struct DescendingEigenpairs {
    std::vector<double> values;    ///< descending, `components` entries
    DenseMatrix<double> vectors;   ///< size x components; column j belongs to values[j]
};

/// The top `components` eigenpairs of a symmetric size x size matrix from a
/// decomposition in ascending order (LAPACK / cuSOLVER syevd(x) / Eigen order):
/// `ascending_values` holds m >= components eigenvalues in ascending order (the largest
/// last) and `column_major_vectors` their size x m eigenvectors, column j for value j.
/// Returns the last `components` pairs reversed. Exact ties keep the solver's order
/// reversed. Throws std::invalid_argument when the sizes disagree, there are fewer than
/// `components` pairs, the values are not ascending or any entry is not finite (a
/// solver that failed silently).
DescendingEigenpairs descending_from_ascending(std::span<const double> ascending_values,
                                               std::span<const double> column_major_vectors, std::int64_t size,
                                               int components);

/// scikit-learn's svd_flip(u_based_decision=True) on PCA's output: in every component
/// the score of largest |value| (the first such cell on exact ties) is made positive by
/// negating that component's scores and loadings. scores: cells x components;
/// loadings: genes x components.
void flip_signs_by_largest_score(DenseMatrix<double>& scores, DenseMatrix<double>& loadings);

}  // namespace fathom::pca_detail
