#include "ui/ViewTransform.hpp"

#include <algorithm>
#include <cmath>

namespace fathom::ui {

WorldRect WorldRect::intersected(const WorldRect& other) const noexcept {
    return {std::max(min_x, other.min_x), std::max(min_y, other.min_y), std::min(max_x, other.max_x),
            std::min(max_y, other.max_y)};
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
