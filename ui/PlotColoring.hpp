#pragma once
/// CPU side of the plot's per-cell attribute buffer and draw order: pure functions,
/// no GL, so that they are tested directly and reused by the benchmark.
#include <cstdint>
#include <span>
#include <vector>

#include "ui/ColorMaps.hpp"

namespace fathom::ui {

/// One cell's attributes as the GPU reads them (8 bytes, tightly packed).
/// `color.a == 0` hides the cell; `value` is the continuous value scaled to [0, 1]
/// (what the density pass averages), or 0 for categorical / uniform colouring.
struct PointAttribute {
    Rgba8 color;
    float value = 0.0f;
};
static_assert(sizeof(PointAttribute) == 8, "PointAttribute must stay 8 bytes (GPU layout)");

/// Order in which cells are drawn (later cells cover earlier ones).
enum class DrawOrder {
    File,     ///< obs order
    Random,   ///< seeded shuffle (no category systematically on top)
    ByValue,  ///< ascending value (high values on top, as scanpy's sort_order=True); NaN first
};

/// "file", "random", "value".
const char* draw_order_name(DrawOrder order) noexcept;

/// Fills `out` (one per cell) for a categorical colouring: `codes[cell]` indexes
/// `colors` (-1 or out of range = missing, drawn k_missing_color); a category whose
/// `category_visible` entry is 0 is hidden; `cell_mask` (empty = all) hides cells with 0.
/// Returns the number of cells left visible.
std::int64_t fill_categorical_attributes(std::span<const std::int32_t> codes, std::span<const Rgba8> colors,
                                         std::span<const std::uint8_t> category_visible,
                                         std::span<const std::uint8_t> cell_mask, std::span<PointAttribute> out);

/// Fills `out` for a continuous colouring: t = (value - low) / (high - low) clamped to
/// [0, 1] (0 when high <= low), coloured by `colormap`; NaN values get k_missing_color.
/// Returns the number of visible cells.
std::int64_t fill_continuous_attributes(std::span<const float> values, Colormap colormap, float low, float high,
                                        std::span<const std::uint8_t> cell_mask, std::span<PointAttribute> out);

/// Fills `out` with one colour for every cell (mask as above). Returns the visible count.
std::int64_t fill_uniform_attributes(Rgba8 color, std::span<const std::uint8_t> cell_mask,
                                     std::span<PointAttribute> out);

/// Selection highlight: the colour of every visible cell whose `selected` flag is 0 is
/// moved towards `background`, keeping `keep` (in [0, 1]) of it; selected and hidden
/// cells are left as they are.
void dim_unselected(std::span<const std::uint8_t> selected, Rgba8 background, float keep,
                    std::span<PointAttribute> attributes);

/// `order` (a permutation; empty = identity over `selected.size()` cells) with the
/// selected cells moved last, both parts keeping their relative order.
std::vector<std::uint32_t> selected_last(std::span<const std::uint32_t> order, std::span<const std::uint8_t> selected);

/// Dims the cells outside a filter instead of hiding them: each cell with
/// cell_mask[cell] == 0 (cell_mask empty = none) that is shown gets its colour moved to
/// `background` by `amount` (0 = unchanged, 1 = the background colour); hidden cells
/// (alpha 0) stay hidden. Returns the number of cells dimmed.
std::int64_t dim_masked_attributes(std::span<const std::uint8_t> cell_mask, Rgba8 background, float amount,
                                   std::span<PointAttribute> out);

/// The attributes as the GPU buffer holds them under a draw order: out[slot] =
/// attributes[order[slot]] for every slot of `order` (out.size() >= order.size(); every
/// entry of `order` < attributes.size()). Parallel over slots.
void gather_in_draw_order(std::span<const PointAttribute> attributes, std::span<const std::uint32_t> order,
                          std::span<PointAttribute> out);

/// The same for positions (x, y pairs): out[2 slot + k] = xy[2 order[slot] + k].
void gather_in_draw_order(std::span<const float> xy, std::span<const std::uint32_t> order, std::span<float> out);

/// Minimum and maximum of the finite values (0, 0 when there are none).
std::pair<float, float> finite_range(std::span<const float> values) noexcept;

/// The draw order as an index permutation of [0, num_cells). Random uses `seed`
/// (same seed => same order on every platform); ByValue sorts `sort_keys` ascending,
/// stable, NaN first (sort_keys must hold num_cells values; File order when empty).
std::vector<std::uint32_t> make_draw_order(DrawOrder order, std::int64_t num_cells, std::uint64_t seed,
                                           std::span<const float> sort_keys = {});

}  // namespace fathom::ui
