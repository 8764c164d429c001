// PCA against a dense SVD of the standardised matrix: variances, ratios, scores and
// loadings up to sign, and the svd_flip sign rule; clipped data; capping.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "core/algo/normalize.hpp"
#include "core/algo/pca.hpp"
#include "tests/algo/algo_helpers.hpp"
#include "tests/support/accelerators.hpp"

namespace fathom::test {
namespace {

struct DensePca {
    Eigen::VectorXd singular;   // descending
    Eigen::MatrixXd u, v;
    double total_variance = 0;
};

/// Dense reference: Z = standardise(X) (clipped), centred again, then a full SVD.
DensePca dense_pca(const DenseMatrix<double>& dense, const ScaleResult& scaling) {
    Eigen::MatrixXd z(dense.rows(), dense.cols());
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell)
        for (std::int64_t gene = 0; gene < dense.cols(); ++gene) {
            double value = (dense(cell, gene) - scaling.mean[static_cast<std::size_t>(gene)]) * scaling.inv_std[static_cast<std::size_t>(gene)];
            if (scaling.max_value) value = std::min(value, *scaling.max_value);
            if (scaling.min_value) value = std::max(value, *scaling.min_value);
            z(cell, gene) = value;
        }
    z.rowwise() -= z.colwise().mean();
    DensePca out;
    out.total_variance = z.squaredNorm() / static_cast<double>(dense.rows() - 1);
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(z, Eigen::ComputeThinU | Eigen::ComputeThinV);
    out.singular = svd.singularValues();
    out.u = svd.matrixU();
    out.v = svd.matrixV();
    return out;
}

void check_against_dense(const PcaResult& result, const DensePca& reference, std::int64_t cells, int components) {
    ASSERT_EQ(result.num_components, components);
    ASSERT_EQ(result.scores.rows(), cells);
    EXPECT_NEAR(result.total_variance, reference.total_variance, 1e-9 * reference.total_variance);
    for (int component = 0; component < components; ++component) {
        const double variance = reference.singular(component) * reference.singular(component) / static_cast<double>(cells - 1);
        EXPECT_NEAR(result.variance[static_cast<std::size_t>(component)], variance, 1e-9 * variance);
        EXPECT_NEAR(result.variance_ratio[static_cast<std::size_t>(component)], variance / reference.total_variance, 1e-10);
        if (component > 0) {
            EXPECT_LE(result.variance[static_cast<std::size_t>(component)], result.variance[static_cast<std::size_t>(component) - 1]);
        }
        // Scores = U S, up to sign; loadings = V.
        double dot = 0, norm_ours = 0, norm_ref = 0, largest = -1, sign_of_largest = 0;
        for (std::int64_t cell = 0; cell < cells; ++cell) {
            const double ours = result.scores(cell, component);
            const double ref = reference.u(cell, component) * reference.singular(component);
            dot += ours * ref;
            norm_ours += ours * ours;
            norm_ref += ref * ref;
            if (std::abs(ours) > largest) largest = std::abs(ours), sign_of_largest = ours;
        }
        EXPECT_GT(std::abs(dot) / std::sqrt(norm_ours * norm_ref), 1 - 1e-6) << component;
        EXPECT_NEAR(norm_ours, norm_ref, 1e-5 * norm_ref);
        EXPECT_GT(sign_of_largest, 0) << "svd_flip: the largest |score| is positive";
        double loading_dot = 0;
        for (std::int64_t gene = 0; gene < result.loadings.rows(); ++gene)
            loading_dot += result.loadings(gene, component) * reference.v(gene, component);
        EXPECT_GT(std::abs(loading_dot), 1 - 1e-6);
    }
}

TEST(Pca, MatchesDenseSvdUnclipped) {
    const auto whole = step_counts(41, 250, 40);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    log1p(shards, ctx);
    const auto dense = to_dense(shards.to_host());
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions options;
    options.num_components = 12;
    const auto result = pca(shards, scaling, options, ctx);
    check_against_dense(result, dense_pca(dense, scaling), dense.rows(), 12);
}

TEST(Pca, MatchesDenseSvdClipped) {
    const auto whole = step_counts(42, 250, 40);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    log1p(shards, ctx);
    const auto dense = to_dense(shards.to_host());
    ScaleOptions clip;
    clip.max_value = 1.5;  // clips a real share of the values, moving the means
    clip.clip_below = true;
    const auto scaling = scale(shards, clip, ctx);
    PcaOptions options;
    options.num_components = 8;
    const auto result = pca(shards, scaling, options, ctx);
    check_against_dense(result, dense_pca(dense, scaling), dense.rows(), 8);
}

TEST(Pca, BlockKrylovMatchesExactAndIsSeedDeterministic) {
    const auto whole = step_counts(44, 600, 150);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions exact_options;
    exact_options.num_components = 20;
    exact_options.solver = PcaSolver::Exact;
    PcaOptions krylov_options = exact_options;
    krylov_options.solver = PcaSolver::BlockKrylov;
    krylov_options.seed = 7;
    const auto exact = pca(shards, scaling, exact_options, ctx);
    const auto krylov = pca(shards, scaling, krylov_options, ctx);
    EXPECT_TRUE(exact.exact_solver);
    EXPECT_FALSE(krylov.exact_solver) << "did not converge; fell back to the exact solver";
    EXPECT_GE(krylov.iterations, 1);
    for (std::size_t component = 0; component < 20; ++component)
        EXPECT_NEAR(krylov.variance[component], exact.variance[component], 1e-7 * exact.variance[0]);
    for (std::int64_t component = 0; component < 5; ++component) {
        double dot = 0, a = 0, b = 0;
        for (std::int64_t cell = 0; cell < exact.scores.rows(); ++cell) {
            dot += static_cast<double>(exact.scores(cell, component)) * krylov.scores(cell, component);
            a += static_cast<double>(exact.scores(cell, component)) * exact.scores(cell, component);
            b += static_cast<double>(krylov.scores(cell, component)) * krylov.scores(cell, component);
        }
        EXPECT_GT(dot / std::sqrt(a * b), 1 - 1e-6) << component << " (same svd_flip sign expected)";
    }
    const auto again = pca(shards, scaling, krylov_options, ctx);
    EXPECT_EQ(again.scores, krylov.scores);
    EXPECT_EQ(again.variance, krylov.variance);
}

TEST(Pca, LanczosMatchesExactIsSeedDeterministicAndIsTheAutoChoiceForFewComponents) {
    const auto whole = step_counts(45, 500, 160);
    auto shards = simulated_set(whole, 3);
    JobContext ctx;
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions exact_options;
    exact_options.num_components = 15;
    exact_options.solver = PcaSolver::Exact;
    PcaOptions lanczos_options = exact_options;
    lanczos_options.solver = PcaSolver::Lanczos;
    lanczos_options.seed = 3;
    const auto exact = pca(shards, scaling, exact_options, ctx);
    const auto lanczos = pca(shards, scaling, lanczos_options, ctx);
    EXPECT_FALSE(lanczos.exact_solver) << "did not converge; fell back to the exact solver";
    EXPECT_GE(lanczos.iterations, 1);
    for (std::size_t component = 0; component < 15; ++component)
        EXPECT_NEAR(lanczos.variance[component], exact.variance[component], 1e-9 * exact.variance[0]);
    for (std::int64_t component = 0; component < 15; ++component) {
        double dot = 0, a = 0, b = 0;
        for (std::int64_t cell = 0; cell < exact.scores.rows(); ++cell) {
            dot += static_cast<double>(exact.scores(cell, component)) * lanczos.scores(cell, component);
            a += static_cast<double>(exact.scores(cell, component)) * exact.scores(cell, component);
            b += static_cast<double>(lanczos.scores(cell, component)) * lanczos.scores(cell, component);
        }
        EXPECT_GT(dot / std::sqrt(a * b), 1 - 1e-6) << component << " (same svd_flip sign expected)";
    }
    const auto again = pca(shards, scaling, lanczos_options, ctx);
    EXPECT_EQ(again.scores, lanczos.scores);
    EXPECT_EQ(again.variance, lanczos.variance);
    // Auto: Lanczos for 15 of 160 genes (a 35-vector Krylov space), exact for 50 of 160.
    PcaOptions automatic;
    automatic.num_components = 15;
    EXPECT_FALSE(pca(shards, scaling, automatic, ctx).exact_solver);
    automatic.num_components = 50;
    EXPECT_TRUE(pca(shards, scaling, automatic, ctx).exact_solver);
}

TEST(Pca, CapsComponentsAndValidates) {
    const auto whole = step_counts(43, 30, 10);
    const auto shards = simulated_set(whole, 2);
    JobContext ctx;
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    const auto result = pca(shards, scaling, PcaOptions{}, ctx);
    EXPECT_EQ(result.num_components, 9);  // min(30, 10) - 1
    EXPECT_EQ(result.loadings.cols(), 9);
    PcaOptions bad;
    bad.num_components = 0;
    try {
        validate(bad, shards.shape());
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("PcaOptions::num_components"), std::string::npos);
    }
    ScaleResult wrong = scaling;
    wrong.mean.pop_back();
    EXPECT_THROW(pca(shards, wrong, PcaOptions{}, ctx), std::invalid_argument);
}

