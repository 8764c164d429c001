// PlotView on llvmpipe under Xvfb: small synthetic embeddings with known clusters and
// colours; pictures are read back with grabFramebuffer() (which paints a frame).
#include "ui/PlotView.hpp"

#include <gtest/gtest.h>

#include <QMouseEvent>
#include <QTest>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <utility>

#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using fathom::test::count_pixels;
using fathom::test::pixel_at;

constexpr Rgba8 k_red{230, 20, 20, 255};
constexpr Rgba8 k_green{20, 200, 40, 255};
constexpr Rgba8 k_blue{30, 60, 240, 255};
const Vec2 k_blob_centers[3] = {{-10.0, 0.0}, {10.0, 0.0}, {0.0, 14.0}};

// Three well-separated Gaussian blobs of `per_blob` cells each; codes 0, 1, 2 in blocks.
struct Blobs {
    std::vector<float> xy;
    std::vector<std::int32_t> codes;
};

Blobs make_blobs(int per_blob, float sigma = 0.8f, std::uint32_t seed = 5) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> noise(0.0f, sigma);
    Blobs blobs;
    for (int blob = 0; blob < 3; ++blob)
        for (int cell = 0; cell < per_blob; ++cell) {
            blobs.xy.push_back(static_cast<float>(k_blob_centers[blob].x) + noise(generator));
            blobs.xy.push_back(static_cast<float>(k_blob_centers[blob].y) + noise(generator));
            blobs.codes.push_back(blob);
        }
    return blobs;
}

class PlotViewTest : public ::testing::Test {
protected:
    void SetUp() override {
        FATHOM_REQUIRE_GL();
        view = std::make_unique<PlotView>();
        view->resize(400, 400);
        view->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(view.get()));
    }

    // Grabs frames until the positions are all on the GPU (bounded).
    QImage grab_uploaded() {
        QImage image;
        for (int frame = 0; frame < 64; ++frame) {
            image = view->grabFramebuffer();
            if (view->uploadComplete()) return image;
        }
        ADD_FAILURE() << "upload did not complete in 64 frames";
        return image;
    }

    QPoint screen_of(Vec2 world) const {
        const Vec2 screen = view->transform().world_to_screen(world);
        return {static_cast<int>(std::floor(screen.x)), static_cast<int>(std::floor(screen.y))};
    }

    void show_blobs(int per_blob = 3000) {
        const Blobs blobs = make_blobs(per_blob);
        view->setPositions(blobs.xy);
        view->setCategorical("cluster", blobs.codes, {"a", "b", "c"}, {k_red, k_green, k_blue});
    }

    std::unique_ptr<PlotView> view;
};

TEST_F(PlotViewTest, BlobsShowTheirCategoryColoursInTheirRegions) {
    view->setOverlayVisible(false);
    show_blobs();
    const QImage image = grab_uploaded();
    ASSERT_EQ(image.size(), QSize(400, 400));
    const Rgba8 background = view->backgroundColor();
    EXPECT_GT(fathom::test::count_pixels_not(image, background), 2000) << "picture is blank";
    const Rgba8 expected[3] = {k_red, k_green, k_blue};
    for (int blob = 0; blob < 3; ++blob) {
        const QPoint center = screen_of(k_blob_centers[blob]);
        EXPECT_EQ(pixel_at(image, center.x(), center.y()), expected[blob]) << "blob " << blob;
    }
    EXPECT_EQ(pixel_at(image, screen_of({0.0, 4.0}).x(), screen_of({0.0, 4.0}).y()), background);
    // Every pixel of a category's colour lies in that category's region of the plot.
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const Rgba8 color = pixel_at(image, x, y);
            const Vec2 world = view->transform().screen_to_world({x + 0.5, y + 0.5});
            for (int blob = 0; blob < 3; ++blob)
                if (color == expected[blob]) {
                    const double dx = world.x - k_blob_centers[blob].x, dy = world.y - k_blob_centers[blob].y;
                    ASSERT_LT(std::sqrt(dx * dx + dy * dy), 6.0) << "blob " << blob << " colour at " << x << "," << y;
                }
        }
}

