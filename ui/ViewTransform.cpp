#include "ui/ViewTransform.hpp"

#include <algorithm>
#include <cmath>
#include <vector>
#include <utility>

namespace fathom::ui {

WorldRect WorldRect::intersected(const WorldRect& other) const noexcept {
    return {std::max(min_x, other.min_x), std::max(min_y, other.min_y), std::min(max_x, other.max_x),
            std::min(max_y, other.max_y)};
}

WorldRect point_bounds(std::span<const float> xy) noexcept {
    WorldRect bounds{HUGE_VAL, HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (std::size_t point = 0; point + 1 < xy.size(); point += 2) {
        const float x = xy[point], y = xy[point + 1];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        bounds.min_x = std::min(bounds.min_x, double{x});
        bounds.max_x = std::max(bounds.max_x, double{x});
        bounds.min_y = std::min(bounds.min_y, double{y});
        bounds.max_y = std::max(bounds.max_y, double{y});
    }
    return bounds.empty() ? WorldRect{} : bounds;
}

WorldRect robust_extent(std::span<const float> xy, const WorldRect& all, double tail, double margin_fraction,
                        std::size_t max_sample) {
    const std::size_t count = xy.size() / 2;
    if (count == 0 || all.empty()) return all;
    const std::size_t stride = std::max<std::size_t>(1, (count + std::max<std::size_t>(max_sample, 1) - 1) /
                                                            std::max<std::size_t>(max_sample, 1));
    std::vector<float> xs, ys;
    xs.reserve(count / stride + 1);
    ys.reserve(count / stride + 1);
    for (std::size_t point = 0; point < count; point += stride) {
        const float x = xy[2 * point], y = xy[2 * point + 1];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        xs.push_back(x);
        ys.push_back(y);
    }
    if (xs.empty()) return all;
    tail = std::clamp(std::isfinite(tail) ? tail : 0.0, 0.0, 0.49);
    const auto quantiles = [tail](std::vector<float>& values) {
        const std::size_t last = values.size() - 1;
        const auto low_index = static_cast<std::size_t>(std::floor(tail * static_cast<double>(last)));
        const auto high_index = static_cast<std::size_t>(std::ceil((1.0 - tail) * static_cast<double>(last)));
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(high_index), values.end());
        const double high = values[high_index];
        // Everything left of high_index is <= high: the low quantile lies there.
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(low_index),
                         values.begin() + static_cast<std::ptrdiff_t>(high_index) + 1);
        return std::pair<double, double>{values[low_index], high};
    };
    const auto [low_x, high_x] = quantiles(xs);
    const auto [low_y, high_y] = quantiles(ys);
    if (!(high_x > low_x) || !(high_y > low_y)) return all;
    const double margin = std::max(0.0, std::isfinite(margin_fraction) ? margin_fraction : 0.0);
    const WorldRect bulk{low_x - margin * (high_x - low_x), low_y - margin * (high_y - low_y),
                         high_x + margin * (high_x - low_x), high_y + margin * (high_y - low_y)};
    const WorldRect clipped = bulk.intersected(all);
    return clipped.empty() ? all : clipped;
}

void ViewTransform::set_viewport(int width_px, int height_px) noexcept {
    m_width = std::max(1, width_px);
    m_height = std::max(1, height_px);
}

void ViewTransform::set_pixels_per_unit(double scale) noexcept {
    m_scale = std::isfinite(scale) ? std::clamp(scale, k_min_scale, k_max_scale) : 1.0;
}

void ViewTransform::fit(const WorldRect& bounds, double margin_fraction) noexcept {
    if (bounds.empty()) {
        m_center = {0.0, 0.0};
        m_scale = 1.0;
        return;
    }
    m_center = {(bounds.min_x + bounds.max_x) / 2.0, (bounds.min_y + bounds.max_y) / 2.0};
    const double margin = std::clamp(margin_fraction, 0.0, 0.45) * std::min(m_width, m_height);
    const double usable_width = std::max(1.0, m_width - 2.0 * margin);
    const double usable_height = std::max(1.0, m_height - 2.0 * margin);
    const double scale_x = bounds.width() > 0.0 ? usable_width / bounds.width() : HUGE_VAL;
    const double scale_y = bounds.height() > 0.0 ? usable_height / bounds.height() : HUGE_VAL;
    const double scale = std::min(scale_x, scale_y);
    set_pixels_per_unit(std::isfinite(scale) ? scale : 1.0);
}

void ViewTransform::fit_left_of(const WorldRect& bounds, double right_reserved_px, double margin_fraction) noexcept {
    const int reserved = static_cast<int>(std::lround(std::clamp(right_reserved_px, 0.0, m_width * 0.6)));
    const int full_width = m_width;
    m_width = std::max(1, full_width - reserved);
    fit(bounds, margin_fraction);
    m_width = full_width;
    // The data's centre sits in the middle of the part left of the strip.
    if (!bounds.empty()) m_center.x += static_cast<double>(reserved) / 2.0 / m_scale;
}

Vec2 ViewTransform::world_to_screen(Vec2 world) const noexcept {
    return {m_width / 2.0 + (world.x - m_center.x) * m_scale, m_height / 2.0 - (world.y - m_center.y) * m_scale};
}

Vec2 ViewTransform::screen_to_world(Vec2 screen) const noexcept {
    return {m_center.x + (screen.x - m_width / 2.0) / m_scale, m_center.y - (screen.y - m_height / 2.0) / m_scale};
}

void ViewTransform::pan_pixels(double dx_px, double dy_px) noexcept {
    m_center.x -= dx_px / m_scale;
    m_center.y += dy_px / m_scale;
}

void ViewTransform::zoom_at(Vec2 screen, double factor) noexcept {
    if (!(factor > 0.0) || !std::isfinite(factor)) return;
    const Vec2 anchor = screen_to_world(screen);
    set_pixels_per_unit(m_scale * factor);
    // Solve world_to_screen(anchor) == screen for the centre.
    m_center.x = anchor.x - (screen.x - m_width / 2.0) / m_scale;
    m_center.y = anchor.y + (screen.y - m_height / 2.0) / m_scale;
}

WorldRect ViewTransform::visible_world() const noexcept {
    const Vec2 top_left = screen_to_world({0.0, 0.0});
    const Vec2 bottom_right = screen_to_world({static_cast<double>(m_width), static_cast<double>(m_height)});
    return {top_left.x, bottom_right.y, bottom_right.x, top_left.y};
}

std::array<float, 4> ViewTransform::ndc_scale_offset() const noexcept {
    const double sx = 2.0 * m_scale / m_width;
    const double sy = 2.0 * m_scale / m_height;
    return {static_cast<float>(sx), static_cast<float>(sy), static_cast<float>(-m_center.x * sx),
            static_cast<float>(-m_center.y * sy)};
}

}  // namespace fathom::ui