TEST(Pca, StopsWhenCancelled) {
    const auto shards = simulated_set(step_counts(), 2);
    JobContext ctx;
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    ctx.cancel();
    EXPECT_THROW(pca(shards, scaling, PcaOptions{}, ctx), Cancelled);
}

// ---- an accelerator's eigensolver (Accelerator::symmetric_eigenpairs) ----

/// What cusolverDnDsyevdx returns for the top `components` eigenpairs (ascending, the
/// vectors as columns), computed on the host by the same Eigen solver as the CPU path,
/// with every other vector negated as a different solver may return it.
bool syevdx_like(const DenseMatrix<double>& covariance, int components, std::vector<double>& values,
                 std::vector<double>& vectors, int& calls) {
    ++calls;
    const auto size = covariance.rows();
    const Eigen::Map<const Eigen::MatrixXd> matrix(covariance.data(), size, size);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(matrix);
    values.assign(solver.eigenvalues().data() + (size - components), solver.eigenvalues().data() + size);
    vectors.assign(solver.eigenvectors().data() + (size - components) * size, solver.eigenvectors().data() + size * size);
    for (int column = 0; column < components; column += 2)
        for (std::int64_t row = 0; row < size; ++row) vectors[static_cast<std::size_t>(row + column * size)] *= -1.0;
    return true;
}

