#pragma once
/// Options of the neighbours step (core/algo/neighbors.hpp): the kNN search and the fuzzy graph.
#include "core/types/connectivities_options.hpp"
#include "core/types/knn_options.hpp"

namespace fathom {

/// Options of the neighbours step.
struct NeighborsOptions {
    KnnOptions knn;                         ///< n_neighbors, n_pcs, search method
    ConnectivitiesOptions connectivities;   ///< umap's fuzzy_simplicial_set parameters
    /// Equal when every field is equal.
    friend bool operator==(const NeighborsOptions&, const NeighborsOptions&) = default;
};

}  // namespace fathom
