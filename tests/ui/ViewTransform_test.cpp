#include "ui/ViewTransform.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace fathom::ui {
namespace {

ViewTransform make_view(int width, int height, Vec2 center, double scale) {
    ViewTransform view;
    view.set_viewport(width, height);
    view.set_center(center);
    view.set_pixels_per_unit(scale);
    return view;
}

TEST(ViewTransform, CenterMapsToViewportMiddleAndWorldYPointsUp) {
    const ViewTransform view = make_view(800, 600, {3.0, -2.0}, 10.0);
    const Vec2 middle = view.world_to_screen({3.0, -2.0});
    EXPECT_DOUBLE_EQ(middle.x, 400.0);
    EXPECT_DOUBLE_EQ(middle.y, 300.0);
    // One unit right = 10 px right; one unit up = 10 px up (smaller screen y).
    EXPECT_DOUBLE_EQ(view.world_to_screen({4.0, -2.0}).x, 410.0);
    EXPECT_DOUBLE_EQ(view.world_to_screen({3.0, -1.0}).y, 290.0);
}

TEST(ViewTransform, ScreenToWorldInvertsWorldToScreen) {
    std::mt19937 generator(7);
    std::uniform_real_distribution<double> coordinate(-1000.0, 1000.0);
    const ViewTransform view = make_view(1280, 1024, {12.5, -3.25}, 37.0);
    for (int trial = 0; trial < 1000; ++trial) {
        const Vec2 world{coordinate(generator), coordinate(generator)};
        const Vec2 back = view.screen_to_world(view.world_to_screen(world));
        EXPECT_NEAR(back.x, world.x, 1e-9);
        EXPECT_NEAR(back.y, world.y, 1e-9);
    }
}

TEST(ViewTransform, ZoomAroundCursorKeepsThePointUnderTheCursorFixed) {
    std::mt19937 generator(11);
    std::uniform_real_distribution<double> pixel_x(0.0, 800.0), pixel_y(0.0, 600.0), factor(0.2, 5.0);
    for (int trial = 0; trial < 200; ++trial) {
        ViewTransform view = make_view(800, 600, {1.0, 2.0}, 25.0);
        view.zoom_at({400.0, 300.0}, factor(generator));  // start from varied scales
        const Vec2 cursor{pixel_x(generator), pixel_y(generator)};
        const Vec2 world_before = view.screen_to_world(cursor);
        const double scale_before = view.pixels_per_unit();
        const double zoom = factor(generator);
        view.zoom_at(cursor, zoom);
        EXPECT_NEAR(view.pixels_per_unit(), scale_before * zoom, 1e-9 * scale_before * zoom);
        const Vec2 screen_after = view.world_to_screen(world_before);
        EXPECT_NEAR(screen_after.x, cursor.x, 1e-6);
        EXPECT_NEAR(screen_after.y, cursor.y, 1e-6);
    }
}

TEST(ViewTransform, ZoomIsClampedAndStillKeepsTheCursorPointFixed) {
    ViewTransform view = make_view(400, 400, {0.0, 0.0}, 1.0);
    const Vec2 cursor{100.0, 50.0};
    const Vec2 world = view.screen_to_world(cursor);
    view.zoom_at(cursor, 1e30);
    EXPECT_DOUBLE_EQ(view.pixels_per_unit(), ViewTransform::k_max_scale);
    // At 1e12 px per unit the double-precision world coordinates resolve ~1e-4 px.
    EXPECT_NEAR(view.world_to_screen(world).x, cursor.x, 1e-2);
    view.zoom_at(cursor, 0.0);  // ignored
    view.zoom_at(cursor, -2.0);  // ignored
    EXPECT_DOUBLE_EQ(view.pixels_per_unit(), ViewTransform::k_max_scale);
}

TEST(ViewTransform, PanMovesContentWithTheDrag) {
    ViewTransform view = make_view(640, 480, {5.0, 5.0}, 8.0);
    const Vec2 world{6.0, 4.0};
    const Vec2 before = view.world_to_screen(world);
    view.pan_pixels(30.0, -12.0);
    const Vec2 after = view.world_to_screen(world);
    EXPECT_NEAR(after.x - before.x, 30.0, 1e-9);
    EXPECT_NEAR(after.y - before.y, -12.0, 1e-9);
}

TEST(ViewTransform, FitShowsTheWholeRectCenteredWithMargin) {
    ViewTransform view;
    view.set_viewport(800, 400);
    const WorldRect bounds{-10.0, 0.0, 30.0, 10.0};  // 40 x 10: width-limited
    view.fit(bounds, 0.05);
    EXPECT_DOUBLE_EQ(view.center().x, 10.0);
    EXPECT_DOUBLE_EQ(view.center().y, 5.0);
    const Vec2 lower_left = view.world_to_screen({bounds.min_x, bounds.min_y});
    const Vec2 upper_right = view.world_to_screen({bounds.max_x, bounds.max_y});
    EXPECT_NEAR(lower_left.x, 20.0, 1e-9);   // margin = 0.05 * min(800, 400)
    EXPECT_NEAR(upper_right.x, 780.0, 1e-9);
    EXPECT_GT(lower_left.y, upper_right.y);
    EXPECT_GE(upper_right.y, 20.0);
    EXPECT_LE(lower_left.y, 380.0);
    const WorldRect visible = view.visible_world();
    EXPECT_LE(visible.min_x, bounds.min_x);
    EXPECT_GE(visible.max_x, bounds.max_x);
    EXPECT_LE(visible.min_y, bounds.min_y);
    EXPECT_GE(visible.max_y, bounds.max_y);
}

// A uniform 10 x 10 cloud of `count` points with `outliers` far away (small disconnected
// components, as UMAP places them).
std::vector<float> cloud_with_outliers(int count, bool outliers) {
    std::mt19937 generator(11);
    std::uniform_real_distribution<float> uniform(0.0f, 10.0f);
    std::vector<float> xy;
    for (int point = 0; point < count; ++point) {
        xy.push_back(uniform(generator));
        xy.push_back(uniform(generator));
    }
    if (outliers)
        for (const auto& [x, y] : {std::pair{400.0f, 380.0f}, std::pair{-250.0f, 5.0f}, std::pair{6.0f, -300.0f},
                                   std::pair{401.0f, 379.0f}, std::pair{-90.0f, 120.0f}}) {
            xy.push_back(x);
            xy.push_back(y);
        }
    return xy;
}

TEST(ViewTransform, RobustExtentFitsTheBulkAndTheBoundsContainEveryPoint) {
    const std::vector<float> xy = cloud_with_outliers(20000, true);
    const WorldRect all = point_bounds(xy);
    EXPECT_DOUBLE_EQ(all.min_x, -250.0);
    EXPECT_DOUBLE_EQ(all.max_x, 401.0);
    EXPECT_DOUBLE_EQ(all.min_y, -300.0);
    EXPECT_DOUBLE_EQ(all.max_y, 380.0);
    // Sampled (every other point) as large embeddings are.
    const WorldRect bulk = robust_extent(xy, all, 0.005, 0.1, 10000);
    EXPECT_GT(bulk.min_x, -1.5);
    EXPECT_LT(bulk.min_x, 0.5);
    EXPECT_LT(bulk.max_x, 11.5);
    EXPECT_GT(bulk.max_x, 9.5);
    EXPECT_GT(bulk.min_y, -1.5);
    EXPECT_LT(bulk.max_y, 11.5);

    ViewTransform view;
    view.set_viewport(800, 600);
    view.fit_left_of(bulk, 150.0);
    // The bulk spans most of the part left of the legend's strip.
    const Vec2 low = view.world_to_screen({0.0, 0.0}), high = view.world_to_screen({10.0, 10.0});
    EXPECT_GT(std::min(high.x - low.x, low.y - high.y), 0.75 * 600.0);
    EXPECT_GE(low.x, 0.0);
    EXPECT_LE(high.x, 800.0 - 150.0);

    // "Fit all": every point on screen, left of the strip.
    view.fit_left_of(all, 150.0);
    for (std::size_t point = 0; point < xy.size() / 2; ++point) {
        const Vec2 screen = view.world_to_screen({xy[2 * point], xy[2 * point + 1]});
        EXPECT_TRUE(screen.x >= 0.0 && screen.x <= 650.0 && screen.y >= 0.0 && screen.y <= 600.0) << point;
    }
    const Vec2 squeezed_low = view.world_to_screen({0.0, 0.0}), squeezed_high = view.world_to_screen({10.0, 10.0});
    EXPECT_LT(squeezed_high.x - squeezed_low.x, 0.05 * 600.0) << "the outliers squeeze the bulk when every point is fitted";
}

TEST(ViewTransform, RobustExtentOfACloudWithoutOutliersIsItsBounds) {
    const std::vector<float> xy = cloud_with_outliers(20000, false);
    const WorldRect all = point_bounds(xy);
    const WorldRect bulk = robust_extent(xy, all);
    EXPECT_DOUBLE_EQ(bulk.min_x, all.min_x);
    EXPECT_DOUBLE_EQ(bulk.max_x, all.max_x);
    EXPECT_DOUBLE_EQ(bulk.min_y, all.min_y);
    EXPECT_DOUBLE_EQ(bulk.max_y, all.max_y);
    // No points, non-finite points only, or one point: the bounds themselves.
    EXPECT_TRUE(robust_extent({}, point_bounds({})).empty());
    const std::vector<float> nan_only{NAN, 1.0f, 2.0f, INFINITY};
    EXPECT_TRUE(point_bounds(nan_only).empty());
    const std::vector<float> one{3.0f, 4.0f};
    const WorldRect single = robust_extent(one, point_bounds(one));
    EXPECT_DOUBLE_EQ(single.min_x, 3.0);
    EXPECT_DOUBLE_EQ(single.max_y, 4.0);
}

TEST(ViewTransform, FitOfDegenerateBoundsStaysFinite) {
    ViewTransform view;
    view.set_viewport(100, 100);
    view.fit({2.0, 3.0, 2.0, 3.0});
    EXPECT_DOUBLE_EQ(view.center().x, 2.0);
    EXPECT_DOUBLE_EQ(view.pixels_per_unit(), 1.0);
    view.fit(WorldRect{});
    EXPECT_DOUBLE_EQ(view.center().x, 0.0);
}

TEST(ViewTransform, NdcTransformAgreesWithScreenMapping) {
    const ViewTransform view = make_view(1000, 500, {-4.0, 7.0}, 13.0);
    const auto ndc = view.ndc_scale_offset();
    for (const Vec2 world : {Vec2{-4.0, 7.0}, Vec2{10.0, -3.0}, Vec2{-40.0, 25.0}}) {
        const double ndc_x = world.x * ndc[0] + ndc[2];
        const double ndc_y = world.y * ndc[1] + ndc[3];
        const Vec2 screen = view.world_to_screen(world);
        EXPECT_NEAR((ndc_x + 1.0) / 2.0 * 1000.0, screen.x, 1e-3);
        EXPECT_NEAR((1.0 - ndc_y) / 2.0 * 500.0, screen.y, 1e-3);
    }
}

}  // namespace
}  // namespace fathom::ui