TEST_F(PlotViewTest, LegendToggleHidesThatCategoryAndRewritesOnlyAttributes) {
    view->setOverlayVisible(false);
    show_blobs();
    QImage image = grab_uploaded();
    const auto position_bytes = view->stats().position_bytes;
    const auto attribute_bytes = view->stats().attribute_bytes;
    EXPECT_EQ(view->visiblePoints(), 9000);
    view->setCategoryVisible(1, false);
    image = view->grabFramebuffer();
    EXPECT_EQ(view->visiblePoints(), 6000);
    EXPECT_EQ(count_pixels(image, k_green), 0);
    EXPECT_GT(count_pixels(image, k_red), 100);
    EXPECT_GT(count_pixels(image, k_blue), 100);
    const QPoint hidden = screen_of(k_blob_centers[1]);
    EXPECT_EQ(pixel_at(image, hidden.x(), hidden.y()), view->backgroundColor());
    EXPECT_EQ(view->stats().position_bytes, position_bytes) << "positions must not be re-uploaded";
    EXPECT_EQ(view->stats().attribute_bytes, attribute_bytes + 9000 * 8);
    view->setCategoryVisible(1, true);
    image = view->grabFramebuffer();
    EXPECT_GT(count_pixels(image, k_green), 100);
}

TEST_F(PlotViewTest, CellMaskFilterHidesCellsThroughTheAttributeBufferOnly) {
    view->setOverlayVisible(false);
    show_blobs(1000);
    grab_uploaded();
    const auto position_bytes = view->stats().position_bytes;
    std::vector<std::uint8_t> mask(3000, 1);
    std::fill(mask.begin(), mask.begin() + 1000, 0);  // e.g. a marker-gene filter drops blob "a"
    view->setCellMask(mask);
    QImage image = view->grabFramebuffer();
    EXPECT_EQ(view->visiblePoints(), 2000);
    EXPECT_EQ(count_pixels(image, k_red), 0);
    EXPECT_GT(count_pixels(image, k_green), 50);
    EXPECT_EQ(view->stats().position_bytes, position_bytes);
    view->setCellMask({});
    image = view->grabFramebuffer();
    EXPECT_EQ(view->visiblePoints(), 3000);
    EXPECT_GT(count_pixels(image, k_red), 50);
}

TEST_F(PlotViewTest, ClickingALegendEntryInTheOverlayTogglesItsCells) {
    show_blobs();
    grab_uploaded();
    view->grabFramebuffer();  // the legend window settles (auto-size) on its second frame
    const QRectF entry = view->legendEntryRect(2);
    ASSERT_FALSE(entry.isEmpty());
    ASSERT_TRUE(view->categoryVisible(2));
    // Press and release arrive before the next frame: the overlay latches the click.
    QTest::mouseClick(view.get(), Qt::LeftButton, {}, entry.center().toPoint());
    for (int frame = 0; frame < 6 && view->categoryVisible(2); ++frame) view->grabFramebuffer();
    EXPECT_FALSE(view->categoryVisible(2));
    const QImage image = view->grabFramebuffer();
    const QPoint hidden = screen_of(k_blob_centers[2]);
    EXPECT_EQ(pixel_at(image, hidden.x(), hidden.y()), view->backgroundColor());
    EXPECT_EQ(view->visiblePoints(), 6000);
    const QPoint shown = screen_of(k_blob_centers[0]);
    EXPECT_EQ(pixel_at(image, shown.x(), shown.y()), k_red);
}

TEST_F(PlotViewTest, BatchUploadOfMorePointsThanOneBatchDrawsThemAll) {
    view->setOverlayVisible(false);
    view->setBatchSize(4096);
    view->setUploadBudgetMs(0.0);  // exactly one batch per frame
    view->setPointSize(1.0f);
    std::vector<float> xy;
    for (int row = 0; row < 100; ++row)
        for (int column = 0; column < 100; ++column) {
            xy.push_back(static_cast<float>(column));
            xy.push_back(static_cast<float>(row));
        }
    view->setPositions(xy, PlotView::FitPolicy::Keep);
    const Rgba8 white{255, 255, 255, 255};
    view->setUniformColor(&white);
    ViewTransform transform;
    transform.set_viewport(400, 400);
    transform.set_center({49.5, 49.5});
    transform.set_pixels_per_unit(3.7);  // 3.7 px between neighbours: one pixel each
    view->setTransform(transform);

    auto lit_points = [&](const QImage& image) {
        std::vector<bool> lit(10000, false);
        for (int point = 0; point < 10000; ++point) {
            const Vec2 screen = view->transform().world_to_screen({xy[2 * point], xy[2 * point + 1]});
            for (int dy = -1; dy <= 1 && !lit[point]; ++dy)
                for (int dx = -1; dx <= 1 && !lit[point]; ++dx)
                    lit[point] = pixel_at(image, static_cast<int>(screen.x) + dx, static_cast<int>(screen.y) + dy) == white;
        }
        return lit;
    };
    QImage image = view->grabFramebuffer();
    EXPECT_EQ(view->uploadedPoints(), 4096);
    auto lit = lit_points(image);
    for (int point = 0; point < 10000; ++point) ASSERT_EQ(lit[point], point < 4096) << "after one batch, point " << point;
    image = grab_uploaded();
    EXPECT_EQ(view->stats().position_batches, 3);
    EXPECT_EQ(view->stats().position_bytes, 10000 * 8);
    lit = lit_points(image);
    for (int point = 0; point < 10000; ++point) ASSERT_TRUE(lit[point]) << "point " << point << " not drawn";
    EXPECT_EQ(count_pixels(image, white), 10000);
}

