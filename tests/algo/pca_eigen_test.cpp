// Tests of core/algo/pca_eigen: the ordering and sign rules that the host eigensolver
// and an accelerator's (cuSOLVER syevdx, which returns only the top eigenpairs) share.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/algo/pca_eigen.hpp"

namespace fathom::pca_detail {
namespace {

/// A random symmetric matrix with distinct eigenvalues.
Eigen::MatrixXd symmetric(int size, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd random(size, size);
    for (Eigen::Index index = 0; index < random.size(); ++index) random.data()[index] = normal(generator);
    return random * random.transpose();
}

TEST(PcaEigen, PartialAndFullAscendingDecompositionsGiveTheSameDescendingPairs) {
    const int size = 30, components = 5;
    const Eigen::MatrixXd matrix = symmetric(size, 3);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(matrix);
    const std::vector<double> all_values(solver.eigenvalues().data(), solver.eigenvalues().data() + size);
    const std::vector<double> all_vectors(solver.eigenvectors().data(), solver.eigenvectors().data() + size * size);
    // What syevdx with il = size - components + 1, iu = size returns: the top pairs, ascending.
    const std::vector<double> top_values(all_values.end() - components, all_values.end());
    const std::vector<double> top_vectors(all_vectors.end() - size * components, all_vectors.end());
    const auto full = descending_from_ascending(all_values, all_vectors, size, components);
    const auto partial = descending_from_ascending(top_values, top_vectors, size, components);
    EXPECT_EQ(full.values, partial.values);
    EXPECT_EQ(full.vectors, partial.vectors);
    for (int component = 0; component < components; ++component) {
        EXPECT_DOUBLE_EQ(full.values[static_cast<std::size_t>(component)], solver.eigenvalues()(size - 1 - component));
        if (component > 0) {
            EXPECT_GT(full.values[static_cast<std::size_t>(component - 1)], full.values[static_cast<std::size_t>(component)]);
        }
        // Column j is an eigenvector of value j.
        Eigen::VectorXd vector(size);
        for (int row = 0; row < size; ++row) vector(row) = full.vectors(row, component);
        EXPECT_LT((matrix * vector - full.values[static_cast<std::size_t>(component)] * vector).norm(), 1e-9 * full.values[0]);
    }
}

TEST(PcaEigen, RejectsWhatAFailedSolverReturns) {
    const std::vector<double> values{1.0, 2.0};
    const std::vector<double> vectors{1.0, 0.0, 0.0, 1.0};
    EXPECT_THROW(descending_from_ascending(values, vectors, 2, 3), std::invalid_argument) << "too few pairs";
    EXPECT_THROW(descending_from_ascending(values, std::vector<double>(3, 0.0), 2, 1), std::invalid_argument) << "sizes";
    EXPECT_THROW(descending_from_ascending(std::vector<double>{2.0, 1.0}, vectors, 2, 1), std::invalid_argument) << "order";
    EXPECT_THROW(descending_from_ascending(std::vector<double>{1.0, NAN}, vectors, 2, 1), std::invalid_argument);
    EXPECT_THROW(descending_from_ascending(values, std::vector<double>{1.0, NAN, 0.0, 1.0}, 2, 2), std::invalid_argument);
    try {
        descending_from_ascending(values, vectors, 2, 3);
    } catch (const std::invalid_argument& error) {
        EXPECT_STREQ(error.what(), "pca: the eigensolver returned 2 eigenpairs of a 2 x 2 matrix; 3 are needed");
    }
}

TEST(PcaEigen, SignsFollowTheLargestScoreWhateverTheSolversSign) {
    DenseMatrix<double> scores(4, 2);
    DenseMatrix<double> loadings(3, 2);
    const std::vector<double> score_values{1.0, -2.0, -3.0, 0.5, 2.0, 2.0, 0.0, -2.0};  // component 1 ties at |2|
    const std::vector<double> loading_values{0.1, 0.2, -0.3, 0.4, 0.5, -0.6};
    scores.values() = score_values;
    loadings.values() = loading_values;
    DenseMatrix<double> flipped_scores = scores, flipped_loadings = loadings;
    for (auto& value : flipped_scores.values()) value = -value;
    for (auto& value : flipped_loadings.values()) value = -value;
    flip_signs_by_largest_score(scores, loadings);
    flip_signs_by_largest_score(flipped_scores, flipped_loadings);
    // Either sign in, one sign out.
    EXPECT_EQ(scores, flipped_scores);
    EXPECT_EQ(loadings, flipped_loadings);
    EXPECT_EQ(scores(1, 0), 3.0) << "component 0: the largest |score| (-3) becomes positive";
    EXPECT_EQ(loadings(0, 0), -0.1);
    EXPECT_EQ(scores(0, 1), 2.0) << "component 1: the first cell of the tie decides";
    EXPECT_EQ(loadings(0, 1), -0.2);
}

}  // namespace
}  // namespace fathom::pca_detail
