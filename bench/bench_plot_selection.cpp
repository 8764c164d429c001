// Lasso / rectangle selection on the spatial grid against testing every point (what a
// per-point scan would cost), at plot scale. No GL needed. Run:
//   build/bench/bench_plot_selection [--points 1000000] [--repeats 5]
// Each figure is the median of --repeats runs; "grid" includes sorting the hits, and the
// combine column is merging them into a selection of the same size (add mode).
#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ui/CellSelection.hpp"
#include "ui/SpatialGrid.hpp"

namespace {

using fathom::ui::Vec2;

double median_ms(int repeats, const std::function<void()>& body) {
    std::vector<double> times;
    for (int repeat = 0; repeat < repeats; ++repeat) {
        QElapsedTimer timer;
        timer.start();
        body();
        times.push_back(static_cast<double>(timer.nsecsElapsed()) * 1e-6);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

std::vector<Vec2> lasso(double radius, int vertices) {
    std::vector<Vec2> polygon;
    for (int vertex = 0; vertex < vertices; ++vertex) {
        const double angle = 2.0 * 3.14159265358979 * vertex / vertices;
        const double r = radius * (1.0 + 0.35 * std::sin(5.0 * angle));
        polygon.push_back({r * std::cos(angle), r * std::sin(angle)});
    }
    return polygon;
}

}  // namespace

int main(int argc, char** argv) {
    std::int64_t num_points = 1000000;
    int repeats = 5;
    for (int arg = 1; arg + 1 < argc; arg += 2) {
        if (!std::strcmp(argv[arg], "--points")) num_points = std::atoll(argv[arg + 1]);
        else if (!std::strcmp(argv[arg], "--repeats")) repeats = std::max(1, std::atoi(argv[arg + 1]));
    }
    // A UMAP-like layout: 20 Gaussian clusters of different sizes.
    std::mt19937 generator(1);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::uniform_real_distribution<float> where(-15.0f, 15.0f);
    std::vector<float> centers;
    for (int cluster = 0; cluster < 40; ++cluster) centers.push_back(where(generator));
    std::vector<float> xy(static_cast<std::size_t>(num_points) * 2);
    for (std::int64_t point = 0; point < num_points; ++point) {
        const auto cluster = static_cast<std::size_t>(point % 20);
        const float spread = 0.5f + 0.1f * static_cast<float>(cluster);
        xy[2 * point] = centers[2 * cluster] + spread * noise(generator);
        xy[2 * point + 1] = centers[2 * cluster + 1] + spread * noise(generator);
    }
    fathom::ui::SpatialGrid grid;
    const double build_ms = median_ms(1, [&] { grid.build(xy); });
    std::printf("%lld points; grid %d x %d cells built in %.1f ms\n", static_cast<long long>(num_points), grid.columns(),
                grid.rows(), build_ms);
    std::printf("%-28s %10s %10s %10s %12s %12s\n", "shape", "selected", "grid ms", "scan ms", "pts tested", "combine ms");
    const struct {
        const char* name;
        std::vector<Vec2> polygon;
    } shapes[] = {
        {"rectangle (quarter)", fathom::ui::rectangle_polygon({-15.0, -15.0}, {0.0, 0.0})},
        {"lasso 200 vertices", lasso(9.0, 200)},
        {"lasso 2000 vertices", lasso(12.0, 2000)},
        {"small lasso 100 vertices", lasso(2.0, 100)},
    };
    for (const auto& shape : shapes) {
        fathom::ui::SpatialGrid::PolygonQueryStats stats;
        std::vector<std::uint32_t> hits;
        const double grid_ms = median_ms(repeats, [&] { hits = grid.points_in_polygon(shape.polygon, {}, &stats); });
        std::size_t scanned = 0;
        const double scan_ms = median_ms(repeats, [&] {
            scanned = 0;
            for (std::int64_t point = 0; point < num_points; ++point)
                scanned += fathom::ui::point_in_polygon(shape.polygon, xy[2 * point], xy[2 * point + 1]);
        });
        if (scanned != hits.size()) {
            std::fprintf(stderr, "%s: grid %zu vs scan %zu\n", shape.name, hits.size(), scanned);
            return 1;
        }
        const double combine_ms = median_ms(repeats, [&] {
            const auto combined = fathom::ui::combine_selection(hits, hits, fathom::ui::SelectionMode::Add);
            if (combined.size() != hits.size()) std::abort();
        });
        std::printf("%-28s %10zu %10.2f %10.2f %12lld %12.2f\n", shape.name, hits.size(), grid_ms, scan_ms,
                    static_cast<long long>(stats.points_tested), combine_ms);
    }
    return 0;
}
