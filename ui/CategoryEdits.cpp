#include "ui/CategoryEdits.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/engine/palette.hpp"

namespace fathom::ui {

namespace {

/// The first colour of scanpy's 20-colour palette the column does not use yet (grey
/// when it uses them all).
std::string unused_color(const std::vector<std::string>& used) {
    for (const std::string& color : fathom::default_category_colors(20))
        if (std::find(used.begin(), used.end(), color) == used.end()) return color;
    return k_rest_color;
}

void check_consistent(const CategoricalEdit& column) {
    if (column.colors.size() != column.categories.size())
        throw std::invalid_argument("the column has " + std::to_string(column.colors.size()) + " colours for " +
                                    std::to_string(column.categories.size()) + " categories");
}

}  // namespace

std::vector<std::int64_t> category_counts(const CategoricalEdit& column) {
    std::vector<std::int64_t> counts(column.categories.size(), 0);
    for (const std::int32_t code : column.codes)
        if (code >= 0 && static_cast<std::size_t>(code) < counts.size()) ++counts[static_cast<std::size_t>(code)];
    return counts;
}

CategoricalEdit annotate_cells(const CategoricalEdit* existing, std::span<const std::uint8_t> mask,
                               const std::string& category) {
    if (category.empty()) throw std::invalid_argument("the category name is empty");
    CategoricalEdit out;
    if (!existing) {
        if (category == k_rest_category)
            throw std::invalid_argument(std::string("'") + k_rest_category + "' names the cells left out; choose another name");
        out.categories = {category, k_rest_category};
        out.colors = {fathom::default_category_colors(1).front(), k_rest_color};
        out.codes.resize(mask.size());
        for (std::size_t cell = 0; cell < mask.size(); ++cell) out.codes[cell] = mask[cell] ? 0 : 1;
        return out;
    }
    check_consistent(*existing);
    if (mask.size() != existing->codes.size())
        throw std::invalid_argument("the mask has " + std::to_string(mask.size()) + " flags for " +
                                    std::to_string(existing->codes.size()) + " cells");
    out = *existing;
    auto found = std::find(out.categories.begin(), out.categories.end(), category);
    const auto target = static_cast<std::int32_t>(found - out.categories.begin());
    if (found == out.categories.end()) {
        out.categories.push_back(category);
        out.colors.push_back(unused_color(out.colors));
    }
    const std::vector<std::int64_t> before = category_counts(out);
    for (std::size_t cell = 0; cell < mask.size(); ++cell)
        if (mask[cell]) out.codes[cell] = target;
    const std::vector<std::int64_t> after = category_counts(out);
    // Drop the categories this move emptied; renumber the codes.
    std::vector<std::int32_t> renumber(out.categories.size(), -1);
    CategoricalEdit kept;
    kept.codes = std::move(out.codes);
    for (std::size_t index = 0; index < out.categories.size(); ++index) {
        if (before[index] > 0 && after[index] == 0) continue;
        renumber[index] = static_cast<std::int32_t>(kept.categories.size());
        kept.categories.push_back(out.categories[index]);
        kept.colors.push_back(out.colors[index]);
    }
    for (std::int32_t& code : kept.codes)
        if (code >= 0 && static_cast<std::size_t>(code) < renumber.size()) code = renumber[static_cast<std::size_t>(code)];
    return kept;
}

CategoricalEdit rename_category(const CategoricalEdit& column, int index, const std::string& name) {
    check_consistent(column);
    if (index < 0 || static_cast<std::size_t>(index) >= column.categories.size())
        throw std::invalid_argument("category " + std::to_string(index) + " does not exist (the column has " +
                                    std::to_string(column.categories.size()) + ")");
    if (name.empty()) throw std::invalid_argument("the new name of category '" + column.categories[static_cast<std::size_t>(index)] + "' is empty");
    for (std::size_t other = 0; other < column.categories.size(); ++other)
        if (static_cast<int>(other) != index && column.categories[other] == name)
            throw std::invalid_argument("category '" + name + "' already exists; merge the two categories instead");
    CategoricalEdit out = column;
    out.categories[static_cast<std::size_t>(index)] = name;
    return out;
}

CategoricalEdit merge_categories(const CategoricalEdit& column, std::span<const int> indices, const std::string& name) {
    check_consistent(column);
    const std::set<int> merged(indices.begin(), indices.end());
    if (merged.size() < 2) throw std::invalid_argument("merging needs at least 2 distinct categories");
    for (const int index : merged)
        if (index < 0 || static_cast<std::size_t>(index) >= column.categories.size())
            throw std::invalid_argument("category " + std::to_string(index) + " does not exist (the column has " +
                                        std::to_string(column.categories.size()) + ")");
    if (name.empty()) throw std::invalid_argument("the merged category's name is empty");
    for (std::size_t other = 0; other < column.categories.size(); ++other)
        if (!merged.count(static_cast<int>(other)) && column.categories[other] == name)
            throw std::invalid_argument("category '" + name + "' already exists and is not among the merged ones");
    const int first = *merged.begin();
    std::vector<std::int32_t> renumber(column.categories.size(), -1);
    CategoricalEdit out;
    for (std::size_t index = 0; index < column.categories.size(); ++index) {
        if (merged.count(static_cast<int>(index)) && static_cast<int>(index) != first) continue;
        renumber[index] = static_cast<std::int32_t>(out.categories.size());
        out.categories.push_back(static_cast<int>(index) == first ? name : column.categories[index]);
        out.colors.push_back(column.colors[index]);
    }
    for (const int index : merged) renumber[static_cast<std::size_t>(index)] = renumber[static_cast<std::size_t>(first)];
    out.codes.reserve(column.codes.size());
    for (const std::int32_t code : column.codes)
        out.codes.push_back(code >= 0 && static_cast<std::size_t>(code) < renumber.size() ? renumber[static_cast<std::size_t>(code)] : -1);
    return out;
}

}  // namespace fathom::ui
