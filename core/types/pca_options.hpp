#pragma once
/// Options of PCA (core/algo/pca.hpp).
#include <cstdint>
#include <functional>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom {

class JobContext;

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
    /// Equal when every field is equal.
    friend bool operator==(const PcaOptions&, const PcaOptions&) = default;
};

}  // namespace fathom
