#include "core/algo/pca.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>
#include <Spectra/MatOp/DenseSymMatProd.h>
#include <Spectra/SymEigsSolver.h>

#include "core/algo/pca_eigen.hpp"
#include "core/backend/Accelerator.hpp"

namespace fathom {

namespace {

struct Eigenpairs {
    std::vector<double> values;   ///< descending
    Eigen::MatrixXd vectors;      ///< genes x components, column j for values[j]
    bool exact = true;
    int iterations = 0;
};

/// Eigenpairs from an ascending decomposition (the accelerator's or Eigen's), through
/// the ordering shared with the accelerator (pca_detail::descending_from_ascending).
Eigenpairs from_ascending(std::span<const double> values, std::span<const double> column_major_vectors,
                          Eigen::Index size, int components) {
    const auto pairs = pca_detail::descending_from_ascending(values, column_major_vectors, size, components);
    Eigenpairs out;
    out.values = pairs.values;
    out.vectors.resize(size, components);
    for (Eigen::Index row = 0; row < size; ++row)
        for (int component = 0; component < components; ++component) out.vectors(row, component) = pairs.vectors(row, component);
    return out;
}

Eigenpairs exact_eigenpairs(const Eigen::MatrixXd& covariance, int components) {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(covariance);
    if (solver.info() != Eigen::Success) throw std::runtime_error("pca: the eigendecomposition did not converge");
    const auto size = covariance.rows();
    // Eigen: eigenvalues ascending, eigenvectors column-major (LAPACK's layout).
    return from_ascending(std::span<const double>(solver.eigenvalues().data(), static_cast<std::size_t>(size)),
                          std::span<const double>(solver.eigenvectors().data(), static_cast<std::size_t>(size * size)), size,
                          components);
}

/// A seeded start (splitmix64): `count` values in [-0.5, 0.5), identical on every machine.
Eigen::VectorXd seeded_values(std::uint64_t seed, Eigen::Index count) {
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    Eigen::VectorXd values(count);
    for (Eigen::Index index = 0; index < count; ++index) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        values(index) = static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53 - 0.5;
    }
    return values;
}

/// Lanczos convergence: residual of each wanted Ritz pair below this fraction of it.
constexpr double kLanczosTolerance = 1e-10;
constexpr int kLanczosMaxRestarts = 1000;

/// Krylov space of the Lanczos solver for `components` wanted pairs (ARPACK's usual
/// ncv = 2k + 1, at least k + 20).
std::int64_t lanczos_dimension(std::int64_t components) { return std::max(2 * components + 1, components + 20); }

/// Implicitly restarted Lanczos (Spectra) for the largest eigenpairs; empty when it does
/// not converge.
std::optional<Eigenpairs> lanczos_eigenpairs(const Eigen::MatrixXd& covariance, int components, std::uint64_t seed,
                                             JobContext& ctx) {
    const Eigen::Index size = covariance.rows();
    const auto dimension = static_cast<Eigen::Index>(std::min<std::int64_t>(size, lanczos_dimension(components)));
    if (components < 1 || dimension <= components) return std::nullopt;
    ctx.checkpoint();
    Spectra::DenseSymMatProd<double> product(covariance);
    Spectra::SymEigsSolver<Spectra::DenseSymMatProd<double>> solver(product, components, dimension);
    const Eigen::VectorXd start = seeded_values(seed, size);
    solver.init(start.data());
    solver.compute(Spectra::SortRule::LargestAlge, kLanczosMaxRestarts, kLanczosTolerance, Spectra::SortRule::LargestAlge);
    ctx.checkpoint();
    if (solver.info() != Spectra::CompInfo::Successful) return std::nullopt;
    Eigenpairs out;
    out.exact = false;
    out.iterations = static_cast<int>(solver.num_iterations());
    const Eigen::VectorXd values = solver.eigenvalues();  // descending
    out.vectors = solver.eigenvectors();
    for (int component = 0; component < components; ++component) out.values.push_back(values(component));
    return out;
}

/// Thin orthonormal basis of the columns of y (Householder QR, deterministic).
Eigen::MatrixXd orthonormalize(const Eigen::MatrixXd& y) {
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(y);
    return qr.householderQ() * Eigen::MatrixXd::Identity(y.rows(), y.cols());
}

/// Removes from `block` its components along the orthonormal columns of basis[:, :used]
/// (two passes of block Gram-Schmidt), then orthonormalises it.
Eigen::MatrixXd orthogonal_block(const Eigen::MatrixXd& basis, Eigen::Index used, Eigen::MatrixXd block) {
    for (int pass = 0; pass < 2; ++pass) {
        if (used > 0) {
            const auto previous = basis.leftCols(used);
            block -= previous * (previous.transpose() * block);
        }
        block = orthonormalize(block);
    }
    return block;
}

/// Residual bound of the Krylov solver, relative to the largest eigenvalue.
constexpr double kKrylovTolerance = 1e-8;
constexpr std::int64_t kKrylovDepth = 10;

/// Restarted block Krylov with Rayleigh-Ritz; empty when it does not converge.
std::optional<Eigenpairs> krylov_eigenpairs(const Eigen::MatrixXd& covariance, int components, std::uint64_t seed,
                                            JobContext& ctx) {
    const auto size = covariance.rows();
    const auto block = static_cast<Eigen::Index>(std::min<std::int64_t>(size, components + 10));
    // Krylov depth: blocks per cycle, bounded by the dimension.
    const auto depth = static_cast<Eigen::Index>(std::max<std::int64_t>(1, std::min<std::int64_t>(kKrylovDepth, size / block)));
    const Eigen::Index dimension = block * depth;
    // Seeded start, column by column.
    const Eigen::VectorXd seeded = seeded_values(seed, size * block);
    Eigen::MatrixXd start = orthonormalize(Eigen::Map<const Eigen::MatrixXd>(seeded.data(), size, block));
    constexpr int kMaxCycles = 40;
    Eigen::MatrixXd basis(size, dimension), image(size, dimension);
    for (int cycle = 1; cycle <= kMaxCycles; ++cycle) {
        // Basis [V0, V1, ...] of span{V0, C V0, C^2 V0, ...}, and image = C * basis.
        basis.leftCols(block) = start;
        for (Eigen::Index level = 0; level < depth; ++level) {
            ctx.checkpoint();
            image.middleCols(level * block, block) = covariance * basis.middleCols(level * block, block);
            if (level + 1 < depth)
                basis.middleCols((level + 1) * block, block) =
                    orthogonal_block(basis, (level + 1) * block, image.middleCols(level * block, block));
        }
        // Rayleigh-Ritz on the Krylov space.
        Eigen::MatrixXd projected = basis.transpose() * image;
        projected = (projected + projected.transpose()) * 0.5;
        const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> small(projected);
        if (small.info() != Eigen::Success) return std::nullopt;
        const Eigen::MatrixXd ritz = small.eigenvectors().rowwise().reverse();  // descending
        const Eigen::VectorXd values = small.eigenvalues().reverse();
        const Eigen::MatrixXd wanted_coefficients = ritz.leftCols(components);
        const Eigen::MatrixXd vectors = basis * wanted_coefficients;
        const Eigen::MatrixXd residual = image * wanted_coefficients - vectors * values.head(components).asDiagonal();
        const double tolerance = kKrylovTolerance * std::max(std::abs(values(0)), 1e-300);
        bool converged = true;
        for (int component = 0; component < components && converged; ++component)
            converged = residual.col(component).norm() <= tolerance;
        if (converged) {
            Eigenpairs out;
            out.exact = false;
            out.iterations = cycle;
            out.vectors = vectors;
            for (int component = 0; component < components; ++component) out.values.push_back(values(component));
            return out;
        }
        // Thick restart from the leading Ritz vectors.
        start = orthonormalize(basis * ritz.leftCols(block));
    }
    return std::nullopt;
}

}  // namespace