TEST_F(PlotViewTest, ContinuousColouringUsesTheColormapAndRange) {
    view->setOverlayVisible(false);
    const Blobs blobs = make_blobs(2000);
    view->setPositions(blobs.xy);
    std::vector<float> values(blobs.codes.begin(), blobs.codes.end());  // 0, 1, 2 per blob
    view->setContinuous("gene:X", values, Colormap::Viridis);
    QImage image = grab_uploaded();
    EXPECT_EQ(view->valueRange(), (std::pair<float, float>{0.0f, 2.0f}));
    const float expected_t[3] = {0.0f, 0.5f, 1.0f};
    for (int blob = 0; blob < 3; ++blob) {
        const QPoint center = screen_of(k_blob_centers[blob]);
        EXPECT_EQ(pixel_at(image, center.x(), center.y()), colormap_color(Colormap::Viridis, expected_t[blob]));
    }
    view->setValueRange(0.0f, 1.0f);  // blob 1 now saturates
    view->setColormap(Colormap::Magma);
    image = view->grabFramebuffer();
    const QPoint center = screen_of(k_blob_centers[1]);
    EXPECT_EQ(pixel_at(image, center.x(), center.y()), colormap_color(Colormap::Magma, 1.0f));
}

TEST_F(PlotViewTest, DrawOrderIsTheOrderOfThePositionBuffer) {
    view->setOverlayVisible(false);
    view->setPointSize(4.0f);
    std::vector<float> xy;
    for (int copy = 0; copy < 2; ++copy)  // cells 0..399 and 400..799 at the same places
        for (int cell = 0; cell < 400; ++cell) {
            xy.push_back(static_cast<float>(cell % 20));
            xy.push_back(static_cast<float>(cell / 20));
        }
    view->setPositions(xy);
    std::vector<float> values(800, 0.0f);
    std::fill(values.begin(), values.begin() + 400, 1.0f);  // the first copy has the high value
    view->setContinuous("value", values);
    QImage image = grab_uploaded();
    const QPoint probe = screen_of({5.0, 5.0});
    // File order: the second copy (value 0) is drawn last.
    EXPECT_EQ(pixel_at(image, probe.x(), probe.y()), colormap_color(Colormap::Viridis, 0.0f));
    const auto position_bytes = view->stats().position_bytes;
    const auto reorders = view->stats().position_reorders;
    view->setDrawOrder(DrawOrder::ByValue);
    image = view->grabFramebuffer();
    EXPECT_EQ(pixel_at(image, probe.x(), probe.y()), colormap_color(Colormap::Viridis, 1.0f));
    // A new order rewrites the positions once, in that order, within the frame.
    EXPECT_EQ(view->stats().position_reorders, reorders + 1);
    EXPECT_EQ(view->stats().position_bytes, position_bytes + 800 * 8);
    // A colour change that keeps the order rewrites only the attributes.
    view->setValueRange(0.0f, 0.5f);
    image = view->grabFramebuffer();
    EXPECT_EQ(pixel_at(image, probe.x(), probe.y()), colormap_color(Colormap::Viridis, 1.0f));
    EXPECT_EQ(view->stats().position_bytes, position_bytes + 800 * 8);
    view->setDrawOrder(DrawOrder::Random, 3);
    image = view->grabFramebuffer();
    EXPECT_EQ(view->stats().position_reorders, reorders + 2);
    EXPECT_EQ(view->stats().position_bytes, position_bytes + 2 * 800 * 8);
    // Both copies show through somewhere under a random order.
    EXPECT_GT(count_pixels(image, colormap_color(Colormap::Viridis, 0.0f)), 0);
    EXPECT_GT(count_pixels(image, colormap_color(Colormap::Viridis, 1.0f)), 0);
    // Recolouring in random order keeps the positions (the shuffle is the same).
    std::reverse(values.begin(), values.end());
    view->setContinuous("reversed", values);
    view->grabFramebuffer();
    EXPECT_EQ(view->stats().position_reorders, reorders + 2);
    EXPECT_EQ(view->stats().position_bytes, position_bytes + 2 * 800 * 8);
}

