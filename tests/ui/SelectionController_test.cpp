// Selection on the plot under Xvfb: rectangle and lasso gestures driven by synthesized
// mouse events against testing every cell, replace / add / subtract modifiers, undo and
// redo through the QUndoStack restoring the exact selections, and the highlight drawn
// through the attribute buffer and the draw order only.
#include "ui/SelectionController.hpp"

#include <gtest/gtest.h>

#include <QTest>
#include <QUndoStack>
#include <QWheelEvent>
#include <cmath>
#include <random>

#include "ui/PlotView.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using fathom::test::count_pixels;

constexpr Rgba8 k_red{230, 20, 20, 255};
constexpr Rgba8 k_green{20, 200, 40, 255};
constexpr Rgba8 k_blue{30, 60, 240, 255};

class SelectionTest : public ::testing::Test {
protected:
    void SetUp() override {
        FATHOM_REQUIRE_GL();
        view = std::make_unique<PlotView>();
        view->resize(400, 400);
        view->setOverlayVisible(false);
        view->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(view.get()));
        // Three blobs of 2000 cells (codes 0, 1, 2 in blocks).
        std::mt19937 generator(5);
        std::normal_distribution<float> noise(0.0f, 1.6f);
        const float centers[3][2] = {{-10.0f, 0.0f}, {10.0f, 0.0f}, {0.0f, 14.0f}};
        for (int blob = 0; blob < 3; ++blob)
            for (int cell = 0; cell < 2000; ++cell) {
                xy.push_back(centers[blob][0] + noise(generator));
                xy.push_back(centers[blob][1] + noise(generator));
                codes.push_back(blob);
            }
        view->setPositions(xy);
        view->setCategorical("cluster", codes, {"a", "b", "c"}, {k_red, k_green, k_blue});
        controller = std::make_unique<SelectionController>(view.get(), &undo);
        for (int frame = 0; frame < 64 && !view->uploadComplete(); ++frame) view->grabFramebuffer();
        ASSERT_TRUE(view->uploadComplete());
    }

    // The cells inside a polygon given in widget pixels, testing every cell.
    CellSet brute_force(const QPolygonF& widget_polygon) const {
        std::vector<Vec2> world;
        for (const QPointF& point : widget_polygon) world.push_back(view->transform().screen_to_world({point.x(), point.y()}));
        CellSet inside;
        for (std::size_t cell = 0; cell < xy.size() / 2; ++cell)
            if (point_in_polygon(world, xy[2 * cell], xy[2 * cell + 1])) inside.push_back(static_cast<std::uint32_t>(cell));
        return inside;
    }

    QPolygonF rectangle(QPoint a, QPoint b) const {
        const QRectF rect = QRectF(QPointF(a), QPointF(b)).normalized();
        return QPolygonF({rect.topLeft(), rect.topRight(), rect.bottomRight(), rect.bottomLeft()});
    }

    void drag(const std::vector<QPoint>& path, Qt::KeyboardModifiers modifiers = Qt::NoModifier,
              Qt::MouseButton button = Qt::LeftButton) {
        QTest::mousePress(view.get(), button, modifiers, path.front());
        for (std::size_t step = 1; step < path.size(); ++step) QTest::mouseMove(view.get(), path[step]);
        QTest::mouseRelease(view.get(), button, modifiers, path.back());
    }

    std::vector<float> xy;
    std::vector<std::int32_t> codes;
    std::unique_ptr<PlotView> view;
    QUndoStack undo;
    std::unique_ptr<SelectionController> controller;
};

TEST_F(SelectionTest, RectangleDragsSelectReplaceAddSubtractAndUndoRedoRestoreThem) {
    view->setTool(PlotView::Tool::Rectangle);
    const auto position_bytes = view->stats().position_bytes;
    const auto reorders = view->stats().position_reorders;
    const QPoint a(60, 120), b(210, 260), c(230, 40), d(330, 330), e(100, 150), f(280, 200);

    drag({a, QPoint(150, 200), b});
    const CellSet first = *controller->selection();
    EXPECT_EQ(first, brute_force(rectangle(a, b)));
    ASSERT_GT(first.size(), 200u);
    EXPECT_EQ(*view->selection(), first);

    drag({c, d}, Qt::ShiftModifier);  // add
    const CellSet second = *controller->selection();
    EXPECT_EQ(second, combine_selection(first, brute_force(rectangle(c, d)), SelectionMode::Add));
    EXPECT_GT(second.size(), first.size());

    drag({e, f}, Qt::AltModifier);  // subtract
    const CellSet third = *controller->selection();
    EXPECT_EQ(third, combine_selection(second, brute_force(rectangle(e, f)), SelectionMode::Subtract));
    EXPECT_LT(third.size(), second.size());

    view->setSelectionMode(SelectionMode::Subtract);  // the toolbar's mode, without modifiers
    drag({QPoint(1, 1), QPoint(399, 100)});  // (QTest reads (0, 0) as the widget's centre)
    const CellSet fourth = *controller->selection();
    EXPECT_EQ(fourth, combine_selection(third, brute_force(rectangle(QPoint(1, 1), QPoint(399, 100))), SelectionMode::Subtract));
    EXPECT_LT(fourth.size(), third.size());
    view->setSelectionMode(SelectionMode::Replace);

    ASSERT_EQ(undo.count(), 4);
    undo.undo();
    EXPECT_EQ(*controller->selection(), third);
    undo.undo();
    EXPECT_EQ(*controller->selection(), second);
    undo.undo();
    EXPECT_EQ(*controller->selection(), first);
    EXPECT_EQ(*view->selection(), first);
    undo.undo();
    EXPECT_TRUE(controller->selection()->empty());
    EXPECT_TRUE(view->selection()->empty());
    undo.redo();
    undo.redo();
    EXPECT_EQ(*controller->selection(), second);
    EXPECT_EQ(*view->selection(), second);
    undo.redo();
    undo.redo();
    EXPECT_EQ(*controller->selection(), fourth);
    EXPECT_FALSE(undo.canRedo());
    // Positions are only rewritten whole, once per new draw order (selected cells last).
    EXPECT_EQ(view->stats().position_bytes - position_bytes,
              (view->stats().position_reorders - reorders) * static_cast<std::int64_t>(xy.size() * sizeof(float)));

    // A click without area replaces the selection with nothing.
    drag({QPoint(5, 5)});
    EXPECT_TRUE(controller->selection()->empty());
    undo.undo();
    EXPECT_EQ(*controller->selection(), fourth);
}

