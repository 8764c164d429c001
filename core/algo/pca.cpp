#include "core/algo/pca.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

namespace fathom {

void validate(const PcaOptions& options, const MatrixShape& shape) {
    if (options.num_components < 1) throw std::invalid_argument("PcaOptions::num_components must be >= 1");
    if (shape.num_cells < 2 || shape.num_genes < 2)
        throw std::invalid_argument("pca: needs at least 2 cells and 2 genes; the matrix is " +
                                    std::to_string(shape.num_cells) + " x " + std::to_string(shape.num_genes));
}

PcaResult pca(const ShardSet& shards, const ScaleResult& scaling, const PcaOptions& options, JobContext& ctx) {
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
    // Exact symmetric eigendecomposition in double (eigenvalues ascending).
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(covariance);
    if (solver.info() != Eigen::Success) throw std::runtime_error("pca: the eigendecomposition did not converge");
    ctx.report(0.7);
    const auto& eigenvalues = solver.eigenvalues();
    const auto& eigenvectors = solver.eigenvectors();
    const double total_variance = covariance.trace();

    PcaResult result;
    result.num_components = components;
    result.total_variance = total_variance;
    DenseMatrix<double> loadings(shape.num_genes, components);
    for (int component = 0; component < components; ++component) {
        const auto column = static_cast<Eigen::Index>(genes) - 1 - component;
        const double variance = std::max(0.0, eigenvalues(column));
        result.variance.push_back(variance);
        // sklearn: explained_variance_ / np.var(X, ddof=1, axis=0).sum().
        result.variance_ratio.push_back(total_variance > 0 ? variance / total_variance : 0.0);
        for (std::size_t gene = 0; gene < genes; ++gene)
            loadings(static_cast<std::int64_t>(gene), component) = eigenvectors(static_cast<Eigen::Index>(gene), column);
    }

    ProjectionRequest request;
    request.standardization = standardization;
    request.center = column_mean;
    request.loadings = &loadings;
    DenseMatrix<double> scores = shards.project(request, ctx);
    ctx.report(0.95);

    // Sign convention of sklearn's svd_flip(u_based_decision=True): in each component
    // the score of largest |value| (first such cell) is made positive.
    for (int component = 0; component < components; ++component) {
        double best = -1.0;
        double sign = 1.0;
        for (std::int64_t cell = 0; cell < scores.rows(); ++cell) {
            const double value = scores(cell, component);
            if (std::abs(value) > best) {
                best = std::abs(value);
                sign = value < 0 ? -1.0 : 1.0;
            }
        }
        if (sign < 0) {
            for (std::int64_t cell = 0; cell < scores.rows(); ++cell) scores(cell, component) = -scores(cell, component);
            for (std::int64_t gene = 0; gene < loadings.rows(); ++gene) loadings(gene, component) = -loadings(gene, component);
        }
    }
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
