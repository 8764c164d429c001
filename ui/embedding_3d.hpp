#pragma once
/// Which coordinates the 3-D view shows, and in what layout. No VTK here, so that the
/// choice is built and tested with or without FATHOM_WITH_VTK.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom::ui {

/// Coordinates for the 3-D view.
struct Embedding3D {
    std::string key;          ///< the obsm entry they come from ("X_umap" or "X_pca")
    std::vector<float> xyz;   ///< num_cells * 3 floats (x0, y0, z0, x1, ...)
    std::int64_t num_cells() const { return static_cast<std::int64_t>(xyz.size() / 3); }
};

/// obsm['X_umap'] when it has exactly three columns (UMAP with n_components = 3), else
/// the first three columns of obsm['X_pca'] (PC1..PC3); nullopt when neither exists
/// with `num_cells` rows and at least three columns.
std::optional<Embedding3D> pick_3d_embedding(
    const std::map<std::string, std::shared_ptr<const DenseMatrix<float>>>& obsm, std::int64_t num_cells);

/// The first three columns of a cells x k row-major matrix (k >= 3) as x, y, z triples.
std::vector<float> first_three_columns(const DenseMatrix<float>& matrix);

}  // namespace fathom::ui