TEST_F(PlotViewTest, RandomOrderDrawsWhatFileOrderDrawsAndPicksTheSameCells) {
    view->setOverlayVisible(false);
    view->setPointSize(1.0f);
    view->setBatchSize(4096);  // the reorder goes through several batches
    view->setUploadBudgetMs(0.0);
    // 100 x 100 cells one pixel each, no overlap; every cell its own colour.
    const int side = 100, cells = side * side;
    std::vector<float> xy;
    std::vector<std::int32_t> codes;
    std::vector<std::string> categories;
    std::vector<Rgba8> colors;
    for (int cell = 0; cell < cells; ++cell) {
        xy.push_back(static_cast<float>(cell % side));
        xy.push_back(static_cast<float>(cell / side));
        codes.push_back(cell);
        categories.push_back(std::to_string(cell));
        colors.push_back({static_cast<std::uint8_t>(40 + cell % 200), static_cast<std::uint8_t>(40 + cell / 200 * 4),
                          static_cast<std::uint8_t>(cell % 2 ? 250 : 120), 255});
    }
    view->setPositions(xy, PlotView::FitPolicy::Keep);
    view->setCategorical("cell", codes, categories, colors);
    ViewTransform transform;
    transform.set_viewport(400, 400);
    transform.set_center({49.5, 49.5});
    transform.set_pixels_per_unit(3.7);
    view->setTransform(transform);
    auto names = std::make_shared<std::vector<std::string>>();
    for (int cell = 0; cell < cells; ++cell) names->push_back("BC-" + std::to_string(cell));
    view->setCellNames(names);
    const QImage file_order = grab_uploaded();
    ASSERT_EQ(count_pixels(file_order, view->backgroundColor()), 400L * 400 - cells);

    const auto batches = view->stats().position_batches;
    view->setDrawOrder(DrawOrder::Random, 17);
    const QImage random_order = view->grabFramebuffer();
    EXPECT_TRUE(view->uploadComplete()) << "a reorder is uploaded whole in one frame";
    EXPECT_EQ(view->stats().position_batches, batches + 3) << "in batches of 4096";
    EXPECT_EQ(random_order, file_order) << "without overlap the order must not change the picture";

    // Hover and picking map back to cell ids.
    for (const int cell : {0, 1, 99, 4242, 5000, 9999}) {
        const QPoint at = screen_of({xy[2 * cell], xy[2 * cell + 1]});
        EXPECT_EQ(pixel_at(random_order, at.x(), at.y()), colors[cell]) << "cell " << cell;
        EXPECT_EQ(view->pickCell(QPointF(at) + QPointF(0.5, 0.5), 1.0), cell);
        const QPointF position = QPointF(at) + QPointF(0.5, 0.5);
        QMouseEvent move(QEvent::MouseMove, position, view->mapToGlobal(position), Qt::NoButton, Qt::NoButton, {});
        QCoreApplication::sendEvent(view.get(), &move);
        EXPECT_EQ(view->hoveredCell(), cell);
        EXPECT_TRUE(view->hoverText().contains(QStringLiteral("BC-%1\n").arg(cell))) << view->hoverText().toStdString();
    }
    // Selection by polygon returns cell ids too.
    const Vec2 low = view->transform().world_to_screen({9.5, 20.5}), high = view->transform().world_to_screen({12.5, 18.5});
    const QPolygonF box(QRectF(QPointF(low.x, low.y), QPointF(high.x, high.y)));
    EXPECT_EQ(view->cellsInWidgetPolygon(box), (CellSet{1910, 1911, 1912, 2010, 2011, 2012}));

    // A recolouring under the random order writes the attributes in that order.
    const auto position_bytes = view->stats().position_bytes;
    std::vector<Rgba8> swapped(colors.rbegin(), colors.rend());
    view->setCategorical("cell", codes, categories, swapped);
    const QImage recoloured = view->grabFramebuffer();
    EXPECT_EQ(view->stats().position_bytes, position_bytes) << "recolouring must not re-upload positions";
    for (const int cell : {0, 1, 99, 4242, 5000, 9999}) {
        const QPoint at = screen_of({xy[2 * cell], xy[2 * cell + 1]});
        EXPECT_EQ(pixel_at(recoloured, at.x(), at.y()), swapped[cell]) << "cell " << cell;
    }
    view->setDrawOrder(DrawOrder::File);
    view->setCategorical("cell", codes, categories, colors);
    EXPECT_EQ(view->grabFramebuffer(), file_order);
}

