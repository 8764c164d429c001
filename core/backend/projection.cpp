#include "core/backend/projection.hpp"

namespace fathom::backend_detail {

SparseProjection sparse_projection(const ProjectionRequest& request, std::int64_t block_size) {
    const auto& loadings = *request.loadings;
    const auto& standardization = request.standardization;
    const auto block = static_cast<std::size_t>(block_size);
    const auto width = static_cast<std::size_t>(loadings.cols());
    SparseProjection out;
    out.weights.assign(block * width, 0.0);
    out.offset.assign(width, 0.0);
    for (std::size_t column = 0; column < block; ++column) {
        const double inv = standardization.inv_std[column];
        const double shift = standardization.mean[column] * inv + (request.center.empty() ? 0.0 : request.center[column]);
        for (std::size_t component = 0; component < width; ++component) {
            const double loading = loadings(static_cast<std::int64_t>(column), static_cast<std::int64_t>(component));
            out.weights[column * width + component] = inv * loading;
            out.offset[component] += shift * loading;
        }
    }
    return out;
}

}  // namespace fathom::backend_detail
