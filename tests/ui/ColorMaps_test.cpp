#include "ui/ColorMaps.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/engine/palette.hpp"

namespace fathom::ui {
namespace {

TEST(ColorMaps, EndpointsMatchMatplotlib) {
    // matplotlib: to_hex(viridis(0.0)) == "#440154", viridis(1.0) == "#fde725".
    EXPECT_EQ(to_hex(colormap_color(Colormap::Viridis, 0.0f)), "#440154");
    EXPECT_EQ(to_hex(colormap_color(Colormap::Viridis, 1.0f)), "#fde725");
    EXPECT_EQ(to_hex(colormap_color(Colormap::Magma, 0.0f)), "#000004");
    EXPECT_EQ(to_hex(colormap_color(Colormap::Magma, 1.0f)), "#fcfdbf");
    EXPECT_EQ(to_hex(colormap_color(Colormap::Inferno, 1.0f)), "#fcffa4");
    EXPECT_EQ(to_hex(colormap_color(Colormap::Cividis, 0.0f)), "#00224e");
    // viridis(0.5) = entry 128 = (0.127568, 0.566949, 0.550556)
    EXPECT_EQ(to_hex(colormap_color(Colormap::Viridis, 0.5f)), "#21918c");
}

TEST(ColorMaps, OutOfRangeClampsAndNanIsMissing) {
    EXPECT_EQ(colormap_color(Colormap::Viridis, -3.0f), colormap_color(Colormap::Viridis, 0.0f));
    EXPECT_EQ(colormap_color(Colormap::Viridis, 7.0f), colormap_color(Colormap::Viridis, 1.0f));
    EXPECT_EQ(colormap_color(Colormap::Viridis, NAN), k_missing_color);
}

TEST(ColorMaps, PerceptuallyUniformMapsIncreaseInLightness) {
    // viridis, magma, inferno and cividis are monotone in lightness; a coarse check:
    // luma of entry i+32 is above luma of entry i.
    for (Colormap colormap : k_all_colormaps) {
        const auto table = colormap_table(colormap);
        ASSERT_EQ(table.size(), 768u);
        for (int entry = 0; entry + 32 < 256; entry += 32) {
            auto luma = [&](int at) {
                return 0.2126 * table[at * 3] + 0.7152 * table[at * 3 + 1] + 0.0722 * table[at * 3 + 2];
            };
            EXPECT_LT(luma(entry), luma(entry + 32)) << colormap_name(colormap) << " entry " << entry;
        }
    }
}

TEST(ColorMaps, NamesRoundTrip) {
    for (Colormap colormap : k_all_colormaps) EXPECT_EQ(colormap_from_name(colormap_name(colormap)), colormap);
    EXPECT_FALSE(colormap_from_name("jet"));
}

TEST(Palettes, SizesAndScanpySelectionRule) {
    EXPECT_EQ(scanpy_default_20().size(), 20u);
    EXPECT_EQ(scanpy_default_28().size(), 28u);
    EXPECT_EQ(scanpy_default_102().size(), 102u);
    EXPECT_EQ(to_hex(default_category_colors(3)[2]), "#279e68");  // vega_20_scanpy's green
    EXPECT_EQ(to_hex(default_category_colors(20)[19]), "#8c6d31");
    EXPECT_EQ(to_hex(default_category_colors(21)[0]), "#023fa5");  // zeileis_28
    EXPECT_EQ(to_hex(default_category_colors(29)[0]), "#ffff00");  // godsnot_102
    const auto many = default_category_colors(103);
    ASSERT_EQ(many.size(), 103u);
    for (const Rgba8& color : many) EXPECT_EQ(color, k_missing_color);
}

TEST(Palettes, AgreeWithTheEngineDefaults) {
    for (std::size_t count : {1u, 7u, 20u, 21u, 28u, 29u, 102u, 103u}) {
        const auto engine = fathom::default_category_colors(count);
        const auto ours = default_category_colors(count);
        ASSERT_EQ(engine.size(), ours.size());
        for (std::size_t index = 0; index < count; ++index)
            EXPECT_EQ(parse_color(engine[index]), ours[index]) << count << " categories, index " << index;
    }
}

TEST(Palettes, ParseColor) {
    EXPECT_EQ(parse_color("#1f77b4"), (Rgba8{31, 119, 180, 255}));
    EXPECT_EQ(parse_color("#1F77B4"), (Rgba8{31, 119, 180, 255}));
    EXPECT_EQ(parse_color("#fff"), (Rgba8{255, 255, 255, 255}));
    EXPECT_EQ(parse_color("#11223380"), (Rgba8{17, 34, 51, 128}));
    EXPECT_EQ(parse_color("lightgray"), k_missing_color);
    EXPECT_EQ(parse_color("Grey"), (Rgba8{128, 128, 128, 255}));
    EXPECT_FALSE(parse_color("#12345"));
    EXPECT_FALSE(parse_color("#zzzzzz"));
    EXPECT_FALSE(parse_color("notacolour"));
}

TEST(Palettes, StoredUnsColorsAreHonouredWhenComplete) {
    const std::vector<std::string> stored{"#ff0000", "#00ff00", "blue"};
    const auto honoured = category_colors(&stored, 3);
    EXPECT_EQ(honoured[0], (Rgba8{255, 0, 0, 255}));
    EXPECT_EQ(honoured[2], (Rgba8{0, 0, 255, 255}));
    // Too few colours (scanpy resets them) or an unparseable one: defaults.
    EXPECT_EQ(category_colors(&stored, 4), default_category_colors(4));
    const std::vector<std::string> broken{"#ff0000", "???"};
    EXPECT_EQ(category_colors(&broken, 2), default_category_colors(2));
    EXPECT_EQ(category_colors(nullptr, 5), default_category_colors(5));
}

}  // namespace
}  // namespace fathom::ui