// The density picture computed independently of PlotView: cells binned by the screen
// pixel they fall in, then per pixel the count's log intensity (colour map of it when
// uniform), the mean colour (categorical) or the colour map of the mean value
// (continuous) mixed over the background with alpha 0.35 + 0.65 * intensity, as the
// density mode has drawn it since it aggregated on the GPU.
QImage expected_density_image(const ViewTransform& view, const std::vector<float>& xy,
                              const std::vector<PointAttribute>& attributes, PlotView::ColorKind kind,
                              Colormap colormap, Rgba8 background) {
    const int width = view.width(), height = view.height();
    std::vector<std::int64_t> counts(static_cast<std::size_t>(width) * height, 0);
    std::vector<std::array<double, 3>> sums(counts.size(), {0.0, 0.0, 0.0});
    for (std::size_t cell = 0; cell < attributes.size(); ++cell) {
        if (attributes[cell].color.a == 0) continue;
        const Vec2 screen = view.world_to_screen({xy[2 * cell], xy[2 * cell + 1]});
        const int x = static_cast<int>(std::floor(screen.x)), y = static_cast<int>(std::floor(screen.y));
        if (x < 0 || y < 0 || x >= width || y >= height) continue;
        const std::size_t pixel = static_cast<std::size_t>(y) * width + x;
        ++counts[pixel];
        if (kind == PlotView::ColorKind::Continuous) {
            sums[pixel][0] += attributes[cell].value;
        } else {
            sums[pixel][0] += attributes[cell].color.r / 255.0;
            sums[pixel][1] += attributes[cell].color.g / 255.0;
            sums[pixel][2] += attributes[cell].color.b / 255.0;
        }
    }
    const double log_max = std::log1p(static_cast<double>(std::max<std::int64_t>(
        1, *std::max_element(counts.begin(), counts.end()))));
    QImage image(width, height, QImage::Format_RGB32);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const std::size_t pixel = static_cast<std::size_t>(y) * width + x;
            const double count = static_cast<double>(counts[pixel]);
            std::array<double, 3> color{background.r / 255.0, background.g / 255.0, background.b / 255.0};
            if (count > 0) {
                const double intensity = std::clamp(std::log1p(count) / log_max, 0.0, 1.0);
                std::array<double, 3> shown{};
                double alpha = 0.35 + 0.65 * intensity;
                if (kind == PlotView::ColorKind::Categorical) {
                    for (int channel = 0; channel < 3; ++channel) shown[channel] = sums[pixel][channel] / count;
                } else {
                    const Rgba8 mapped = colormap_color(colormap, static_cast<float>(
                        kind == PlotView::ColorKind::Continuous ? sums[pixel][0] / count : intensity));
                    shown = {mapped.r / 255.0, mapped.g / 255.0, mapped.b / 255.0};
                    if (kind == PlotView::ColorKind::Uniform) alpha = 1.0;
                }
                for (int channel = 0; channel < 3; ++channel)
                    color[channel] = color[channel] * (1.0 - alpha) + shown[channel] * alpha;
            }
            image.setPixel(x, y, qRgb(static_cast<int>(std::lround(color[0] * 255.0)),
                                      static_cast<int>(std::lround(color[1] * 255.0)),
                                      static_cast<int>(std::lround(color[2] * 255.0))));
        }
    return image;
}

// Largest per-channel difference, and how many pixels differ by more than `tolerance`.
std::pair<int, long> image_difference(const QImage& actual, const QImage& expected, int tolerance) {
    int largest = 0;
    long over = 0;
    for (int y = 0; y < expected.height(); ++y)
        for (int x = 0; x < expected.width(); ++x) {
            const Rgba8 a = pixel_at(actual, x, y), b = pixel_at(expected, x, y);
            const int difference = std::max({std::abs(a.r - b.r), std::abs(a.g - b.g), std::abs(a.b - b.b)});
            largest = std::max(largest, difference);
            over += difference > tolerance;
        }
    return {largest, over};
}