TEST(Pca, AcceleratedEigensolverGivesTheHostSolversResultWithTheSameSigns) {
    const auto whole = step_counts(45, 300, 80);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions options;
    options.num_components = 10;
    options.solver = PcaSolver::Exact;
    const auto host = pca(shards, scaling, options, ctx);
    int calls = 0;
    FunctionAccelerator accelerator;
    accelerator.eigenpairs = [&calls](const DenseMatrix<double>& covariance, int components, std::vector<double>& values,
                                      std::vector<double>& vectors, JobContext&) {
        EXPECT_EQ(covariance.rows(), 80);
        EXPECT_EQ(components, 10);
        return syevdx_like(covariance, components, values, vectors, calls);
    };
    const auto accelerated = pca(shards, scaling, options, ctx, &accelerator);
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(accelerated.accelerated_solver);
    EXPECT_FALSE(host.accelerated_solver);
    EXPECT_EQ(accelerated.variance, host.variance) << "same ordering";
    EXPECT_EQ(accelerated.variance_ratio, host.variance_ratio);
    EXPECT_EQ(accelerated.scores, host.scores) << "negated vectors come out with the host's signs";
    EXPECT_EQ(accelerated.loadings, host.loadings);
}

TEST(Pca, DecliningOrKrylovLeavesTheEigendecompositionToTheHost) {
    const auto whole = step_counts(46, 300, 80);
    auto shards = simulated_set(whole, 2);
    JobContext ctx;
    log1p(shards, ctx);
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions options;
    options.num_components = 6;
    const auto host = pca(shards, scaling, options, ctx);
    int calls = 0;
    FunctionAccelerator accelerator;
    accelerator.eigenpairs = [&calls](const DenseMatrix<double>&, int, std::vector<double>&, std::vector<double>&, JobContext&) {
        ++calls;
        return false;
    };
    const auto declined = pca(shards, scaling, options, ctx, &accelerator);
    EXPECT_EQ(calls, 1);
    EXPECT_FALSE(declined.accelerated_solver);
    EXPECT_EQ(declined.scores, host.scores);
    options.solver = PcaSolver::BlockKrylov;
    const auto krylov = pca(shards, scaling, options, ctx, &accelerator);
    EXPECT_EQ(calls, 1) << "an explicit BlockKrylov solver never asks the accelerator";
    EXPECT_FALSE(krylov.exact_solver);
}

TEST(Pca, AcceleratedEigensolverOutputIsChecked) {
    const auto shards = simulated_set(step_counts(47, 100, 20), 1);
    JobContext ctx;
    const auto scaling = scale(shards, ScaleOptions{}, ctx);
    PcaOptions options;
    options.num_components = 3;
    FunctionAccelerator accelerator;
    accelerator.eigenpairs = [](const DenseMatrix<double>& covariance, int components, std::vector<double>& values,
                                std::vector<double>& vectors, JobContext&) {
        values.assign(static_cast<std::size_t>(components - 1), 1.0);  // one pair short
        vectors.assign(values.size() * static_cast<std::size_t>(covariance.rows()), 0.0);
        return true;
    };
    EXPECT_THROW(pca(shards, scaling, options, ctx, &accelerator), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::test