void validate(const PcaOptions& options, const MatrixShape& shape) {
    if (options.num_components < 1) throw std::invalid_argument("PcaOptions::num_components must be >= 1");
    if (shape.num_cells < 2 || shape.num_genes < 2)
        throw std::invalid_argument("pca: needs at least 2 cells and 2 genes; the matrix is " +
                                    std::to_string(shape.num_cells) + " x " + std::to_string(shape.num_genes));
}

PcaResult pca(const ShardSet& shards, const ScaleResult& scaling, const PcaOptions& options, JobContext& ctx,
              const Accelerator* accelerator) {
    const MatrixShape shape = shards.shape();
    validate(options, shape);
    const auto genes = static_cast<std::size_t>(shape.num_genes);
    if (scaling.mean.size() != genes || scaling.inv_std.size() != genes)
        throw std::invalid_argument("pca: the ScaleResult has " + std::to_string(scaling.mean.size()) +
                                    " genes; the matrix has " + std::to_string(genes));
    ctx.begin_stage("pca");
    // sklearn's arpack path needs k < min(n, p): cap at min(cells, genes) - 1.
    const int components = static_cast<int>(
        std::min<std::int64_t>(options.num_components, std::min(shape.num_cells, shape.num_genes) - 1));
    const Standardization standardization = scaling.standardization();

    // Covariance of the (clipped) standardised matrix Z, reduced over shards:
    // C = (Z^T Z - s s^T / N) / (N - 1), s = column sums of Z. sklearn centres Z
    // again (X -= mean_), which matters only when clipping moved the means.
    const GramResult gram = shards.gram({}, standardization, ctx);
    ctx.report(0.4);
    const double cells = static_cast<double>(gram.num_rows);
    Eigen::MatrixXd covariance(static_cast<Eigen::Index>(genes), static_cast<Eigen::Index>(genes));
    std::vector<double> column_mean(genes);
    for (std::size_t gene = 0; gene < genes; ++gene) column_mean[gene] = gram.column_sums[gene] / cells;
    for (std::size_t a = 0; a < genes; ++a)
        for (std::size_t b = 0; b < genes; ++b)
            covariance(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) =
                (gram.gram(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)) -
                 cells * column_mean[a] * column_mean[b]) / (cells - 1.0);
    ctx.checkpoint();
    PcaSolver solver = options.solver;
    if (solver == PcaSolver::Auto)
        solver = 2 * lanczos_dimension(components) <= shape.num_genes ? PcaSolver::Lanczos : PcaSolver::Exact;
    std::optional<Eigenpairs> pairs;
    bool accelerated = false;
    if (accelerator != nullptr && (options.solver == PcaSolver::Auto || options.solver == PcaSolver::Exact)) {
        DenseMatrix<double> dense(shape.num_genes, shape.num_genes);
        for (std::int64_t a = 0; a < shape.num_genes; ++a)
            for (std::int64_t b = 0; b < shape.num_genes; ++b)
                dense(a, b) = covariance(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b));
        std::vector<double> values, vectors;
        if (accelerator->symmetric_eigenpairs(dense, components, values, vectors, ctx)) {
            pairs = from_ascending(values, vectors, covariance.rows(), components);
            accelerated = true;
        }
    }
    if (!pairs && solver == PcaSolver::Lanczos) pairs = lanczos_eigenpairs(covariance, components, options.seed, ctx);
    if (!pairs && solver == PcaSolver::BlockKrylov) pairs = krylov_eigenpairs(covariance, components, options.seed, ctx);
    if (!pairs) pairs = exact_eigenpairs(covariance, components);
    ctx.report(0.7);
    const double total_variance = covariance.trace();

    PcaResult result;
    result.num_components = components;
    result.total_variance = total_variance;
    result.exact_solver = pairs->exact;
    result.iterations = pairs->iterations;
    result.accelerated_solver = accelerated;
    DenseMatrix<double> loadings(shape.num_genes, components);
    for (int component = 0; component < components; ++component) {
        const double variance = std::max(0.0, pairs->values[static_cast<std::size_t>(component)]);
        result.variance.push_back(variance);
        // sklearn: explained_variance_ / np.var(X, ddof=1, axis=0).sum().
        result.variance_ratio.push_back(total_variance > 0 ? variance / total_variance : 0.0);
        for (std::size_t gene = 0; gene < genes; ++gene)
            loadings(static_cast<std::int64_t>(gene), component) = pairs->vectors(static_cast<Eigen::Index>(gene), component);
    }

    ProjectionRequest request;
    request.standardization = standardization;
    request.center = column_mean;
    request.loadings = &loadings;
    DenseMatrix<double> scores = shards.project(request, ctx);
    ctx.report(0.95);

    // Sign convention of sklearn's svd_flip(u_based_decision=True).
    pca_detail::flip_signs_by_largest_score(scores, loadings);
    result.scores = DenseMatrix<float>(scores.rows(), components);
    for (std::size_t index = 0; index < scores.values().size(); ++index)
        result.scores.values()[index] = static_cast<float>(scores.values()[index]);
    result.loadings = DenseMatrix<float>(loadings.rows(), components);
    for (std::size_t index = 0; index < loadings.values().size(); ++index)
        result.loadings.values()[index] = static_cast<float>(loadings.values()[index]);
    ctx.report(1.0);
    return result;
}

}  // namespace fathom
