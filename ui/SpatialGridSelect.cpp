// SpatialGrid::points_in_polygon: lasso and rectangle selection on the grid.
//
// 1. Every grid cell an edge passes through (conservatively: the edge's x-extent within
//    each row band, widened by a small margin) is a boundary cell.
// 2. Any other cell lies wholly inside or wholly outside the polygon; one even-odd
//    scanline through the row's centre decides it for the whole row.
// 3. Only the points of boundary cells are tested, against the edges that overlap
//    their row.
#include <algorithm>
#include <cmath>

#include "ui/CellSelection.hpp"
#include "ui/SpatialGrid.hpp"

namespace fathom::ui {

std::vector<std::uint32_t> SpatialGrid::points_in_polygon(std::span<const Vec2> polygon,
                                                          const std::function<bool(std::int64_t)>& accept,
                                                          PolygonQueryStats* stats) const {
    std::vector<std::uint32_t> out;
    PolygonQueryStats counts;
    if (m_num_points == 0 || polygon.size() < 3) {
        if (stats) *stats = counts;
        return out;
    }
    for (const Vec2& vertex : polygon)
        if (!std::isfinite(vertex.x) || !std::isfinite(vertex.y)) {
            if (stats) *stats = counts;
            return out;
        }
    // Margin in grid units: covers the rounding of bucketing and of the clipping below.
    constexpr double k_margin = 1e-3;
    const double cell = m_cell_size;
    const auto grid_x = [&](double x) { return (x - m_bounds.min_x) / cell; };
    const auto grid_y = [&](double y) { return (y - m_bounds.min_y) / cell; };
    const auto clamp_column = [&](double value) {
        return static_cast<int>(std::clamp(std::floor(value), 0.0, static_cast<double>(m_columns - 1)));
    };
    const auto clamp_row = [&](double value) {
        return static_cast<int>(std::clamp(std::floor(value), 0.0, static_cast<double>(m_rows - 1)));
    };

    // Polygon bounds in grid cells.
    double min_x = HUGE_VAL, max_x = -HUGE_VAL, min_y = HUGE_VAL, max_y = -HUGE_VAL;
    for (const Vec2& vertex : polygon) {
        min_x = std::min(min_x, vertex.x);
        max_x = std::max(max_x, vertex.x);
        min_y = std::min(min_y, vertex.y);
        max_y = std::max(max_y, vertex.y);
    }
    if (max_x < m_bounds.min_x || min_x > m_bounds.max_x || max_y < m_bounds.min_y || min_y > m_bounds.max_y) {
        if (stats) *stats = counts;
        return out;
    }
    const int row_begin = clamp_row(grid_y(min_y) - k_margin), row_end = clamp_row(grid_y(max_y) + k_margin);
    const int column_begin = clamp_column(grid_x(min_x) - k_margin);
    const int column_end = clamp_column(grid_x(max_x) + k_margin);
    const int num_rows = row_end - row_begin + 1, num_columns = column_end - column_begin + 1;

    // Edges overlapping each row band, and the boundary cells they pass through.
    const std::size_t num_edges = polygon.size();
    std::vector<std::vector<std::uint32_t>> row_edges(static_cast<std::size_t>(num_rows));
    std::vector<std::uint8_t> boundary(static_cast<std::size_t>(num_rows) * num_columns, 0);
    for (std::size_t edge = 0; edge < num_edges; ++edge) {
        const Vec2 a = polygon[edge], b = polygon[(edge + 1) % num_edges];
        const double ay = grid_y(a.y), by = grid_y(b.y), ax = grid_x(a.x), bx = grid_x(b.x);
        const int first = std::max(row_begin, clamp_row(std::min(ay, by) - k_margin));
        const int last = std::min(row_end, clamp_row(std::max(ay, by) + k_margin));
        for (int row = first; row <= last; ++row) {
            row_edges[static_cast<std::size_t>(row - row_begin)].push_back(static_cast<std::uint32_t>(edge));
            // The edge's x-extent within the (widened) band [row, row + 1].
            double low_x = std::min(ax, bx), high_x = std::max(ax, bx);
            if (ay != by) {
                const double band_low = row - k_margin, band_high = row + 1 + k_margin;
                double t0 = (band_low - ay) / (by - ay), t1 = (band_high - ay) / (by - ay);
                if (t0 > t1) std::swap(t0, t1);
                t0 = std::clamp(t0, 0.0, 1.0);
                t1 = std::clamp(t1, 0.0, 1.0);
                const double x0 = ax + t0 * (bx - ax), x1 = ax + t1 * (bx - ax);
                low_x = std::min(x0, x1);
                high_x = std::max(x0, x1);
            }
            const int column_low = std::max(column_begin, clamp_column(low_x - k_margin));
            const int column_high = std::min(column_end, clamp_column(high_x + k_margin));
            std::uint8_t* marks = boundary.data() + static_cast<std::size_t>(row - row_begin) * num_columns;
            for (int column = column_low; column <= column_high; ++column) marks[column - column_begin] = 1;
        }
    }

    std::vector<double> crossings;
    for (int row = row_begin; row <= row_end; ++row) {
        const auto& edges = row_edges[static_cast<std::size_t>(row - row_begin)];
        // Scanline through the row's centre: the crossings right of a cell's centre.
        const double center_y = m_bounds.min_y + (row + 0.5) * cell;
        crossings.clear();
        for (const std::uint32_t edge : edges) {
            const Vec2 a = polygon[edge], b = polygon[(edge + 1) % num_edges];
            if ((a.y > center_y) != (b.y > center_y))
                crossings.push_back(a.x + (center_y - a.y) * (b.x - a.x) / (b.y - a.y));
        }
        std::sort(crossings.begin(), crossings.end());
        const std::uint8_t* marks = boundary.data() + static_cast<std::size_t>(row - row_begin) * num_columns;
        std::size_t passed = 0;  // crossings left of (or at) the current cell centre
        for (int column = column_begin; column <= column_end; ++column) {
            const std::size_t index = static_cast<std::size_t>(row) * m_columns + column;
            const std::int64_t begin = m_cell_offsets[index], end = m_cell_offsets[index + 1];
            const double center_x = m_bounds.min_x + (column + 0.5) * cell;
            while (passed < crossings.size() && crossings[passed] <= center_x) ++passed;
            if (marks[column - column_begin]) {
                ++counts.boundary_cells;
                for (std::int64_t slot = begin; slot < end; ++slot) {
                    const std::uint32_t point = m_point_ids[static_cast<std::size_t>(slot)];
                    ++counts.points_tested;
                    // Only this row's edges can cross the ray at the point's height.
                    const double x = m_xy[2 * point], y = m_xy[2 * point + 1];
                    bool inside = false;
                    for (const std::uint32_t edge : edges)
                        if (edge_crosses_ray(polygon[edge], polygon[(edge + 1) % num_edges], x, y)) inside = !inside;
                    if (inside && (!accept || accept(point))) out.push_back(point);
                }
            } else if ((crossings.size() - passed) % 2 == 1) {
                ++counts.interior_cells;
                for (std::int64_t slot = begin; slot < end; ++slot) {
                    const std::uint32_t point = m_point_ids[static_cast<std::size_t>(slot)];
                    if (!accept || accept(point)) out.push_back(point);
                }
            }
        }
    }
    // Ascending order: a large result is put in order through one flag per point (a pass
    // over n bytes), which is several times faster than sorting it.
    if (static_cast<std::int64_t>(out.size()) > m_num_points / 32) {
        std::vector<std::uint8_t> flags(static_cast<std::size_t>(m_num_points), 0);
        for (const std::uint32_t point : out) flags[point] = 1;
        std::size_t next = 0;
        for (std::size_t point = 0; point < flags.size(); ++point)
            if (flags[point]) out[next++] = static_cast<std::uint32_t>(point);
    } else {
        std::sort(out.begin(), out.end());
    }
    if (stats) *stats = counts;
    return out;
}

}  // namespace fathom::ui
