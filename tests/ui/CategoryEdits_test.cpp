// Saving a cell mask as a category, renaming and merging categories.
#include "ui/CategoryEdits.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace fathom::ui {
namespace {

CategoricalEdit three_clusters() {
    CategoricalEdit column;
    column.categories = {"0", "1", "2"};
    column.colors = {"#1f77b4", "#ff7f0e", "#279e68"};
    for (int cell = 0; cell < 300; ++cell) column.codes.push_back(cell % 3);
    column.codes[7] = -1;  // one missing value
    return column;
}

TEST(CategoryEdits, NewColumnHasTheSelectionAndRest) {
    std::vector<std::uint8_t> mask(1000, 0);
    std::mt19937 generator(4);
    std::int64_t selected = 0;
    for (auto& flag : mask) selected += flag = generator() % 4 == 0;
    const CategoricalEdit column = annotate_cells(nullptr, mask, "T cells");
    EXPECT_EQ(column.categories, (std::vector<std::string>{"T cells", "rest"}));
    EXPECT_EQ(column.colors.size(), 2u);
    EXPECT_EQ(column.colors[1], k_rest_color);
    EXPECT_EQ(category_counts(column), (std::vector<std::int64_t>{selected, 1000 - selected}));
    for (std::size_t cell = 0; cell < mask.size(); ++cell) ASSERT_EQ(column.codes[cell], mask[cell] ? 0 : 1);
    EXPECT_THROW(annotate_cells(nullptr, mask, ""), std::invalid_argument);
    EXPECT_THROW(annotate_cells(nullptr, mask, "rest"), std::invalid_argument);
}

TEST(CategoryEdits, ExistingColumnKeepsOtherCellsCategories) {
    const CategoricalEdit clusters = three_clusters();
    std::vector<std::uint8_t> mask(300, 0);
    for (int cell = 0; cell < 60; ++cell) mask[static_cast<std::size_t>(cell)] = 1;  // 20 of each cluster
    const CategoricalEdit column = annotate_cells(&clusters, mask, "B cells");
    EXPECT_EQ(column.categories, (std::vector<std::string>{"0", "1", "2", "B cells"}));
    EXPECT_EQ(column.colors.size(), 4u);
    EXPECT_EQ(std::count(clusters.colors.begin(), clusters.colors.end(), column.colors[3]), 0) << "a colour not in use";
    EXPECT_EQ(category_counts(column), (std::vector<std::int64_t>{80, 80, 80, 60}));
    for (std::size_t cell = 0; cell < 300; ++cell) ASSERT_EQ(column.codes[cell], mask[cell] ? 3 : clusters.codes[cell]);

    // Into an existing category; a category emptied by the move is dropped.
    std::vector<std::uint8_t> all_of_one(300, 0);
    for (std::size_t cell = 0; cell < 300; ++cell) all_of_one[cell] = clusters.codes[cell] == 1;
    const CategoricalEdit moved = annotate_cells(&clusters, all_of_one, "2");
    EXPECT_EQ(moved.categories, (std::vector<std::string>{"0", "2"}));
    EXPECT_EQ(moved.colors, (std::vector<std::string>{"#1f77b4", "#279e68"}));
    EXPECT_EQ(category_counts(moved), (std::vector<std::int64_t>{100, 199}));
    EXPECT_EQ(moved.codes[7], -1) << "missing stays missing";
    EXPECT_THROW(annotate_cells(&clusters, std::vector<std::uint8_t>(5, 1), "x"), std::invalid_argument);
}

TEST(CategoryEdits, RenameChangesOnlyTheName) {
    const CategoricalEdit clusters = three_clusters();
    const CategoricalEdit renamed = rename_category(clusters, 1, "NK cells");
    EXPECT_EQ(renamed.categories, (std::vector<std::string>{"0", "NK cells", "2"}));
    EXPECT_EQ(renamed.codes, clusters.codes);
    EXPECT_EQ(renamed.colors, clusters.colors);
    EXPECT_EQ(rename_category(clusters, 1, "1"), clusters);
    try {
        rename_category(clusters, 0, "2");
        ADD_FAILURE() << "a duplicate name must be refused";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("category '2' already exists"), std::string::npos) << error.what();
    }
    EXPECT_THROW(rename_category(clusters, 3, "x"), std::invalid_argument);
    EXPECT_THROW(rename_category(clusters, 0, ""), std::invalid_argument);
}

TEST(CategoryEdits, MergeJoinsCategoriesAndRenumbers) {
    CategoricalEdit clusters = three_clusters();
    clusters.categories.push_back("3");
    clusters.colors.push_back("#d62728");
    for (int cell = 0; cell < 30; ++cell) clusters.codes[static_cast<std::size_t>(cell * 10)] = 3;
    const auto before = category_counts(clusters);
    const std::vector<int> merged_indices = {3, 1};
    const CategoricalEdit merged = merge_categories(clusters, merged_indices, "myeloid");
    EXPECT_EQ(merged.categories, (std::vector<std::string>{"0", "myeloid", "2"}));
    EXPECT_EQ(merged.colors, (std::vector<std::string>{"#1f77b4", "#ff7f0e", "#279e68"}));
    EXPECT_EQ(category_counts(merged), (std::vector<std::int64_t>{before[0], before[1] + before[3], before[2]}));
    for (std::size_t cell = 0; cell < clusters.codes.size(); ++cell) {
        const std::int32_t code = clusters.codes[cell];
        const std::int32_t expected = code == 3 ? 1 : code;
        ASSERT_EQ(merged.codes[cell], expected) << cell;
    }
    // The merged category may keep one of its names, not another category's.
    const std::vector<int> two = {0, 2};
    EXPECT_EQ(merge_categories(clusters, two, "2").categories, (std::vector<std::string>{"2", "1", "3"}));
    EXPECT_THROW(merge_categories(clusters, two, "1"), std::invalid_argument);
    const std::vector<int> one = {2, 2};
    EXPECT_THROW(merge_categories(clusters, one, "x"), std::invalid_argument);
    const std::vector<int> outside = {0, 9};
    EXPECT_THROW(merge_categories(clusters, outside, "x"), std::invalid_argument);
}

}  // namespace
}  // namespace fathom::ui
