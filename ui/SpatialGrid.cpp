#include "ui/SpatialGrid.hpp"

#include <algorithm>
#include <cmath>

namespace fathom::ui {

void SpatialGrid::clear() {
    m_xy = {};
    m_num_points = 0;
    m_bounds = {};
    m_columns = m_rows = 0;
    m_cell_offsets.clear();
    m_point_ids.clear();
}

void SpatialGrid::build(std::span<const float> xy, double points_per_cell) {
    clear();
    m_xy = xy;
    m_num_points = static_cast<std::int64_t>(xy.size() / 2);
    WorldRect bounds{HUGE_VAL, HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    std::int64_t finite = 0;
    for (std::int64_t point = 0; point < m_num_points; ++point) {
        const float x = xy[2 * point], y = xy[2 * point + 1];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        bounds.min_x = std::min(bounds.min_x, double{x});
        bounds.max_x = std::max(bounds.max_x, double{x});
        bounds.min_y = std::min(bounds.min_y, double{y});
        bounds.max_y = std::max(bounds.max_y, double{y});
        ++finite;
    }
    if (finite == 0) {
        m_num_points = 0;
        return;
    }
    m_bounds = bounds;
    // Square cells sized so that the bounding box holds finite / points_per_cell cells.
    const double width = std::max(bounds.width(), 1e-12), height = std::max(bounds.height(), 1e-12);
    const double target_cells = std::max(1.0, static_cast<double>(finite) / std::max(points_per_cell, 0.1));
    m_cell_size = std::sqrt(width * height / target_cells);
    if (!(m_cell_size > 0.0)) m_cell_size = std::max(width, height);
    m_columns = static_cast<int>(std::clamp(std::ceil(width / m_cell_size), 1.0, 65536.0));
    m_rows = static_cast<int>(std::clamp(std::ceil(height / m_cell_size), 1.0, 65536.0));
    m_cell_size = std::max(width / m_columns, height / m_rows);

    auto cell_of = [&](float x, float y) {
        const int column = std::clamp(static_cast<int>((x - bounds.min_x) / m_cell_size), 0, m_columns - 1);
        const int row = std::clamp(static_cast<int>((y - bounds.min_y) / m_cell_size), 0, m_rows - 1);
        return static_cast<std::size_t>(row) * m_columns + column;
    };
    const std::size_t num_cells = static_cast<std::size_t>(m_columns) * m_rows;
    m_cell_offsets.assign(num_cells + 1, 0);
    for (std::int64_t point = 0; point < m_num_points; ++point) {
        const float x = xy[2 * point], y = xy[2 * point + 1];
        if (std::isfinite(x) && std::isfinite(y)) ++m_cell_offsets[cell_of(x, y) + 1];
    }
    for (std::size_t cell = 0; cell < num_cells; ++cell) m_cell_offsets[cell + 1] += m_cell_offsets[cell];
    m_point_ids.resize(static_cast<std::size_t>(finite));
    std::vector<std::int64_t> cursor(m_cell_offsets.begin(), m_cell_offsets.end() - 1);
    for (std::int64_t point = 0; point < m_num_points; ++point) {
        const float x = xy[2 * point], y = xy[2 * point + 1];
        if (std::isfinite(x) && std::isfinite(y))
            m_point_ids[static_cast<std::size_t>(cursor[cell_of(x, y)]++)] = static_cast<std::uint32_t>(point);
    }
}

std::int64_t SpatialGrid::nearest(Vec2 world, double radius, const std::function<bool(std::int64_t)>& accept) const {
    if (m_num_points == 0 || !(radius >= 0.0)) return -1;
    const double min_x = world.x - radius, max_x = world.x + radius;
    const double min_y = world.y - radius, max_y = world.y + radius;
    if (max_x < m_bounds.min_x || min_x > m_bounds.max_x || max_y < m_bounds.min_y || min_y > m_bounds.max_y)
        return -1;
    auto clamp_index = [](double value, int count) {
        return static_cast<int>(std::clamp(std::floor(value), 0.0, static_cast<double>(count - 1)));
    };
    const int column_begin = clamp_index((min_x - m_bounds.min_x) / m_cell_size, m_columns);
    const int column_end = clamp_index((max_x - m_bounds.min_x) / m_cell_size, m_columns);
    const int row_begin = clamp_index((min_y - m_bounds.min_y) / m_cell_size, m_rows);
    const int row_end = clamp_index((max_y - m_bounds.min_y) / m_cell_size, m_rows);
    std::int64_t best = -1;
    double best_distance = radius * radius;
    for (int row = row_begin; row <= row_end; ++row) {
        for (int column = column_begin; column <= column_end; ++column) {
            const std::size_t cell = static_cast<std::size_t>(row) * m_columns + column;
            for (std::int64_t slot = m_cell_offsets[cell]; slot < m_cell_offsets[cell + 1]; ++slot) {
                const std::int64_t point = m_point_ids[static_cast<std::size_t>(slot)];
                const double dx = m_xy[2 * point] - world.x, dy = m_xy[2 * point + 1] - world.y;
                const double distance = dx * dx + dy * dy;
                if (distance > best_distance || (distance == best_distance && best >= 0 && point > best)) continue;
                if (accept && !accept(point)) continue;
                best = point;
                best_distance = distance;
            }
        }
    }
    return best;
}

}  // namespace fathom::ui
