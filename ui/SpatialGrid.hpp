#pragma once
/// Uniform grid over a 2-D embedding for hover picking and lasso / rectangle selection:
/// built once per embedding (O(n)); a pick looks only at the cells within the pick
/// radius, a polygon query takes the cells inside the polygon whole and tests only the
/// points of the cells its edges pass through, instead of scanning every point.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ui/ViewTransform.hpp"

namespace fathom::ui {

/// Points bucketed into square cells (CSR layout: cell -> point indices).
class SpatialGrid {
public:
    /// Buckets `xy` (num_points * 2 floats, interleaved x, y) so that a cell holds about
    /// `points_per_cell` points on average. Non-finite points are left out.
    void build(std::span<const float> xy, double points_per_cell = 4.0);
    void clear();

    /// Index of the point nearest to `world` within `radius` (world units) among those
    /// `accept` (if given) returns true for; ties go to the lower index; -1 when none.
    std::int64_t nearest(Vec2 world, double radius, const std::function<bool(std::int64_t)>& accept = {}) const;

    /// Work done by one points_in_polygon() call.
    struct PolygonQueryStats {
        std::int64_t interior_cells = 0;   ///< grid cells taken whole (no point tested)
        std::int64_t boundary_cells = 0;   ///< grid cells an edge passes through
        std::int64_t points_tested = 0;    ///< points of boundary cells tested one by one
    };
    /// Indices (ascending) of the points inside `polygon` (world units; the even-odd rule
    /// of point_in_polygon in ui/CellSelection.hpp, so the result equals testing every
    /// point) among those `accept` (if given) returns true for.
    std::vector<std::uint32_t> points_in_polygon(std::span<const Vec2> polygon,
                                                 const std::function<bool(std::int64_t)>& accept = {},
                                                 PolygonQueryStats* stats = nullptr) const;

    std::int64_t num_points() const noexcept { return m_num_points; }
    bool empty() const noexcept { return m_num_points == 0; }
    int columns() const noexcept { return m_columns; }
    int rows() const noexcept { return m_rows; }
    /// World bounds of the finite points (empty when there are none).
    const WorldRect& bounds() const noexcept { return m_bounds; }

private:
    std::span<const float> m_xy;   // not owned: the caller keeps the positions alive
    std::int64_t m_num_points = 0;
    WorldRect m_bounds;
    double m_cell_size = 1.0;
    int m_columns = 0;
    int m_rows = 0;
    std::vector<std::int64_t> m_cell_offsets;  // columns * rows + 1
    std::vector<std::uint32_t> m_point_ids;
};

}  // namespace fathom::ui
