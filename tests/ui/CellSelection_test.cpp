// Lasso / rectangle hit testing on the spatial grid against testing every point, and the
// selection set operations against brute-force masks.
#include "ui/CellSelection.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ui/SpatialGrid.hpp"

namespace fathom::ui {
namespace {

constexpr double k_pi = 3.14159265358979323846;

// 100k points: half uniform over [-20, 20]^2, half in three tight clusters, plus a few
// non-finite ones (never selected).
std::vector<float> random_points(std::uint32_t seed, std::int64_t count = 100000) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> uniform(-20.0f, 20.0f);
    std::normal_distribution<float> noise(0.0f, 1.5f);
    const float centers[3][2] = {{-8.0f, 3.0f}, {6.0f, -5.0f}, {2.0f, 11.0f}};
    std::vector<float> xy;
    for (std::int64_t point = 0; point < count; ++point) {
        if (point % 2 == 0) {
            xy.push_back(uniform(generator));
            xy.push_back(uniform(generator));
        } else {
            const auto& center = centers[point % 3];
            xy.push_back(center[0] + noise(generator));
            xy.push_back(center[1] + noise(generator));
        }
    }
    xy[2 * 17] = NAN;
    xy[2 * 4242 + 1] = INFINITY;
    return xy;
}

std::vector<std::uint32_t> brute_force(const std::vector<float>& xy, const std::vector<Vec2>& polygon) {
    std::vector<std::uint32_t> inside;
    for (std::size_t point = 0; point < xy.size() / 2; ++point) {
        const float x = xy[2 * point], y = xy[2 * point + 1];
        if (std::isfinite(x) && std::isfinite(y) && point_in_polygon(polygon, x, y))
            inside.push_back(static_cast<std::uint32_t>(point));
    }
    return inside;
}

// A concave star with `spikes` points (self-touching free), centred at `center`.
std::vector<Vec2> star(Vec2 center, double outer, double inner, int spikes, double phase = 0.3) {
    std::vector<Vec2> polygon;
    for (int vertex = 0; vertex < 2 * spikes; ++vertex) {
        const double angle = phase + k_pi * vertex / spikes;
        const double radius = vertex % 2 ? inner : outer;
        polygon.push_back({center.x + radius * std::cos(angle), center.y + radius * std::sin(angle)});
    }
    return polygon;
}

// A free-hand lasso: a wobbly closed curve of many vertices, concave in places.
std::vector<Vec2> wobbly_lasso(std::uint32_t seed, Vec2 center, double radius, int vertices) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<double> jitter(-0.35, 0.35);
    std::vector<Vec2> polygon;
    for (int vertex = 0; vertex < vertices; ++vertex) {
        const double angle = 2.0 * k_pi * vertex / vertices;
        const double r = radius * (1.0 + 0.4 * std::sin(5.0 * angle) + jitter(generator) * 0.2);
        polygon.push_back({center.x + r * std::cos(angle), center.y + r * std::sin(angle)});
    }
    return polygon;
}

TEST(CellSelection, PointInPolygonHandlesConcaveShapes) {
    // A "U": the notch between the arms is outside.
    const std::vector<Vec2> u = {{0, 0}, {3, 0}, {3, 3}, {2, 3}, {2, 1}, {1, 1}, {1, 3}, {0, 3}};
    EXPECT_TRUE(point_in_polygon(u, 0.5, 2.5));   // left arm
    EXPECT_TRUE(point_in_polygon(u, 2.5, 2.5));   // right arm
    EXPECT_TRUE(point_in_polygon(u, 1.5, 0.5));   // base
    EXPECT_FALSE(point_in_polygon(u, 1.5, 2.0));  // notch
    EXPECT_FALSE(point_in_polygon(u, 4.0, 1.0));
    EXPECT_FALSE(point_in_polygon(std::vector<Vec2>{{0, 0}, {1, 1}}, 0.5, 0.5)) << "two vertices hold nothing";
    // Two squares sharing the edge x = 1: a point on it is in exactly one of them.
    const auto left = rectangle_polygon({0, 0}, {1, 1}), right = rectangle_polygon({1, 0}, {2, 1});
    EXPECT_NE(point_in_polygon(left, 1.0, 0.5), point_in_polygon(right, 1.0, 0.5));
}

