// The VTK 3-D view on llvmpipe under Xvfb: two coloured 3-D clusters, frames read back
// with grabFramebuffer() (which paints one), hidden cells, and a synthetic trackball drag.
// Built with FATHOM_WITH_VTK only; otherwise one test reports the skip.
#include <gtest/gtest.h>

#ifdef FATHOM_HAS_VTK

#include <QApplication>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>

#include "ui/PlotColoring.hpp"
#include "ui/vtk/Embedding3DView.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using fathom::test::count_pixels;
using fathom::test::count_pixels_not;

constexpr Rgba8 k_red{230, 20, 20, 255};
constexpr Rgba8 k_blue{30, 60, 240, 255};
constexpr Rgba8 k_background{10, 10, 10, 255};

// Two Gaussian clusters in 3-D, apart along x and z; codes 0 and 1 in blocks.
struct Clusters {
    std::vector<float> xyz;
    std::vector<std::int32_t> codes;
};

Clusters make_clusters(int per_cluster, std::uint32_t seed = 3) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    const float centers[2][3] = {{-8.0f, 0.0f, -4.0f}, {8.0f, 2.0f, 4.0f}};
    Clusters clusters;
    for (int cluster = 0; cluster < 2; ++cluster)
        for (int cell = 0; cell < per_cluster; ++cell) {
            for (int axis = 0; axis < 3; ++axis) clusters.xyz.push_back(centers[cluster][axis] + noise(generator));
            clusters.codes.push_back(cluster);
        }
    return clusters;
}

/// The attributes PlotView would make for this categorical colouring (the same function).
std::vector<PointAttribute> categorical(const Clusters& clusters, std::vector<std::uint8_t> visible = {1, 1},
                                        std::vector<std::uint8_t> mask = {}) {
    std::vector<PointAttribute> out(clusters.codes.size());
    const std::vector<Rgba8> colors = {k_red, k_blue};
    fill_categorical_attributes(clusters.codes, colors, visible, mask, out);
    return out;
}

/// Pixels that differ between two pictures of the same size.
long count_changed(const QImage& before, const QImage& after) {
    long changed = 0;
    for (int y = 0; y < before.height(); ++y)
        for (int x = 0; x < before.width(); ++x) changed += before.pixel(x, y) != after.pixel(x, y) ? 1 : 0;
    return changed;
}

class Embedding3DViewTest : public ::testing::Test {
protected:
    void SetUp() override {
        FATHOM_REQUIRE_GL();
        view = std::make_unique<Embedding3DView>();
        view->resize(320, 320);
        view->setBackgroundColor(k_background);
        view->setPointSize(4.0f);
        view->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(view.get()));
    }

    void send_mouse(QEvent::Type type, QPoint position, Qt::MouseButton button, Qt::MouseButtons buttons) {
        QMouseEvent event(type, QPointF(position), view->mapToGlobal(QPointF(position)), button, buttons,
                          Qt::NoModifier);
        QApplication::sendEvent(view.get(), &event);
    }

    std::unique_ptr<Embedding3DView> view;
};

TEST_F(Embedding3DViewTest, TwoCategoriesDrawANonBlankFrameWithBothColours) {
    const Clusters clusters = make_clusters(2000);
    view->setPositions(clusters.xyz);
    ASSERT_EQ(view->numPoints(), 4000);
    ASSERT_TRUE(view->setAttributes(categorical(clusters)));
    EXPECT_EQ(view->visiblePoints(), 4000);
    const QImage image = view->grabFramebuffer();
    ASSERT_FALSE(image.isNull());
    EXPECT_GT(view->renderCount(), 0);
    const long total = static_cast<long>(image.width()) * image.height();
    const long red = count_pixels(image, k_red), blue = count_pixels(image, k_blue);
    const long not_background = count_pixels_not(image, k_background);
    std::printf("[3d] %dx%d frame: red %ld, blue %ld, non-background %ld pixels\n", image.width(), image.height(), red,
                blue, not_background);
    EXPECT_GT(not_background, total / 50) << "the frame is blank";
    EXPECT_LT(not_background, total) << "no background left: the camera is not fitted";
    // Unlit points keep the exact category colours.
    EXPECT_GT(red, total / 200);
    EXPECT_GT(blue, total / 200);
    // Clusters are apart: red mostly on the left half, blue on the right (x to the right).
    long red_left = 0, blue_right = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const Rgba8 color = fathom::test::pixel_at(image, x, y);
            red_left += color == k_red && x < image.width() / 2 ? 1 : 0;
            blue_right += color == k_blue && x >= image.width() / 2 ? 1 : 0;
        }
    EXPECT_GT(red_left, red * 9 / 10);
    EXPECT_GT(blue_right, blue * 9 / 10);
}

