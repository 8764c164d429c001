#include "ui/SpatialGrid.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace fathom::ui {
namespace {

std::int64_t brute_force_nearest(const std::vector<float>& xy, Vec2 query, double radius,
                                 const std::function<bool(std::int64_t)>& accept) {
    std::int64_t best = -1;
    double best_distance = radius * radius;
    for (std::size_t point = 0; point < xy.size() / 2; ++point) {
        if (!std::isfinite(xy[2 * point]) || !std::isfinite(xy[2 * point + 1])) continue;
        const double dx = xy[2 * point] - query.x, dy = xy[2 * point + 1] - query.y;
        const double distance = dx * dx + dy * dy;
        if (distance > best_distance || (distance == best_distance && best >= 0)) continue;
        if (accept && !accept(static_cast<std::int64_t>(point))) continue;
        best = static_cast<std::int64_t>(point);
        best_distance = distance;
    }
    return best;
}

TEST(SpatialGrid, NearestMatchesBruteForceOnClusteredPoints) {
    std::mt19937 generator(3);
    std::normal_distribution<float> around(0.0f, 1.0f);
    std::vector<float> xy;
    for (int cluster = 0; cluster < 5; ++cluster)
        for (int point = 0; point < 4000; ++point) {
            xy.push_back(cluster * 6.0f + around(generator) * (0.3f + cluster * 0.2f));
            xy.push_back(cluster * -2.0f + around(generator));
        }
    xy.push_back(NAN);  // ignored
    xy.push_back(1.0f);
    SpatialGrid grid;
    grid.build(xy);
    EXPECT_EQ(grid.num_points(), 20001);
    EXPECT_GT(grid.columns() * grid.rows(), 1000);
    std::uniform_real_distribution<double> query_x(-5.0, 30.0), query_y(-12.0, 4.0), radius(0.01, 3.0);
    auto odd_only = [](std::int64_t point) { return point % 2 == 1; };
    for (int trial = 0; trial < 2000; ++trial) {
        const Vec2 query{query_x(generator), query_y(generator)};
        const double r = radius(generator);
        EXPECT_EQ(grid.nearest(query, r), brute_force_nearest(xy, query, r, {})) << "trial " << trial;
        EXPECT_EQ(grid.nearest(query, r, odd_only), brute_force_nearest(xy, query, r, odd_only)) << "trial " << trial;
    }
}

TEST(SpatialGrid, EmptyAndDegenerateInputs) {
    SpatialGrid grid;
    grid.build({});
    EXPECT_EQ(grid.nearest({0.0, 0.0}, 10.0), -1);
    const std::vector<float> same{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    grid.build(same);
    EXPECT_EQ(grid.nearest({1.0, 1.0}, 0.0), 0);   // ties go to the lowest index
    EXPECT_EQ(grid.nearest({3.0, 1.0}, 1.0), -1);  // out of radius
    EXPECT_EQ(grid.nearest({3.0, 1.0}, 2.0), 0);
}

}  // namespace
}  // namespace fathom::ui
