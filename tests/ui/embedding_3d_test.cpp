// Which coordinates the 3-D view shows: a 3-column X_umap, else PC1..PC3 of X_pca
// (built with or without VTK).
#include "ui/embedding_3d.hpp"

#include <gtest/gtest.h>

namespace fathom::ui {
namespace {

using Obsm = std::map<std::string, std::shared_ptr<const DenseMatrix<float>>>;

std::shared_ptr<const DenseMatrix<float>> numbered(std::int64_t rows, std::int64_t cols, float offset) {
    auto matrix = std::make_shared<DenseMatrix<float>>(rows, cols);
    for (std::int64_t row = 0; row < rows; ++row)
        for (std::int64_t col = 0; col < cols; ++col) (*matrix)(row, col) = offset + static_cast<float>(row * 100 + col);
    return matrix;
}

TEST(Pick3dEmbedding, ThreeColumnUmapComesFirst) {
    const Obsm obsm = {{"X_umap", numbered(4, 3, 0.5f)}, {"X_pca", numbered(4, 50, 0.0f)}};
    const auto picked = pick_3d_embedding(obsm, 4);
    ASSERT_TRUE(picked.has_value());
    EXPECT_EQ(picked->key, "X_umap");
    ASSERT_EQ(picked->num_cells(), 4);
    for (std::int64_t cell = 0; cell < 4; ++cell)
        for (std::int64_t axis = 0; axis < 3; ++axis)
            EXPECT_EQ(picked->xyz[static_cast<std::size_t>(cell * 3 + axis)], 0.5f + static_cast<float>(cell * 100 + axis));
}

TEST(Pick3dEmbedding, TwoColumnUmapFallsBackToTheFirstThreePcs) {
    const Obsm obsm = {{"X_umap", numbered(5, 2, 0.5f)}, {"X_pca", numbered(5, 50, 0.0f)}};
    const auto picked = pick_3d_embedding(obsm, 5);
    ASSERT_TRUE(picked.has_value());
    EXPECT_EQ(picked->key, "X_pca");
    ASSERT_EQ(picked->xyz.size(), 15u);
    EXPECT_EQ(picked->xyz[3], 100.0f);  // cell 1, PC1
    EXPECT_EQ(picked->xyz[5], 102.0f);  // cell 1, PC3 (PC4.. are dropped)
}

TEST(Pick3dEmbedding, NothingUsable) {
    EXPECT_FALSE(pick_3d_embedding({}, 5).has_value());
    // Too few columns, or rows that do not match the cells.
    EXPECT_FALSE(pick_3d_embedding({{"X_pca", numbered(5, 2, 0.0f)}}, 5).has_value());
    EXPECT_FALSE(pick_3d_embedding({{"X_umap", numbered(6, 3, 0.0f)}, {"X_pca", numbered(6, 10, 0.0f)}}, 5).has_value());
    // A 4-column UMAP is not shown as 3-D; X_pca is used instead.
    const auto picked = pick_3d_embedding({{"X_umap", numbered(5, 4, 0.0f)}, {"X_pca", numbered(5, 3, 0.0f)}}, 5);
    ASSERT_TRUE(picked.has_value());
    EXPECT_EQ(picked->key, "X_pca");
    EXPECT_THROW(first_three_columns(DenseMatrix<float>(3, 2)), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::ui