TEST_F(Embedding3DViewTest, HiddenCategoriesAndMaskedCellsAreNotDrawn) {
    const Clusters clusters = make_clusters(1500);
    view->setPositions(clusters.xyz);
    ASSERT_TRUE(view->setAttributes(categorical(clusters, {1, 0})));  // blue toggled off in the legend
    EXPECT_EQ(view->visiblePoints(), 1500);
    QImage image = view->grabFramebuffer();
    EXPECT_GT(count_pixels(image, k_red), 100);
    EXPECT_EQ(count_pixels(image, k_blue), 0);

    // A cell mask keeping only the blue cluster.
    std::vector<std::uint8_t> mask(clusters.codes.size());
    for (std::size_t cell = 0; cell < mask.size(); ++cell) mask[cell] = clusters.codes[cell] == 1 ? 1 : 0;
    ASSERT_TRUE(view->setAttributes(categorical(clusters, {1, 1}, mask)));
    EXPECT_EQ(view->visiblePoints(), 1500);
    image = view->grabFramebuffer();
    EXPECT_EQ(count_pixels(image, k_red), 0);
    EXPECT_GT(count_pixels(image, k_blue), 100);

    // Attributes for another number of cells are refused and change nothing.
    std::vector<PointAttribute> wrong(10);
    EXPECT_FALSE(view->setAttributes(wrong));
    EXPECT_EQ(view->visiblePoints(), 1500);
}

TEST_F(Embedding3DViewTest, TrackballDragRotatesTheCameraAndChangesTheFrame) {
    const Clusters clusters = make_clusters(1500);
    view->setPositions(clusters.xyz);
    ASSERT_TRUE(view->setAttributes(categorical(clusters)));
    const QImage before = view->grabFramebuffer();
    const auto position_before = view->cameraPosition();
    const auto focal_before = view->cameraFocalPoint();

    // Left drag from the centre to the right and down: the trackball turns the camera.
    const QPoint start(160, 160);
    send_mouse(QEvent::MouseButtonPress, start, Qt::LeftButton, Qt::LeftButton);
    for (int step = 1; step <= 10; ++step)
        send_mouse(QEvent::MouseMove, start + QPoint(8 * step, 3 * step), Qt::NoButton, Qt::LeftButton);
    send_mouse(QEvent::MouseButtonRelease, start + QPoint(80, 30), Qt::LeftButton, Qt::NoButton);
    const QImage after = view->grabFramebuffer();

    const auto position_after = view->cameraPosition();
    const auto focal_after = view->cameraFocalPoint();
    // Rotation about the focal point: the focal point stays, the viewing direction turns.
    double dot = 0.0, norm_before = 0.0, norm_after = 0.0, focal_shift = 0.0;
    for (int axis = 0; axis < 3; ++axis) {
        const double a = position_before[axis] - focal_before[axis], b = position_after[axis] - focal_after[axis];
        dot += a * b;
        norm_before += a * a;
        norm_after += b * b;
        focal_shift += std::fabs(focal_after[axis] - focal_before[axis]);
    }
    const double angle = std::acos(std::clamp(dot / std::sqrt(norm_before * norm_after), -1.0, 1.0)) * 180.0 / std::numbers::pi;
    const long changed = count_changed(before, after);
    std::printf("[3d] drag turned the camera by %.1f degrees; %ld pixels changed\n", angle, changed);
    EXPECT_GT(angle, 20.0);
    EXPECT_LT(focal_shift, 1e-6);
    EXPECT_NEAR(std::sqrt(norm_after), std::sqrt(norm_before), 1e-6 * std::sqrt(norm_before)) << "a rotation, not a zoom";
    EXPECT_GT(changed, 500);
    // Both colours are still on screen after the turn.
    EXPECT_GT(count_pixels(after, k_red), 50);
    EXPECT_GT(count_pixels(after, k_blue), 50);

    // 'r' fits the camera again: back to the starting view.
    QTest::keyClick(view.get(), Qt::Key_R);
    const QImage reset = view->grabFramebuffer();
    EXPECT_LT(count_changed(before, reset), 50);
}

