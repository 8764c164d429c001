#include "ui/PlotColoring.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fathom::ui {

namespace {

bool masked_out(std::span<const std::uint8_t> cell_mask, std::size_t cell) noexcept {
    return !cell_mask.empty() && (cell >= cell_mask.size() || cell_mask[cell] == 0);
}

// splitmix64: a tiny, fully specified generator, so that the random draw order is the
// same with every standard library (std::shuffle's algorithm is unspecified).
std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

const char* draw_order_name(DrawOrder order) noexcept {
    switch (order) {
        case DrawOrder::File: return "file";
        case DrawOrder::Random: return "random";
        case DrawOrder::ByValue: return "value";
    }
    return "file";
}

std::int64_t fill_categorical_attributes(std::span<const std::int32_t> codes, std::span<const Rgba8> colors,
                                         std::span<const std::uint8_t> category_visible,
                                         std::span<const std::uint8_t> cell_mask, std::span<PointAttribute> out) {
    std::int64_t visible = 0;
    const std::size_t count = std::min(codes.size(), out.size());
    for (std::size_t cell = 0; cell < count; ++cell) {
        const std::int32_t code = codes[cell];
        const bool known = code >= 0 && static_cast<std::size_t>(code) < colors.size();
        Rgba8 color = known ? colors[static_cast<std::size_t>(code)] : k_missing_color;
        bool shown = !masked_out(cell_mask, cell);
        if (known && static_cast<std::size_t>(code) < category_visible.size() &&
            category_visible[static_cast<std::size_t>(code)] == 0)
            shown = false;
        color.a = shown ? 255 : 0;
        visible += shown;
        out[cell] = {color, 0.0f};
    }
    return visible;
}

std::int64_t fill_continuous_attributes(std::span<const float> values, Colormap colormap, float low, float high,
                                        std::span<const std::uint8_t> cell_mask, std::span<PointAttribute> out) {
    std::int64_t visible = 0;
    const std::size_t count = std::min(values.size(), out.size());
    const float span = high - low;
    const float inverse = span > 0.0f ? 1.0f / span : 0.0f;
    const auto table = colormap_table(colormap);
    for (std::size_t cell = 0; cell < count; ++cell) {
        const float value = values[cell];
        PointAttribute attribute;
        if (value == value) {
            const float t = std::clamp((value - low) * inverse, 0.0f, 1.0f);
            const std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(t * 256.0f), 255) * 3;
            attribute.color = {table[index], table[index + 1], table[index + 2], 255};
            attribute.value = t;
        } else {
            attribute.color = k_missing_color;
        }
        const bool shown = !masked_out(cell_mask, cell);
        attribute.color.a = shown ? 255 : 0;
        visible += shown;
        out[cell] = attribute;
    }
    return visible;
}

std::int64_t fill_uniform_attributes(Rgba8 color, std::span<const std::uint8_t> cell_mask,
                                     std::span<PointAttribute> out) {
    std::int64_t visible = 0;
    for (std::size_t cell = 0; cell < out.size(); ++cell) {
        const bool shown = !masked_out(cell_mask, cell);
        out[cell] = {{color.r, color.g, color.b, static_cast<std::uint8_t>(shown ? 255 : 0)}, 0.0f};
        visible += shown;
    }
    return visible;
}

void dim_unselected(std::span<const std::uint8_t> selected, Rgba8 background, float keep,
                    std::span<PointAttribute> attributes) {
    keep = std::clamp(keep, 0.0f, 1.0f);
    const auto mix = [keep](std::uint8_t value, std::uint8_t target) {
        return static_cast<std::uint8_t>(std::lround(keep * value + (1.0f - keep) * target));
    };
    const std::size_t count = std::min(selected.size(), attributes.size());
    for (std::size_t cell = 0; cell < count; ++cell) {
        Rgba8& color = attributes[cell].color;
        if (selected[cell] || color.a == 0) continue;
        color.r = mix(color.r, background.r);
        color.g = mix(color.g, background.g);
        color.b = mix(color.b, background.b);
    }
}

