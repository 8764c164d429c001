#include "ui/PlotColoring.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <set>

namespace fathom::ui {
namespace {

TEST(PlotColoring, CategoricalColoursHiddenCategoriesAndMask) {
    const std::vector<std::int32_t> codes{0, 1, 2, -1, 1, 7};
    const std::vector<Rgba8> colors{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}};
    std::vector<PointAttribute> out(codes.size());
    EXPECT_EQ(fill_categorical_attributes(codes, colors, {}, {}, out), 6);
    EXPECT_EQ(out[0].color, (Rgba8{255, 0, 0, 255}));
    EXPECT_EQ(out[2].color, (Rgba8{0, 0, 255, 255}));
    EXPECT_EQ(out[3].color, k_missing_color);  // -1
    EXPECT_EQ(out[5].color, k_missing_color);  // out of range
    const std::vector<std::uint8_t> visible{1, 0, 1};
    EXPECT_EQ(fill_categorical_attributes(codes, colors, visible, {}, out), 4);
    EXPECT_EQ(out[1].color.a, 0);
    EXPECT_EQ(out[4].color.a, 0);
    EXPECT_EQ(out[0].color.a, 255);
    const std::vector<std::uint8_t> mask{1, 1, 0, 1, 1, 1};
    EXPECT_EQ(fill_categorical_attributes(codes, colors, visible, mask, out), 3);
    EXPECT_EQ(out[2].color.a, 0);
}

TEST(PlotColoring, ContinuousScalesIntoTheRangeAndClamps) {
    const std::vector<float> values{0.0f, 5.0f, 10.0f, -4.0f, 20.0f, NAN};
    std::vector<PointAttribute> out(values.size());
    EXPECT_EQ(fill_continuous_attributes(values, Colormap::Viridis, 0.0f, 10.0f, {}, out), 6);
    EXPECT_FLOAT_EQ(out[0].value, 0.0f);
    EXPECT_FLOAT_EQ(out[1].value, 0.5f);
    EXPECT_FLOAT_EQ(out[2].value, 1.0f);
    EXPECT_FLOAT_EQ(out[3].value, 0.0f);
    EXPECT_FLOAT_EQ(out[4].value, 1.0f);
    EXPECT_EQ(out[1].color, colormap_color(Colormap::Viridis, 0.5f));
    EXPECT_EQ(out[4].color, colormap_color(Colormap::Viridis, 1.0f));
    EXPECT_EQ(out[5].color, k_missing_color);
    // A degenerate range colours everything with the low end.
    fill_continuous_attributes(values, Colormap::Magma, 3.0f, 3.0f, {}, out);
    EXPECT_EQ(out[4].color, colormap_color(Colormap::Magma, 0.0f));
}

TEST(PlotColoring, FiniteRange) {
    const std::vector<float> values{NAN, 3.0f, -2.0f, INFINITY, 8.5f};
    EXPECT_EQ(finite_range(values), (std::pair<float, float>{-2.0f, 8.5f}));
    EXPECT_EQ(finite_range(std::vector<float>{NAN}), (std::pair<float, float>{0.0f, 0.0f}));
}

TEST(PlotColoring, RandomDrawOrderIsASeededPermutation) {
    const auto first = make_draw_order(DrawOrder::Random, 10000, 42);
    const auto again = make_draw_order(DrawOrder::Random, 10000, 42);
    const auto other = make_draw_order(DrawOrder::Random, 10000, 43);
    EXPECT_EQ(first, again);
    EXPECT_NE(first, other);
    std::vector<std::uint32_t> sorted = first;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint32_t index = 0; index < sorted.size(); ++index) ASSERT_EQ(sorted[index], index);
    // Not the identity: at most a handful of fixed points in a random permutation.
    std::size_t fixed = 0;
    for (std::uint32_t index = 0; index < first.size(); ++index) fixed += first[index] == index;
    EXPECT_LT(fixed, 20u);
}

TEST(PlotColoring, ByValueOrderPutsHighValuesLastAndNanFirst) {
    const std::vector<float> keys{3.0f, NAN, 1.0f, 3.0f, 10.0f, -1.0f};
    const auto order = make_draw_order(DrawOrder::ByValue, 6, 0, keys);
    EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 5, 2, 0, 3, 4}));  // stable for the two 3.0s
    EXPECT_EQ(make_draw_order(DrawOrder::File, 4, 9), (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

TEST(PlotColoring, SelectionDimsOtherVisibleCellsAndDrawsSelectedLast) {
    const Rgba8 background{0, 0, 0, 255};
    std::vector<PointAttribute> attributes(4, PointAttribute{{200, 100, 40, 255}, 0.5f});
    attributes[3].color.a = 0;  // hidden
    const std::vector<std::uint8_t> selected{1, 0, 0, 0};
    dim_unselected(selected, background, 0.25f, attributes);
    EXPECT_EQ(attributes[0].color, (Rgba8{200, 100, 40, 255})) << "selected: unchanged";
    EXPECT_EQ(attributes[1].color, (Rgba8{50, 25, 10, 255})) << "a quarter of the colour, over the background";
    EXPECT_EQ(attributes[3].color, (Rgba8{200, 100, 40, 0})) << "hidden: unchanged";
    EXPECT_EQ(attributes[1].value, 0.5f);

    const std::vector<std::uint8_t> flags{0, 1, 0, 1, 0};
    EXPECT_EQ(selected_last({}, flags), (std::vector<std::uint32_t>{0, 2, 4, 1, 3}));
    const std::vector<std::uint32_t> order{4, 3, 2, 1, 0};
    EXPECT_EQ(selected_last(order, flags), (std::vector<std::uint32_t>{4, 2, 0, 3, 1}));
}

TEST(PlotColoring, GatherInDrawOrderPutsEachCellAtItsSlot) {
    // Large enough for several parallel tasks; checked against a plain loop.
    const std::int64_t cells = 200003;
    const auto order = make_draw_order(DrawOrder::Random, cells, 77);
    std::vector<float> xy(static_cast<std::size_t>(cells) * 2);
    std::vector<PointAttribute> attributes(static_cast<std::size_t>(cells));
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        xy[2 * cell] = static_cast<float>(cell);
        xy[2 * cell + 1] = -static_cast<float>(cell);
        attributes[cell] = {{static_cast<std::uint8_t>(cell % 251), 0, 0, 255}, static_cast<float>(cell)};
    }
    std::vector<float> xy_out(xy.size());
    std::vector<PointAttribute> attributes_out(attributes.size());
    gather_in_draw_order(xy, order, xy_out);
    gather_in_draw_order(attributes, order, attributes_out);
    for (std::size_t slot = 0; slot < order.size(); ++slot) {
        ASSERT_EQ(xy_out[2 * slot], static_cast<float>(order[slot])) << slot;
        ASSERT_EQ(xy_out[2 * slot + 1], -static_cast<float>(order[slot])) << slot;
        ASSERT_EQ(attributes_out[slot].value, static_cast<float>(order[slot])) << slot;
        ASSERT_EQ(attributes_out[slot].color.r, order[slot] % 251) << slot;
    }
    // A part of the order (one upload batch) fills the start of the output.
    std::vector<float> batch(2 * 1000);
    gather_in_draw_order(xy, std::span(order).subspan(5000, 1000), batch);
    EXPECT_EQ(batch[0], static_cast<float>(order[5000]));
    EXPECT_EQ(batch[1999], -static_cast<float>(order[5999]));
}

}  // namespace
}  // namespace fathom::ui
