#pragma once
/// Edits of categorical obs columns made in the explorer: a cell mask saved as a
/// category, renamed categories, merged categories. Pure functions on a column's
/// categories, codes and colours; the result goes to the engine as an ObsAnnotation.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fathom::ui {

/// A categorical column as edited: codes index categories (-1 = missing), one colour
/// ("#rrggbb") per category.
struct CategoricalEdit {
    std::vector<std::string> categories;
    std::vector<std::int32_t> codes;
    std::vector<std::string> colors;
    friend bool operator==(const CategoricalEdit&, const CategoricalEdit&) = default;
};

/// The category of the cells left out of a new annotation column.
inline constexpr const char* k_rest_category = "rest";
/// Colour of k_rest_category (scanpy's grey for categories beyond its palettes).
inline constexpr const char* k_rest_color = "#d3d3d3";

/// Saves the cells with mask[cell] != 0 as `category`.
/// - `existing` null: a new column; categories {category, "rest"} (the selected cells,
///   every other cell).
/// - `existing` given: the selected cells move to `category` (added at the end when new,
///   with the first palette colour the column does not use yet); every other cell keeps
///   its category; a category left without cells by this move is dropped.
/// Throws std::invalid_argument when `category` is empty or the mask does not have one
/// flag per cell of `existing`.
CategoricalEdit annotate_cells(const CategoricalEdit* existing, std::span<const std::uint8_t> mask,
                               const std::string& category);

/// Renames category `index` to `name`. Throws std::invalid_argument naming the problem:
/// index out of range, empty name, or a name another category has (merge them instead).
CategoricalEdit rename_category(const CategoricalEdit& column, int index, const std::string& name);

/// Merges `indices` (at least 2 distinct categories) into one category called `name`, at
/// the place of the first of them and with its colour; the others are removed and the
/// codes renumbered. `name` may be one of the merged names, not another category's.
CategoricalEdit merge_categories(const CategoricalEdit& column, std::span<const int> indices, const std::string& name);

/// Cells per category (codes -1 or out of range are not counted).
std::vector<std::int64_t> category_counts(const CategoricalEdit& column);

}  // namespace fathom::ui
