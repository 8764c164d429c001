#pragma once
/// Options of UMAP's spectral initialisation (core/algo/spectral.hpp).
#include <cstdint>
#include <functional>
#include <span>

namespace fathom {

class JobContext;

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
    /// An accelerator's sparse product for the Krylov-Schur iteration (the CUDA
    /// backend's cuSPARSE SpMM, set by the engine when the shards are on a GPU). Given a
    /// connected component's M = D^-1/2 W D^-1/2 as CSR (NormalizedAdjacencyCsr, values
    /// already scaled), it returns y = M x for host vectors of the component's size, or
    /// an empty function to decline. The rest of the iteration runs on the host as
    /// without it; a DeviceError thrown by the product restarts that component's solve
    /// on the host (the job's progress message says so).
    std::function<std::function<void(const double* x, double* y)>(std::span<const std::int64_t> offsets,
                                                                   std::span<const std::int32_t> columns,
                                                                   std::span<const double> values, JobContext& ctx)>
        accelerated_operator;
    /// Equal when every field is equal.
    friend bool operator==(const SpectralOptions&, const SpectralOptions&) = default;
};

}  // namespace fathom
