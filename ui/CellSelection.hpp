#pragma once
/// Cell selections on the 2-D plot: selection modes, the polygon test that lasso and
/// rectangle selection share, and set operations on selections. Pure functions (no Qt,
/// no GL) so that they are tested against brute force directly.
///
/// A selection is a sorted list of distinct cell indices (obs order): small for small
/// selections, cheap to keep as undo states, and combined by linear merges.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ui/ViewTransform.hpp"

namespace fathom::ui {

/// How a new selection gesture combines with the current selection.
enum class SelectionMode {
    Replace,   ///< the cells hit become the selection
    Add,       ///< union with the current selection (Shift while dragging)
    Subtract,  ///< the cells hit leave the selection (Alt or Ctrl while dragging)
};

/// "replace", "add", "subtract".
const char* selection_mode_name(SelectionMode mode) noexcept;

/// Sorted, distinct cell indices.
using CellSet = std::vector<std::uint32_t>;
/// An immutable selection shared by the plot, the undo stack and the panels (never null
/// where a function returns one; empty = nothing selected).
using SharedCellSet = std::shared_ptr<const CellSet>;

/// Even-odd (crossing number) test of the point (x, y) against a closed polygon given by
/// its vertices (the last joins the first; self-intersecting and concave polygons
/// allowed). Points exactly on an edge follow the half-open rule of the crossing test
/// (consistently: of two polygons sharing an edge, exactly one contains the point).
/// Fewer than 3 vertices contain nothing.
bool point_in_polygon(std::span<const Vec2> polygon, double x, double y) noexcept;

/// Whether the edge a -> b crosses the ray from (x, y) towards +x: the term of the
/// even-odd test, half-open in y so that a vertex on the ray counts once.
inline bool edge_crosses_ray(Vec2 a, Vec2 b, double x, double y) noexcept {
    return (a.y > y) != (b.y > y) && x < a.x + (y - a.y) * (b.x - a.x) / (b.y - a.y);
}

/// The four corners of an axis-aligned rectangle as a polygon.
std::vector<Vec2> rectangle_polygon(Vec2 corner_a, Vec2 corner_b);

/// `current` combined with `hits` (both sorted and distinct) by `mode`.
CellSet combine_selection(std::span<const std::uint32_t> current, std::span<const std::uint32_t> hits,
                          SelectionMode mode);

/// num_cells flags, 1 for the cells in `cells` (indices >= num_cells are ignored).
std::vector<std::uint8_t> selection_mask(std::span<const std::uint32_t> cells, std::int64_t num_cells);
/// The cells whose flag is non-zero, ascending.
CellSet cells_of_mask(std::span<const std::uint8_t> mask);
/// Every cell of [0, num_cells) not in `cells` (sorted) — the inverted selection.
CellSet complement(std::span<const std::uint32_t> cells, std::int64_t num_cells);

}  // namespace fathom::ui
