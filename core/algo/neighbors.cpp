#include "core/algo/neighbors.hpp"

#include "core/types/JobContext.hpp"

namespace fathom {

void validate(const NeighborsOptions& options, std::int64_t num_cells, std::int64_t num_dims) {
    validate(options.knn, num_cells, num_dims);
    validate(options.connectivities);
}

NeighborsResult neighbors(const DenseMatrix<float>& points, const NeighborsOptions& options, JobContext& ctx,
                          const Accelerator* accelerator) {
    validate(options, points.rows(), points.cols());
    return neighbors_from_knn(nearest_neighbors(points, options.knn, ctx, accelerator), options, ctx);
}

NeighborsResult neighbors_from_knn(KnnResult knn, const NeighborsOptions& options, JobContext& ctx) {
    NeighborsResult result;
    result.knn = std::move(knn);
    result.distances = distances_graph(result.knn.graph);
    auto fuzzy = fuzzy_simplicial_set(result.knn.graph, options.connectivities, ctx);
    result.connectivities = std::move(fuzzy.connectivities);
    result.sigmas = std::move(fuzzy.sigmas);
    result.rhos = std::move(fuzzy.rhos);
    return result;
}

}  // namespace fathom