std::vector<std::uint32_t> selected_last(std::span<const std::uint32_t> order, std::span<const std::uint8_t> selected) {
    std::vector<std::uint32_t> out;
    out.reserve(selected.size());
    const auto append = [&](bool want_selected) {
        if (order.empty()) {
            for (std::size_t cell = 0; cell < selected.size(); ++cell)
                if ((selected[cell] != 0) == want_selected) out.push_back(static_cast<std::uint32_t>(cell));
        } else {
            for (const std::uint32_t cell : order)
                if (cell < selected.size() && (selected[cell] != 0) == want_selected) out.push_back(cell);
        }
    };
    append(false);
    append(true);
    return out;
}

std::int64_t dim_masked_attributes(std::span<const std::uint8_t> cell_mask, Rgba8 background, float amount,
                                   std::span<PointAttribute> out) {
    if (cell_mask.empty()) return 0;
    const float keep = 1.0f - std::clamp(amount, 0.0f, 1.0f);
    const auto mix = [keep](std::uint8_t color, std::uint8_t base) {
        return static_cast<std::uint8_t>(std::lround(static_cast<float>(base) + (static_cast<float>(color) - static_cast<float>(base)) * keep));
    };
    std::int64_t dimmed = 0;
    const std::size_t count = std::min(cell_mask.size(), out.size());
    for (std::size_t cell = 0; cell < count; ++cell) {
        Rgba8& color = out[cell].color;
        if (cell_mask[cell] != 0 || color.a == 0) continue;
        color = {mix(color.r, background.r), mix(color.g, background.g), mix(color.b, background.b), color.a};
        ++dimmed;
    }
    return dimmed;
}

namespace {

// Slots per gather task: a task moves at least 512 KiB.
constexpr std::size_t k_gather_grain = 65536;

template <typename Item, int Width>
void gather(std::span<const Item> source, std::span<const std::uint32_t> order, std::span<Item> out) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, order.size(), k_gather_grain),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                          for (std::size_t slot = range.begin(); slot != range.end(); ++slot)
                              for (int item = 0; item < Width; ++item)
                                  out[Width * slot + item] = source[Width * std::size_t{order[slot]} + item];
                      });
}

}  // namespace

void gather_in_draw_order(std::span<const PointAttribute> attributes, std::span<const std::uint32_t> order,
                          std::span<PointAttribute> out) {
    gather<PointAttribute, 1>(attributes, order, out);
}

void gather_in_draw_order(std::span<const float> xy, std::span<const std::uint32_t> order, std::span<float> out) {
    gather<float, 2>(xy, order, out);
}

std::pair<float, float> finite_range(std::span<const float> values) noexcept {
    float low = HUGE_VALF, high = -HUGE_VALF;
    for (float value : values) {
        if (!std::isfinite(value)) continue;
        low = std::min(low, value);
        high = std::max(high, value);
    }
    if (low > high) return {0.0f, 0.0f};
    return {low, high};
}

std::vector<std::uint32_t> make_draw_order(DrawOrder order, std::int64_t num_cells, std::uint64_t seed,
                                           std::span<const float> sort_keys) {
    std::vector<std::uint32_t> indices(static_cast<std::size_t>(std::max<std::int64_t>(num_cells, 0)));
    std::iota(indices.begin(), indices.end(), 0u);
    if (order == DrawOrder::Random) {
        std::uint64_t state = seed;
        for (std::size_t slot = indices.size(); slot > 1; --slot) {
            // Modulo bias is below slot / 2^64: irrelevant for a draw order.
            const auto pick = static_cast<std::size_t>(splitmix64(state) % slot);
            std::swap(indices[slot - 1], indices[pick]);
        }
    } else if (order == DrawOrder::ByValue && sort_keys.size() == indices.size()) {
        std::stable_sort(indices.begin(), indices.end(), [&](std::uint32_t left, std::uint32_t right) {
            const float a = sort_keys[left], b = sort_keys[right];
            const bool a_nan = a != a, b_nan = b != b;
            if (a_nan || b_nan) return a_nan && !b_nan;
            return a < b;
        });
    }
    return indices;
}

}  // namespace fathom::ui
