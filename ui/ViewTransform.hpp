#pragma once
/// World <-> screen mapping of the 2-D plot: pan, zoom around a point, fit to bounds.
/// Pure math (no Qt, no GL) so that it is tested on its own.
///
/// Screen coordinates are pixels with the origin at the top-left corner and y pointing
/// down (Qt's widget coordinates); world y points up (as in scanpy's embedding plots).
/// The scale is isotropic: one world unit is the same number of pixels along x and y.
#include <array>
#include <cstddef>
#include <span>

namespace fathom::ui {

/// A 2-D point or vector (world units or pixels, as the function says).
struct Vec2 {
    double x = 0.0;
    double y = 0.0;
    friend bool operator==(const Vec2&, const Vec2&) = default;
};

/// Axis-aligned rectangle in world units; empty when min > max.
struct WorldRect {
    double min_x = 0.0, min_y = 0.0, max_x = -1.0, max_y = -1.0;
    bool empty() const noexcept { return !(min_x <= max_x && min_y <= max_y); }
    double width() const noexcept { return empty() ? 0.0 : max_x - min_x; }
    double height() const noexcept { return empty() ? 0.0 : max_y - min_y; }
    /// Intersection (empty when they do not overlap).
    WorldRect intersected(const WorldRect& other) const noexcept;
};

/// Bounds of the finite points of `xy` (x0, y0, x1, y1, ...); empty when there are none.
WorldRect point_bounds(std::span<const float> xy) noexcept;

/// The extent of the bulk of the points `xy` (x0, y0, x1, y1, ...; non-finite points are
/// skipped), what the default view fits so that a few far outliers (small disconnected
/// components of a UMAP) do not squeeze the cloud into a corner: per axis the `tail` and
/// 1 - `tail` quantiles, widened on each side by `margin_fraction` of their span and clipped
/// to `all` (the bounds of every point). The quantiles are read with nth_element from at
/// most `max_sample` evenly strided points (no sort of all points). Returns `all` when the
/// bulk has no extent along an axis or there are no points.
WorldRect robust_extent(std::span<const float> xy, const WorldRect& all, double tail = 0.005,
                        double margin_fraction = 0.1, std::size_t max_sample = 100000);

/// The view of the plot: world point at the viewport centre, pixels per world unit and
/// the viewport size in pixels.
class ViewTransform {
public:
    /// Smallest and largest pixels-per-unit zoom_at() allows (keeps the math finite).
    static constexpr double k_min_scale = 1e-9;
    static constexpr double k_max_scale = 1e12;

    /// Viewport size in pixels (each at least 1).
    void set_viewport(int width_px, int height_px) noexcept;
    int width() const noexcept { return m_width; }
    int height() const noexcept { return m_height; }

    /// Centres `bounds` and scales it to fill the viewport minus `margin_fraction` of the
    /// smaller side on each edge; a degenerate (zero-size) or empty rect gets scale 1 around
    /// its centre (or the origin).
    void fit(const WorldRect& bounds, double margin_fraction = 0.05) noexcept;
    /// As fit(), into the viewport less `right_reserved_px` on the right (where the legend
    /// is drawn): no point of `bounds` lands in that strip.
    void fit_left_of(const WorldRect& bounds, double right_reserved_px, double margin_fraction = 0.05) noexcept;

    Vec2 world_to_screen(Vec2 world) const noexcept;
    Vec2 screen_to_world(Vec2 screen) const noexcept;

    /// Moves the content by (dx, dy) pixels (what a mouse drag by that much does).
    void pan_pixels(double dx_px, double dy_px) noexcept;
    /// Multiplies the scale by `factor` (> 1 zooms in) keeping the world point under
    /// `screen` fixed on screen. The scale is clamped to [k_min_scale, k_max_scale].
    void zoom_at(Vec2 screen, double factor) noexcept;

    /// The world rectangle the viewport shows.
    WorldRect visible_world() const noexcept;
    Vec2 center() const noexcept { return m_center; }
    double pixels_per_unit() const noexcept { return m_scale; }
    void set_center(Vec2 center) noexcept { m_center = center; }
    void set_pixels_per_unit(double scale) noexcept;

    /// (sx, sy, ox, oy) with ndc = world * (sx, sy) + (ox, oy): the vertex shader transform.
    std::array<float, 4> ndc_scale_offset() const noexcept;

    friend bool operator==(const ViewTransform&, const ViewTransform&) = default;

private:
    Vec2 m_center{0.0, 0.0};
    double m_scale = 1.0;
    int m_width = 1;
    int m_height = 1;
};

}  // namespace fathom::ui