TEST(CellSelection, GridPolygonQueryEqualsTestingEveryPoint) {
    const std::vector<float> xy = random_points(11);
    SpatialGrid grid;
    grid.build(xy);
    const std::vector<std::vector<Vec2>> shapes = {
        rectangle_polygon({-5.0, -3.0}, {7.5, 9.25}),
        rectangle_polygon({-100.0, -100.0}, {100.0, 100.0}),       // everything
        rectangle_polygon({15.0, -30.0}, {40.0, 30.0}),            // beyond the bounds on one side
        star({0.0, 0.0}, 18.0, 6.0, 7),                            // concave
        star({-8.0, 3.0}, 4.0, 1.0, 5, 0.0),                       // concave, inside one cluster
        wobbly_lasso(3, {2.0, 1.0}, 9.0, 400),                     // free-hand, many vertices
        {{-10, -10}, {10, 10}, {10, -10}, {-10, 10}},              // self-intersecting bow tie
        rectangle_polygon({50.0, 50.0}, {60.0, 60.0}),             // misses every point
    };
    for (std::size_t shape = 0; shape < shapes.size(); ++shape) {
        SpatialGrid::PolygonQueryStats stats;
        const auto hits = grid.points_in_polygon(shapes[shape], {}, &stats);
        const auto expected = brute_force(xy, shapes[shape]);
        ASSERT_EQ(hits, expected) << "shape " << shape << ": grid " << hits.size() << " vs brute force " << expected.size();
        if (expected.size() > 10000) {
            // Most of a large selection comes from whole grid cells, not point tests.
            EXPECT_GT(stats.interior_cells, 0) << "shape " << shape;
            EXPECT_LT(stats.points_tested, static_cast<std::int64_t>(expected.size()) / 2) << "shape " << shape;
        }
    }
    // A non-trivial share of the points is selected by the concave star.
    EXPECT_GT(brute_force(xy, shapes[3]).size(), 20000u);
}

TEST(CellSelection, RandomLassosAgreeWithBruteForce) {
    const std::vector<float> xy = random_points(29);
    SpatialGrid grid;
    grid.build(xy, 2.0);
    std::mt19937 generator(7);
    std::uniform_real_distribution<double> where(-20.0, 20.0), size(0.5, 15.0);
    for (int trial = 0; trial < 40; ++trial) {
        const Vec2 center{where(generator), where(generator)};
        const auto polygon = trial % 2 ? wobbly_lasso(static_cast<std::uint32_t>(trial), center, size(generator), 60 + trial * 7)
                                       : star(center, size(generator), 0.5, 3 + trial % 9, trial * 0.1);
        ASSERT_EQ(grid.points_in_polygon(polygon), brute_force(xy, polygon)) << "trial " << trial;
    }
}

TEST(CellSelection, AcceptLeavesHiddenPointsOut) {
    const std::vector<float> xy = random_points(5, 20000);
    SpatialGrid grid;
    grid.build(xy);
    const auto polygon = star({0.0, 0.0}, 15.0, 5.0, 6);
    const auto hits = grid.points_in_polygon(polygon, [](std::int64_t point) { return point % 3 != 0; });
    std::vector<std::uint32_t> expected;
    for (const auto point : brute_force(xy, polygon))
        if (point % 3 != 0) expected.push_back(point);
    EXPECT_EQ(hits, expected);
}

TEST(CellSelection, ReplaceAddSubtractMatchMaskOperations) {
    const std::vector<float> xy = random_points(41);
    const std::int64_t num_cells = static_cast<std::int64_t>(xy.size() / 2);
    SpatialGrid grid;
    grid.build(xy);
    struct Gesture {
        std::vector<Vec2> polygon;
        SelectionMode mode;
    };
    const std::vector<Gesture> gestures = {
        {star({0.0, 0.0}, 16.0, 5.0, 6), SelectionMode::Replace},
        {rectangle_polygon({-2.0, -2.0}, {4.0, 4.0}), SelectionMode::Subtract},
        {wobbly_lasso(9, {-8.0, 3.0}, 5.0, 150), SelectionMode::Add},
        {rectangle_polygon({10.0, -20.0}, {20.0, 20.0}), SelectionMode::Add},
        {star({6.0, -5.0}, 3.0, 1.0, 4), SelectionMode::Subtract},
    };
    CellSet selection;
    std::vector<std::uint8_t> truth(static_cast<std::size_t>(num_cells), 0);
    for (const auto& gesture : gestures) {
        selection = combine_selection(selection, grid.points_in_polygon(gesture.polygon), gesture.mode);
        for (std::int64_t cell = 0; cell < num_cells; ++cell) {
            const float x = xy[2 * cell], y = xy[2 * cell + 1];
            const bool hit = std::isfinite(x) && std::isfinite(y) && point_in_polygon(gesture.polygon, x, y);
            auto& flag = truth[static_cast<std::size_t>(cell)];
            if (gesture.mode == SelectionMode::Replace) flag = hit;
            else if (gesture.mode == SelectionMode::Add) flag = flag || hit;
            else flag = flag && !hit;
        }
        ASSERT_EQ(selection_mask(selection, num_cells), truth) << selection_mode_name(gesture.mode);
        ASSERT_TRUE(std::is_sorted(selection.begin(), selection.end()));
        ASSERT_EQ(std::adjacent_find(selection.begin(), selection.end()), selection.end()) << "duplicates";
    }
    EXPECT_GT(selection.size(), 1000u);
    EXPECT_EQ(cells_of_mask(truth), selection);
    // The complement and the selection partition the cells.
    const CellSet inverted = complement(selection, num_cells);
    EXPECT_EQ(static_cast<std::int64_t>(inverted.size() + selection.size()), num_cells);
    const auto inverted_mask = selection_mask(inverted, num_cells);
    for (std::int64_t cell = 0; cell < num_cells; ++cell)
        ASSERT_NE(inverted_mask[static_cast<std::size_t>(cell)], truth[static_cast<std::size_t>(cell)]);
}

}  // namespace
}  // namespace fathom::ui