TEST_F(SelectionTest, ConcaveLassoSelectsExactlyTheCellsInside) {
    view->setTool(PlotView::Tool::Lasso);
    // A "U" over the two lower blobs: the notch between its arms is left out.
    const std::vector<QPoint> path = {{40, 140}, {120, 140}, {120, 260}, {280, 260}, {280, 140}, {360, 140},
                                      {360, 330}, {200, 345}, {40, 330}};
    drag(path);
    QPolygonF polygon;
    for (const QPoint& point : path) polygon << QPointF(point);
    const CellSet expected = brute_force(polygon);
    ASSERT_GT(expected.size(), 100u);
    EXPECT_EQ(*controller->selection(), expected);
    // The notch holds cells that the bounding box would have taken.
    EXPECT_LT(expected.size(), brute_force(rectangle(QPoint(40, 140), QPoint(360, 345))).size());
    EXPECT_EQ(view->cellsInWidgetPolygon(polygon), expected);
}

TEST_F(SelectionTest, PanAndZoomStillWorkWithASelectionTool) {
    view->setTool(PlotView::Tool::Rectangle);
    const ViewTransform before = view->transform();
    drag({QPoint(200, 200), QPoint(260, 230)}, Qt::NoModifier, Qt::MiddleButton);  // middle button pans
    EXPECT_NE(view->transform().center(), before.center());
    EXPECT_TRUE(controller->selection()->empty()) << "panning selects nothing";
    EXPECT_EQ(undo.count(), 0);
    const double scale = view->transform().pixels_per_unit();
    QWheelEvent wheel(QPointF(200, 200), view->mapToGlobal(QPointF(200, 200)), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(view.get(), &wheel);
    EXPECT_GT(view->transform().pixels_per_unit(), scale);
    // The pan tool's left drag pans and selects nothing.
    view->setTool(PlotView::Tool::Pan);
    const Vec2 center = view->transform().center();
    drag({QPoint(100, 100), QPoint(150, 120)});
    EXPECT_NE(view->transform().center(), center);
    EXPECT_EQ(undo.count(), 0);
}

TEST_F(SelectionTest, HighlightDimsTheOtherCellsThroughAttributesOnly) {
    QImage image = view->grabFramebuffer();
    EXPECT_GT(count_pixels(image, k_green), 100);
    const auto position_bytes = view->stats().position_bytes;
    const auto attribute_bytes = view->stats().attribute_bytes;
    const auto reorders = view->stats().position_reorders;
    CellSet red_blob(2000);
    for (std::uint32_t cell = 0; cell < 2000; ++cell) red_blob[cell] = cell;
    controller->setSelection(red_blob, QStringLiteral("select blob a"));
    image = view->grabFramebuffer();
    EXPECT_EQ(count_pixels(image, k_green), 0) << "unselected cells are dimmed";
    EXPECT_EQ(count_pixels(image, k_blue), 0);
    EXPECT_GT(count_pixels(image, k_red), 100) << "selected cells keep their colour";
    EXPECT_GT(view->stats().attribute_bytes, attribute_bytes);
    // The selection is drawn on top: the positions are rewritten once, in the new order.
    EXPECT_EQ(view->stats().position_reorders, reorders + 1);
    EXPECT_EQ(view->stats().position_bytes, position_bytes + 6000 * 8);
    controller->invert();
    EXPECT_EQ(controller->count(), 4000);
    controller->clear();
    image = view->grabFramebuffer();
    EXPECT_GT(count_pixels(image, k_green), 100);
    EXPECT_EQ(undo.count(), 3);
    // A new cell count drops the selection.
    controller->selectAll();
    EXPECT_EQ(controller->count(), 6000);
    view->setPositions(std::vector<float>(20, 0.0f));
    EXPECT_TRUE(view->selection()->empty());
}

}  // namespace
}  // namespace fathom::ui
