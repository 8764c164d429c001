#pragma once
/// Exact PCA of the standardised matrix, as scanpy's pp.pca (zero_center=True) with
/// scikit-learn's PCA: the Gram matrix is reduced across shards, the top eigenpairs of
/// the covariance are found on the host in double (PcaSolver), and the cells are
/// projected shard by shard.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/algo/scale.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"

namespace fathom {

/// How the top eigenpairs of the genes x genes covariance are found (on the host, in
/// double, single-threaded so that results never depend on the thread count).
enum class PcaSolver {
    /// Lanczos when the wanted components are few for the genes (a Krylov space of
    /// 2 x components + 1 vectors at most half the genes), else Exact.
    Auto,
    /// Full symmetric eigendecomposition (Eigen's SelfAdjointEigenSolver), O(genes^3).
    Exact,
    /// Restarted block Krylov (block Lanczos with full reorthogonalisation) and
    /// Rayleigh-Ritz from a seeded start, until every wanted eigenpair's residual is
    /// below 1e-8 of the largest eigenvalue (falls back to Exact if it does not get
    /// there). O(genes^2 x Krylov dimension) per restart cycle.
    BlockKrylov,
    /// Implicitly restarted Lanczos (Spectra's SymEigsSolver, the method of ARPACK's
    /// dsaupd that scikit-learn's arpack solver runs) for the top components only, from
    /// a seeded start, until every wanted Ritz pair's residual is below 1e-10 of its
    /// eigenvalue (falls back to Exact if it does not get there). O(genes^2) per
    /// iteration: far cheaper than Exact's O(genes^3) when few components are wanted.
    Lanczos,
};

/// PCA of the scaled HVG block. Cells x genes in, cells x components out.
struct PcaOptions {
    int num_components = 50;   ///< >= 1; capped at min(cells, genes) - 1
    std::uint64_t seed = 0;    ///< start of the Krylov / Lanczos solvers; same seed => identical result
    PcaSolver solver = PcaSolver::Auto;
    /// An accelerator's exact eigensolver (the CUDA backend's cuSOLVER syevdx, set by the
    /// engine when the shards are on a GPU and the covariance is large enough to pay),
    /// used instead of the host solvers with solver Auto or Exact. Given the genes x
    /// genes covariance (symmetric) and the number of components k, it fills at least k
    /// of the largest eigenpairs in ascending order (values; eigenvectors as the columns
    /// of a column-major genes x count array, the layout of LAPACK's and cuSOLVER's
    /// output) and returns true; false = declined (any device error), the host solves.
    /// Ordering and signs then follow the host path (core/algo/pca_eigen.hpp).
    std::function<bool(const DenseMatrix<double>& covariance, int components, std::vector<double>& ascending_values,
                       std::vector<double>& column_major_vectors, JobContext& ctx)>
        accelerated_eigensolver;
};

/// Scores, loadings and explained variance. Signs follow scikit-learn's svd_flip
/// (u_based_decision=True, as scanpy 1.9 / sklearn 1.2 with svd_solver='arpack'):
/// in every component the score of largest absolute value is positive (first such
/// cell on exact ties).
struct PcaResult {
    DenseMatrix<float> scores;                  ///< cells x num_components (obsm['X_pca'])
    DenseMatrix<float> loadings;                ///< genes x num_components (varm['PCs'])
    std::vector<double> variance;               ///< eigenvalues of the ddof=1 covariance (uns['pca']['variance'])
    std::vector<double> variance_ratio;         ///< variance / total variance, decreasing (uns['pca']['variance_ratio'])
    double total_variance = 0.0;                ///< trace of the covariance of the (clipped) scaled data
    int num_components = 0;                     ///< after capping
    bool exact_solver = true;                   ///< which solver produced the eigenpairs
    bool accelerated_solver = false;            ///< the eigenpairs came from accelerated_eigensolver
    int iterations = 0;                         ///< Krylov restart cycles / Lanczos restarts run (0 for the exact solver)
};

/// Throws std::invalid_argument naming the field: "PcaOptions::num_components must be >= 1",
/// or when the matrix is too small (fewer than 2 cells or genes).
void validate(const PcaOptions& options, const MatrixShape& shape);

/// PCA of the shards standardised by `scaling` (every gene of the current matrix).
PcaResult pca(const ShardSet& shards, const ScaleResult& scaling, const PcaOptions& options, JobContext& ctx);

}  // namespace fathom
