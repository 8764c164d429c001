#pragma once
/// Colour maps (continuous values) and palettes (categories) used by the plot.
/// No Qt types here so that the colouring code and its tests stay light.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fathom::ui {

/// 8-bit sRGB colour with alpha (a = 0 means "not drawn" in attribute buffers).
struct Rgba8 {
    std::uint8_t r = 0, g = 0, b = 0, a = 255;
    friend bool operator==(const Rgba8&, const Rgba8&) = default;
};

/// scanpy's `na_color` ("lightgray") for missing categories and NaN values.
inline constexpr Rgba8 k_missing_color{211, 211, 211, 255};

/// Perceptually uniform colour maps (matplotlib's listed maps, 256 entries each).
enum class Colormap { Viridis, Magma, Inferno, Cividis };

/// All colour maps, in menu order.
inline constexpr Colormap k_all_colormaps[] = {Colormap::Viridis, Colormap::Magma, Colormap::Inferno,
                                               Colormap::Cividis};

/// "viridis", "magma", "inferno", "cividis".
const char* colormap_name(Colormap colormap) noexcept;
/// The colour map with that (case-sensitive) name, or nullopt.
std::optional<Colormap> colormap_from_name(std::string_view name) noexcept;
/// The 256 RGB triplets of a colour map (768 bytes, entry 0 = low end).
std::span<const std::uint8_t> colormap_table(Colormap colormap) noexcept;
/// Colour of `t` as matplotlib's ListedColormap(N=256) maps it: entry floor(t * 256),
/// clamped to [0, 255] (so t <= 0 is the first and t >= 1 the last entry).
/// NaN gives k_missing_color.
Rgba8 colormap_color(Colormap colormap, float t) noexcept;

/// Colours scanpy 1.9 assigns to `num_categories` categories when uns['<key>_colors'] is
/// absent: the engine's palette (fathom::default_category_colors in
/// core/engine/palette.hpp, which holds scanpy's default_20 / 28 / 102) as Rgba8; more
/// than 102 categories are every one grey (k_missing_color).
std::vector<Rgba8> default_category_colors(std::size_t num_categories);

/// Parses "#rgb", "#rrggbb", "#rrggbbaa" (any case) or a CSS / matplotlib base colour
/// name ("red", "grey", "lightgray", ...). nullopt when unrecognised.
std::optional<Rgba8> parse_color(std::string_view text);

/// Colours for `num_categories` categories: the stored uns colours when there is one
/// parseable colour per category (anndata keeps uns['<key>_colors'] aligned with the
/// categories), else default_category_colors(num_categories).
std::vector<Rgba8> category_colors(const std::vector<std::string>* stored, std::size_t num_categories);

/// "#rrggbb" of a colour (alpha dropped).
std::string to_hex(const Rgba8& color);

}  // namespace fathom::ui
