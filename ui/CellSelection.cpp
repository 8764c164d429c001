#include "ui/CellSelection.hpp"

#include <algorithm>
#include <iterator>

namespace fathom::ui {

const char* selection_mode_name(SelectionMode mode) noexcept {
    switch (mode) {
        case SelectionMode::Replace: return "replace";
        case SelectionMode::Add: return "add";
        case SelectionMode::Subtract: return "subtract";
    }
    return "replace";
}

bool point_in_polygon(std::span<const Vec2> polygon, double x, double y) noexcept {
    if (polygon.size() < 3) return false;
    bool inside = false;
    const std::size_t count = polygon.size();
    for (std::size_t edge = 0; edge < count; ++edge)
        if (edge_crosses_ray(polygon[edge], polygon[(edge + 1) % count], x, y)) inside = !inside;
    return inside;
}

std::vector<Vec2> rectangle_polygon(Vec2 corner_a, Vec2 corner_b) {
    const double min_x = std::min(corner_a.x, corner_b.x), max_x = std::max(corner_a.x, corner_b.x);
    const double min_y = std::min(corner_a.y, corner_b.y), max_y = std::max(corner_a.y, corner_b.y);
    return {{min_x, min_y}, {max_x, min_y}, {max_x, max_y}, {min_x, max_y}};
}

CellSet combine_selection(std::span<const std::uint32_t> current, std::span<const std::uint32_t> hits,
                          SelectionMode mode) {
    CellSet out;
    switch (mode) {
        case SelectionMode::Replace: out.assign(hits.begin(), hits.end()); break;
        case SelectionMode::Add:
            out.reserve(current.size() + hits.size());
            std::set_union(current.begin(), current.end(), hits.begin(), hits.end(), std::back_inserter(out));
            break;
        case SelectionMode::Subtract:
            out.reserve(current.size());
            std::set_difference(current.begin(), current.end(), hits.begin(), hits.end(), std::back_inserter(out));
            break;
    }
    return out;
}

std::vector<std::uint8_t> selection_mask(std::span<const std::uint32_t> cells, std::int64_t num_cells) {
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(std::max<std::int64_t>(num_cells, 0)), 0);
    for (const std::uint32_t cell : cells)
        if (cell < mask.size()) mask[cell] = 1;
    return mask;
}

CellSet cells_of_mask(std::span<const std::uint8_t> mask) {
    CellSet cells;
    for (std::size_t cell = 0; cell < mask.size(); ++cell)
        if (mask[cell]) cells.push_back(static_cast<std::uint32_t>(cell));
    return cells;
}

CellSet complement(std::span<const std::uint32_t> cells, std::int64_t num_cells) {
    CellSet out;
    out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, num_cells - static_cast<std::int64_t>(cells.size()))));
    auto next = cells.begin();
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        while (next != cells.end() && *next < cell) ++next;
        if (next != cells.end() && *next == cell) continue;
        out.push_back(static_cast<std::uint32_t>(cell));
    }
    return out;
}

}  // namespace fathom::ui
