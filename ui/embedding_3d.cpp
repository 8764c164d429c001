#include "ui/embedding_3d.hpp"

#include <stdexcept>

namespace fathom::ui {

std::vector<float> first_three_columns(const DenseMatrix<float>& matrix) {
    if (matrix.cols() < 3)
        throw std::invalid_argument("first_three_columns: the matrix has " + std::to_string(matrix.cols()) +
                                    " columns; at least 3 are needed");
    std::vector<float> xyz(static_cast<std::size_t>(matrix.rows()) * 3);
    for (std::int64_t cell = 0; cell < matrix.rows(); ++cell)
        for (std::int64_t axis = 0; axis < 3; ++axis) xyz[static_cast<std::size_t>(cell * 3 + axis)] = matrix(cell, axis);
    return xyz;
}

std::optional<Embedding3D> pick_3d_embedding(
    const std::map<std::string, std::shared_ptr<const DenseMatrix<float>>>& obsm, std::int64_t num_cells) {
    const auto usable = [&](const char* key, bool exactly_three) -> const DenseMatrix<float>* {
        const auto it = obsm.find(key);
        if (it == obsm.end() || !it->second || it->second->rows() != num_cells) return nullptr;
        const std::int64_t cols = it->second->cols();
        return (exactly_three ? cols == 3 : cols >= 3) ? it->second.get() : nullptr;
    };
    // A 2-D UMAP has no third axis; PCA always has one more (n_comps >= 3).
    for (const auto& [key, exactly_three] : {std::pair{"X_umap", true}, std::pair{"X_pca", false}})
        if (const DenseMatrix<float>* matrix = usable(key, exactly_three))
            return Embedding3D{key, first_three_columns(*matrix)};
    return std::nullopt;
}

}  // namespace fathom::ui