TEST_F(PlotViewTest, DensityImageMatchesAnIndependentlyBinnedPicture) {
    view->setOverlayVisible(false);
    view->setDensityMode(PlotView::DensityMode::On);
    ViewTransform transform;
    transform.set_viewport(400, 400);
    transform.set_center({0.0, 0.0});
    transform.set_pixels_per_unit(1.0);
    // Three overlapping blobs (mixed colours where they meet), every cell inside a screen
    // pixel (never on a pixel edge) and on screen, so the largest count is on screen too.
    std::mt19937 generator(11);
    std::normal_distribution<double> noise(0.0, 22.0);
    std::uniform_real_distribution<double> inside(0.1, 0.9), uniform(0.0, 1.0);
    const Vec2 centers[3] = {{150.0, 170.0}, {195.0, 215.0}, {260.0, 160.0}};
    std::vector<float> xy;
    std::vector<std::int32_t> codes;
    std::vector<float> values;
    for (int cell = 0; cell < 30000; ++cell) {
        const int blob = cell % 3;
        const double sx = std::clamp(std::floor(centers[blob].x + noise(generator)), 2.0, 397.0) + inside(generator);
        const double sy = std::clamp(std::floor(centers[blob].y + noise(generator)), 2.0, 397.0) + inside(generator);
        const Vec2 world = transform.screen_to_world({sx, sy});
        xy.push_back(static_cast<float>(world.x));
        xy.push_back(static_cast<float>(world.y));
        codes.push_back(blob);
        values.push_back(static_cast<float>(blob == 0 ? uniform(generator) : 0.5 * blob));
    }
    values[0] = 0.0f;
    values[1] = 1.0f;  // the value range is [0, 1]
    view->setPositions(xy, PlotView::FitPolicy::Keep);
    view->setTransform(transform);
    auto check = [&](const char* what, int tolerance) {
        const QImage image = grab_uploaded();
        ASSERT_TRUE(view->densityActive());
        const QImage expected = expected_density_image(view->transform(), xy, view->pointAttributes(),
                                                       view->colorKind(), view->colormap(), view->backgroundColor());
        ASSERT_EQ(image.size(), expected.size());
        const auto [largest, over] = image_difference(image, expected, tolerance);
        EXPECT_EQ(over, 0) << what << ": pixels differing by more than " << tolerance << " (largest " << largest << ")";
        EXPECT_GT(fathom::test::count_pixels_not(expected, view->backgroundColor()), 10000) << what;
    };
    check("uniform", 1);
    view->setCategorical("cluster", codes, {"a", "b", "c"}, {k_red, k_green, k_blue});
    check("categorical", 1);
    view->setCategoryVisible(1, false);  // hidden cells neither count nor colour
    check("categorical, one hidden", 1);
    view->setContinuous("value", values, Colormap::Magma);
    check("continuous", 1);
    view->setTheme(PlotView::Theme::Light);
    check("continuous, light theme", 1);
}

TEST_F(PlotViewTest, DensityModeUploadsOnlyItsTextureUntilPointsAreDrawnAgain) {
    view->setOverlayVisible(false);
    show_blobs(3000);
    view->setDensityMode(PlotView::DensityMode::On);
    grab_uploaded();
    const PlotView::Stats before = view->stats();
    view->setCategoryVisible(1, false);
    view->setDrawOrder(DrawOrder::Random, 5);
    QImage image = view->grabFramebuffer();
    EXPECT_EQ(view->stats().density_aggregations, before.density_aggregations + 1);
    EXPECT_EQ(view->stats().attribute_bytes, before.attribute_bytes) << "the density image is binned on the CPU";
    EXPECT_EQ(view->stats().position_bytes, before.position_bytes);
    const QPoint hidden = screen_of(k_blob_centers[1]);
    EXPECT_EQ(pixel_at(image, hidden.x(), hidden.y()), view->backgroundColor());
    // Back to points: the waiting colours and order go up once, and the picture follows.
    view->setDensityMode(PlotView::DensityMode::Off);
    image = view->grabFramebuffer();
    EXPECT_EQ(view->stats().attribute_bytes, before.attribute_bytes + 9000 * 8);
    EXPECT_EQ(view->stats().position_reorders, before.position_reorders + 1);
    EXPECT_EQ(view->stats().position_bytes, before.position_bytes + 9000 * 8);
    EXPECT_EQ(count_pixels(image, k_green), 0);
    EXPECT_GT(count_pixels(image, k_red), 100);
    EXPECT_GT(count_pixels(image, k_blue), 100);
}