TEST_F(Embedding3DViewTest, MovingToAnotherWindowRecreatesTheContext) {
    // A floating dock re-docked (or any reparenting to another top-level) gives the
    // widget a new GL context: VTK releases its resources and starts over on the new one.
    const Clusters clusters = make_clusters(1000);
    view->setPositions(clusters.xyz);
    ASSERT_TRUE(view->setAttributes(categorical(clusters)));
    EXPECT_GT(count_pixels(view->grabFramebuffer(), k_red), 50);
    bool old_context_gone = false;
    ASSERT_NE(view->context(), nullptr);
    QObject::connect(view->context(), &QObject::destroyed, [&] { old_context_gone = true; });
    QWidget host;
    host.resize(360, 360);
    view->setParent(&host);
    view->move(20, 20);
    host.show();
    view->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&host));
    const QImage image = view->grabFramebuffer();
    EXPECT_TRUE(old_context_gone) << "reparenting kept the context; the test does not cover a new one";
    EXPECT_GT(count_pixels(image, k_red), 50);
    EXPECT_GT(count_pixels(image, k_blue), 50);
    view->setParent(nullptr);  // back to a window of its own before `host` goes
    view->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(view.get()));
    EXPECT_GT(count_pixels(view->grabFramebuffer(), k_blue), 50);
}

TEST_F(Embedding3DViewTest, NewPositionsForTheSameCellsKeepTheColours) {
    Clusters clusters = make_clusters(1000);
    view->setPositions(clusters.xyz);
    ASSERT_TRUE(view->setAttributes(categorical(clusters)));
    for (float& value : clusters.xyz) value *= 1.1f;  // e.g. the next UMAP frame
    view->setPositions(clusters.xyz);
    EXPECT_EQ(view->visiblePoints(), 2000);
    const QImage image = view->grabFramebuffer();
    EXPECT_GT(count_pixels(image, k_red), 50);
    EXPECT_GT(count_pixels(image, k_blue), 50);
    // Another number of cells: colours reset to the default (neither category colour).
    view->setPositions(std::vector<float>(clusters.xyz.begin(), clusters.xyz.begin() + 300));
    EXPECT_EQ(view->numPoints(), 100);
    const QImage reset = view->grabFramebuffer();
    EXPECT_EQ(count_pixels(reset, k_red) + count_pixels(reset, k_blue), 0);
    EXPECT_GT(count_pixels_not(reset, k_background), 50);
    // No cells (no embedding yet): an empty frame, no failure.
    view->setPositions({});
    EXPECT_EQ(view->numPoints(), 0);
    const QImage empty = view->grabFramebuffer();
    EXPECT_EQ(count_pixels_not(empty, k_background), 0);
}

}  // namespace
}  // namespace fathom::ui

#else

TEST(Embedding3DView, NeedsVtk) { GTEST_SKIP() << "built without the VTK 3-D view (FATHOM_WITH_VTK=OFF)"; }

#endif
