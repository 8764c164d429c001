#pragma once
/// Options of UMAP's spectral initialisation (core/algo/spectral.hpp).
#include <cstdint>

namespace fathom {

/// Options of the spectral layout.
struct SpectralOptions {
    int num_components = 2;          ///< output dimensions (umap's dim); >= 1
    /// Residual tolerance of each Ritz pair, ||M x - theta x|| <= tolerance with
    /// M = D^-1/2 W D^-1/2 (umap passes tol=1e-4 to eigsh); > 0.
    double tolerance = 1e-4;
    /// Restarts of the Krylov-Schur (thick-restart Lanczos) solver before giving up
    /// on a component; >= 1.
    int max_restarts = 300;
    std::uint64_t seed = 0;          ///< random placement of tiny components and of failures
    /// Equal when every field is equal.
    friend bool operator==(const SpectralOptions&, const SpectralOptions&) = default;
};

}  // namespace fathom