TEST_F(PlotViewTest, DragPansAndWheelZoomsAroundTheCursor) {
    view->setOverlayVisible(false);
    show_blobs(500);
    grab_uploaded();
    const ViewTransform before = view->transform();
    const QPointF start(200, 200), end(260, 170);
    QMouseEvent press(QEvent::MouseButtonPress, start, view->mapToGlobal(start), Qt::LeftButton, Qt::LeftButton, {});
    QCoreApplication::sendEvent(view.get(), &press);
    QMouseEvent move(QEvent::MouseMove, end, view->mapToGlobal(end), Qt::NoButton, Qt::LeftButton, {});
    QCoreApplication::sendEvent(view.get(), &move);
    QMouseEvent release(QEvent::MouseButtonRelease, end, view->mapToGlobal(end), Qt::LeftButton, Qt::NoButton, {});
    QCoreApplication::sendEvent(view.get(), &release);
    const Vec2 world = before.screen_to_world({start.x(), start.y()});
    const Vec2 moved = view->transform().world_to_screen(world);
    EXPECT_NEAR(moved.x, end.x(), 1e-6);
    EXPECT_NEAR(moved.y, end.y(), 1e-6);
    EXPECT_TRUE(view->viewMovedByUser());

    const QPointF cursor(120, 300);
    const Vec2 anchor = view->transform().screen_to_world({cursor.x(), cursor.y()});
    const double scale = view->transform().pixels_per_unit();
    QWheelEvent wheel(cursor, view->mapToGlobal(cursor), QPoint(), QPoint(0, 240), Qt::NoButton, {}, Qt::NoScrollPhase,
                      false);
    QCoreApplication::sendEvent(view.get(), &wheel);
    EXPECT_NEAR(view->transform().pixels_per_unit(), scale * std::pow(2.0, 0.5), 1e-9 * scale);
    const Vec2 anchor_screen = view->transform().world_to_screen(anchor);
    EXPECT_NEAR(anchor_screen.x, cursor.x(), 1e-6);
    EXPECT_NEAR(anchor_screen.y, cursor.y(), 1e-6);
    view->resetView();
    view->grabFramebuffer();
    EXPECT_FALSE(view->viewMovedByUser());
}

TEST_F(PlotViewTest, DefaultViewFitsTheBulkAndFitAllShowsEveryCell) {
    Blobs blobs = make_blobs(2000);
    // A handful of far outliers (small disconnected UMAP components).
    for (const auto& [x, y] : {std::pair{300.0f, 250.0f}, std::pair{-280.0f, 10.0f}, std::pair{5.0f, -260.0f}}) {
        blobs.xy.push_back(x);
        blobs.xy.push_back(y);
        blobs.codes.push_back(0);
    }
    view->setPositions(blobs.xy);
    view->setCategorical("cluster", blobs.codes, {"a", "b", "c"}, {k_red, k_green, k_blue});
    for (int frame = 0; frame < 6; ++frame) grab_uploaded();  // the legend has its size, the view refitted beside it
    const double plot_width = view->plotWorld().width() * view->transform().pixels_per_unit();
    ASSERT_GT(plot_width, 150.0);
    // The blobs span [-10, 10] x [0, 14] plus their spread: most of the plot's smaller side.
    const Vec2 low = view->transform().world_to_screen({-10.0, 0.0});
    const Vec2 high = view->transform().world_to_screen({10.0, 14.0});
    EXPECT_GT(high.x - low.x, 0.6 * std::min(plot_width, double(view->height())));
    EXPECT_LT(view->fitBounds().width(), 40.0);
    EXPECT_GT(view->dataBounds().width(), 500.0);
    const auto on_plot = [&](std::size_t cell) {
        const WorldRect world = view->plotWorld();
        const double x = blobs.xy[2 * cell], y = blobs.xy[2 * cell + 1];
        return x >= world.min_x && x <= world.max_x && y >= world.min_y && y <= world.max_y;
    };
    EXPECT_FALSE(on_plot(blobs.codes.size() - 1)) << "an outlier stays off screen in the default view";

    view->fitAll();
    grab_uploaded();
    for (std::size_t cell = 0; cell < blobs.codes.size(); ++cell) ASSERT_TRUE(on_plot(cell)) << cell;
    EXPECT_FALSE(view->viewMovedByUser());
    // A legend of another width keeps "fit all" (the refit shows every cell again).
    view->setContinuous("value", std::vector<float>(blobs.codes.size(), 1.0f));
    for (int frame = 0; frame < 6; ++frame) grab_uploaded();  // the auto-sized legend settles over frames
    for (std::size_t cell = 0; cell < blobs.codes.size(); ++cell) ASSERT_TRUE(on_plot(cell)) << cell;

    view->resetView();
    grab_uploaded();
    EXPECT_FALSE(on_plot(blobs.codes.size() - 1));
}

