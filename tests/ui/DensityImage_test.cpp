// aggregate_density against a brute-force per-texel reference (a map from texel to its
// cells, computed in double), thread-count invariance, and the errors that name the field.
#include "ui/DensityImage.hpp"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>

namespace fathom::ui {
namespace {

constexpr Rgba8 k_background{27, 29, 34, 255};

struct Cells {
    std::vector<float> xy;
    std::vector<PointAttribute> attributes;
};

// Overlapping clusters with some hidden cells, some off the raster and one NaN position.
Cells make_cells(int count, std::uint32_t seed) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> noise(0.0f, 6.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const Rgba8 palette[4] = {{230, 20, 20, 255}, {20, 200, 40, 255}, {30, 60, 240, 255}, {250, 250, 20, 255}};
    Cells cells;
    for (int cell = 0; cell < count; ++cell) {
        const int cluster = cell % 4;
        cells.xy.push_back(static_cast<float>(cluster * 9 - 12) + noise(generator));
        cells.xy.push_back(static_cast<float>(cluster % 2 * 7 - 3) + noise(generator) * 0.6f);
        PointAttribute attribute{palette[cluster], uniform(generator)};
        if (cell % 13 == 0) attribute.color.a = 0;  // hidden
        cells.attributes.push_back(attribute);
    }
    cells.xy[2 * 5] = NAN;
    return cells;
}

// Every texel's colour from the cells falling in it, by the formula of the header.
std::vector<Rgba8> brute_force(const Cells& cells, const DensityRaster& raster, DensityColoring coloring,
                               Colormap colormap) {
    struct Texel {
        long count = 0;
        double r = 0, g = 0, b = 0, value = 0;
    };
    std::map<long, Texel> texels;
    for (std::size_t cell = 0; cell < cells.attributes.size(); ++cell) {
        const PointAttribute& attribute = cells.attributes[cell];
        if (attribute.color.a == 0) continue;
        const double x = std::floor((cells.xy[2 * cell] - raster.center.x) * raster.texels_per_unit + raster.width / 2.0);
        const double y = std::floor((cells.xy[2 * cell + 1] - raster.center.y) * raster.texels_per_unit + raster.height / 2.0);
        if (!(x >= 0 && y >= 0 && x < raster.width && y < raster.height)) continue;
        Texel& texel = texels[static_cast<long>(y) * raster.width + static_cast<long>(x)];
        ++texel.count;
        texel.r += attribute.color.r / 255.0;
        texel.g += attribute.color.g / 255.0;
        texel.b += attribute.color.b / 255.0;
        texel.value += attribute.value;
    }
    long largest = 1;
    for (const auto& [index, texel] : texels) largest = std::max(largest, texel.count);
    std::vector<Rgba8> image(static_cast<std::size_t>(raster.width) * raster.height, k_background);
    for (const auto& [index, texel] : texels) {
        const double intensity = std::log1p(static_cast<double>(texel.count)) / std::log1p(static_cast<double>(largest));
        if (coloring == DensityColoring::Count) {
            image[static_cast<std::size_t>(index)] = colormap_color(colormap, static_cast<float>(intensity));
            continue;
        }
        const double alpha = 0.35 + 0.65 * intensity;
        double shown[3];
        if (coloring == DensityColoring::MeanColor) {
            shown[0] = texel.r / texel.count;
            shown[1] = texel.g / texel.count;
            shown[2] = texel.b / texel.count;
        } else {
            const Rgba8 mapped = colormap_color(colormap, static_cast<float>(texel.value / texel.count));
            shown[0] = mapped.r / 255.0;
            shown[1] = mapped.g / 255.0;
            shown[2] = mapped.b / 255.0;
        }
        const double base[3] = {k_background.r / 255.0, k_background.g / 255.0, k_background.b / 255.0};
        auto mix = [&](int channel) {
            return static_cast<std::uint8_t>(std::lround((base[channel] * (1.0 - alpha) + shown[channel] * alpha) * 255.0));
        };
        image[static_cast<std::size_t>(index)] = {mix(0), mix(1), mix(2), 255};
    }
    return image;
}

int largest_difference(const std::vector<Rgba8>& a, const std::vector<Rgba8>& b) {
    int largest = 0;
    for (std::size_t texel = 0; texel < a.size(); ++texel)
        largest = std::max({largest, std::abs(a[texel].r - b[texel].r), std::abs(a[texel].g - b[texel].g),
                            std::abs(a[texel].b - b[texel].b), std::abs(a[texel].a - b[texel].a)});
    return largest;
}

TEST(DensityImage, MatchesABruteForceBinningForEveryColouring) {
    const Cells cells = make_cells(40000, 3);
    // Odd sizes, a fractional scale and an off-centre raster: the borders cut clusters.
    const DensityRaster raster{157, 91, {2.5, -1.25}, 3.3};
    DensityScratch scratch;
    for (const DensityColoring coloring : {DensityColoring::Count, DensityColoring::MeanColor, DensityColoring::MeanValue}) {
        std::vector<Rgba8> image;
        const DensitySummary summary =
            aggregate_density(cells.xy, cells.attributes, raster, coloring, Colormap::Magma, k_background, image, scratch);
        const std::vector<Rgba8> expected = brute_force(cells, raster, coloring, Colormap::Magma);
        ASSERT_EQ(image.size(), expected.size());
        // Float (as the GL pipeline) against double: at most one level of rounding.
        EXPECT_LE(largest_difference(image, expected), 1) << "coloring " << static_cast<int>(coloring);
        EXPECT_GE(summary.largest_count, 10u) << "clusters overlap in texels";
        EXPECT_GT(summary.binned_cells, 20000);
        EXPECT_LT(summary.binned_cells, 40000 - 40000 / 13) << "hidden and off-raster cells are not binned";
    }
}

TEST(DensityImage, DoesNotDependOnTheNumberOfThreads) {
    const Cells cells = make_cells(300000, 8);  // several chunks of cells
    const DensityRaster raster{301, 233, {0.0, 0.0}, 7.0};
    std::vector<Rgba8> one, many;
    DensityScratch scratch;
    for (const DensityColoring coloring : {DensityColoring::MeanColor, DensityColoring::MeanValue}) {
        tbb::task_arena(1).execute([&] {
            aggregate_density(cells.xy, cells.attributes, raster, coloring, Colormap::Viridis, k_background, one, scratch);
        });
        tbb::task_arena(4).execute([&] {
            aggregate_density(cells.xy, cells.attributes, raster, coloring, Colormap::Viridis, k_background, many, scratch);
        });
        EXPECT_EQ(one, many);
    }
}

TEST(DensityImage, AnEmptyRasterIsTheBackgroundAndBadRastersNameTheField) {
    std::vector<Rgba8> image;
    DensityScratch scratch;
    const DensitySummary summary = aggregate_density({}, {}, DensityRaster{4, 3, {0.0, 0.0}, 1.0},
                                                     DensityColoring::MeanColor, Colormap::Viridis, k_background, image,
                                                     scratch);
    EXPECT_EQ(summary.largest_count, 0u);
    EXPECT_EQ(image, std::vector<Rgba8>(12, k_background));
    auto message = [&](const DensityRaster& raster, std::span<const PointAttribute> attributes) {
        const std::vector<float> xy{0.0f, 0.0f};
        try {
            aggregate_density(xy, attributes, raster, DensityColoring::Count, Colormap::Viridis, k_background, image, scratch);
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string("no error");
    };
    const PointAttribute one[1] = {};
    EXPECT_NE(message({0, 3, {}, 1.0}, one).find("DensityRaster::width"), std::string::npos);
    EXPECT_NE(message({3, 3, {}, 0.0}, one).find("DensityRaster::texels_per_unit"), std::string::npos);
    EXPECT_NE(message({3, 3, {}, 1.0}, {}).find("attributes"), std::string::npos);
}

}  // namespace
}  // namespace fathom::ui
