#pragma once
/// Options of PCA (core/algo/pca.hpp).
#include <cstdint>

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
    /// Host solver; with Auto or Exact an accelerator passed to pca() solves instead.
    PcaSolver solver = PcaSolver::Auto;
    /// Equal when every field is equal.
    friend bool operator==(const PcaOptions&, const PcaOptions&) = default;
};

}  // namespace fathom