TEST_F(PlotViewTest, HoverReadoutNamesTheCellUnderTheCursor) {
    show_blobs(800);
    auto names = std::make_shared<std::vector<std::string>>();
    for (int cell = 0; cell < 2400; ++cell) names->push_back("BC-" + std::to_string(cell));
    view->setCellNames(names);
    grab_uploaded();
    const Vec2 target = view->transform().world_to_screen(k_blob_centers[1]);
    const QPointF position(target.x, target.y);
    QMouseEvent move(QEvent::MouseMove, position, view->mapToGlobal(position), Qt::NoButton, Qt::NoButton, {});
    QCoreApplication::sendEvent(view.get(), &move);
    const std::int64_t cell = view->hoveredCell();
    ASSERT_GE(cell, 800);
    ASSERT_LT(cell, 1600);  // a cell of blob "b"
    EXPECT_TRUE(view->hoverText().contains(QString::fromStdString((*names)[cell])));
    EXPECT_TRUE(view->hoverText().contains(QStringLiteral("cluster: b")));
    // Hidden cells are not picked.
    view->setCategoryVisible(1, false);
    EXPECT_EQ(view->pickCell(position, 3.0), -1);
    // Coloured by a value, the readout shows the value and the cluster annotation.
    std::vector<float> values(2400);
    for (int index = 0; index < 2400; ++index) values[index] = static_cast<float>(index);
    std::vector<std::int32_t> codes(2400);
    for (int index = 0; index < 2400; ++index) codes[index] = index / 800;
    view->setContinuous(QStringLiteral("gene:X"), values);
    view->setHoverCategories(QStringLiteral("leiden"), codes, {"0", "1", "2"});
    QCoreApplication::sendEvent(view.get(), &move);
    const std::int64_t valued = view->hoveredCell();
    ASSERT_GE(valued, 800);
    EXPECT_TRUE(view->hoverText().contains(QStringLiteral("gene:X: %1").arg(valued))) << view->hoverText().toStdString();
    EXPECT_TRUE(view->hoverText().contains(QStringLiteral("leiden: 1"))) << view->hoverText().toStdString();
}

TEST_F(PlotViewTest, NewEmbeddingFrameReuploadsPositionsInBatchesAndKeepsTheColouring) {
    view->setOverlayVisible(false);
    view->setBatchSize(1000);
    Blobs blobs = make_blobs(1000);
    view->setPositions(blobs.xy);
    view->setCategorical("cluster", blobs.codes, {"a", "b", "c"}, {k_red, k_green, k_blue});
    grab_uploaded();
    const auto batches = view->stats().position_batches;
    const auto attribute_bytes = view->stats().attribute_bytes;
    for (float& coordinate : blobs.xy) coordinate *= 0.5f;  // a later UMAP epoch
    view->setPositions(blobs.xy, PlotView::FitPolicy::Keep);
    EXPECT_EQ(view->colorKind(), PlotView::ColorKind::Categorical);
    const QImage image = grab_uploaded();
    EXPECT_EQ(view->stats().position_batches, batches + 3);
    EXPECT_EQ(view->stats().attribute_bytes, attribute_bytes);
    const QPoint center = screen_of({k_blob_centers[0].x * 0.5, k_blob_centers[0].y * 0.5});
    EXPECT_EQ(pixel_at(image, center.x(), center.y()), k_red);
}

TEST_F(PlotViewTest, AutomaticPointSizeShrinksWithDensityAndThemesChangeTheBackground) {
    view->setOverlayVisible(false);
    show_blobs(100);
    grab_uploaded();
    const float sparse = view->effectivePointSize();
    show_blobs(20000);
    grab_uploaded();
    EXPECT_LT(view->effectivePointSize(), sparse);
    EXPECT_GE(view->effectivePointSize(), 1.0f);
    view->setTheme(PlotView::Theme::Light);
    const QImage image = view->grabFramebuffer();
    EXPECT_EQ(pixel_at(image, 2, 2), (Rgba8{255, 255, 255, 255}));
}

}  // namespace
}  // namespace fathom::ui
