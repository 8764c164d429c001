// PlotModel without GL: what each cell shows for obs columns of every type, the mask in
// both styles, the selection, the reset on a new cell count, and the value layer switch
// with its signal. Expected colours are computed here from the colour maps directly.
#include "ui/PlotModel.hpp"

#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QTest>

#include "ui/PlotLegend.hpp"
#include <cmath>

namespace fathom::ui {
namespace {

Column categorical_column() {
    Column column;
    column.name = "louvain";
    column.data = CategoricalColumn{{0, 1, -1, 1, 2, 0}, {"B", "NK", "T"}, false};
    return column;
}

TEST(PlotModel, ACategoricalColumnColoursEachCellByItsCategory) {
    PlotModel model;
    model.setNumCells(6);
    QSignalSpy attributes(&model, &PlotModel::attributesChanged);
    QSignalSpy order(&model, &PlotModel::orderKeysChanged);
    const std::vector<std::string> stored{"#ff0000", "#00ff00", "#0000ff"};
    QString error;
    ASSERT_TRUE(model.setObsColumn(categorical_column(), &stored, &error)) << error.toStdString();
    EXPECT_EQ(attributes.count(), 1);
    EXPECT_EQ(order.count(), 1);
    EXPECT_EQ(model.colorKind(), PlotModel::ColorKind::Categorical);
    EXPECT_EQ(model.colorName(), QStringLiteral("louvain"));
    EXPECT_EQ(model.categoryCounts(), (std::vector<std::int64_t>{2, 2, 1}));
    const auto& cells = model.attributes();
    ASSERT_EQ(cells.size(), 6u);
    EXPECT_EQ(cells[0].color, (Rgba8{255, 0, 0, 255}));
    EXPECT_EQ(cells[1].color, (Rgba8{0, 255, 0, 255}));
    EXPECT_EQ(cells[2].color, k_missing_color);
    EXPECT_EQ(cells[4].color, (Rgba8{0, 0, 255, 255}));
    EXPECT_EQ(model.visibleCount(), 6);
    // A legend toggle hides the category's cells.
    model.setCategoryVisible(1, false);
    EXPECT_EQ(model.attributes()[1].color.a, 0);
    EXPECT_EQ(model.attributes()[3].color.a, 0);
    EXPECT_EQ(model.visibleCount(), 4);
    // By-value order sorts by the codes.
    EXPECT_EQ(model.orderKeys(), (std::vector<float>{0, 1, -1, 1, 2, 0}));
}

TEST(PlotModel, BoolAndStringColumnsBecomeCategoriesAsPandasMakesThem) {
    PlotModel model;
    model.setNumCells(4);
    Column flags{"is_b", BoolColumn{{1, 0, 1, 0}, {0, 0, 0, 1}}};
    ASSERT_TRUE(model.setObsColumn(flags, nullptr));
    EXPECT_EQ(model.categories(), (std::vector<std::string>{"False", "True"}));
    EXPECT_EQ(model.codes(), (std::vector<std::int32_t>{1, 0, 1, -1}));
    EXPECT_EQ(model.attributes()[3].color, k_missing_color);

    Column strings{"donor", StringColumn{{"d2", "d1", "d2", "d10"}}};
    ASSERT_TRUE(model.setObsColumn(strings, nullptr));
    EXPECT_EQ(model.categories(), (std::vector<std::string>{"d1", "d10", "d2"}));
    EXPECT_EQ(model.codes(), (std::vector<std::int32_t>{2, 0, 2, 1}));
    EXPECT_EQ(model.categoryColors(), default_category_colors(3));

    // Too many distinct strings is no colouring: an error, and the model unchanged.
    StringColumn many;
    for (std::size_t row = 0; row <= k_max_plot_categories; ++row) many.values.push_back("cell" + std::to_string(row));
    QString error;
    EXPECT_FALSE(model.setObsColumn(Column{"barcode", std::move(many)}, nullptr, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("barcode"))) << error.toStdString();
    EXPECT_EQ(model.colorName(), QStringLiteral("donor"));
}

TEST(PlotModel, AContinuousColumnIsColouredThroughTheColourMapOverItsRange) {
    PlotModel model;
    model.setNumCells(5);
    QSignalSpy range(&model, &PlotModel::valueRangeChanged);
    Column counts{"n_genes", IntColumn{{100, 300, 200, 500, 0}, {0, 0, 0, 0, 1}}};
    ASSERT_TRUE(model.setObsColumn(counts, nullptr));
    EXPECT_EQ(model.colorKind(), PlotModel::ColorKind::Continuous);
    EXPECT_EQ(model.dataRange(), (std::pair<float, float>{100.0f, 500.0f}));
    ASSERT_EQ(range.count(), 1);
    const auto& cells = model.attributes();
    EXPECT_FLOAT_EQ(cells[1].value, 0.5f);
    EXPECT_EQ(cells[1].color, colormap_color(Colormap::Viridis, 0.5f));
    EXPECT_EQ(cells[3].color, colormap_color(Colormap::Viridis, 1.0f));
    EXPECT_EQ(cells[4].color, k_missing_color) << "a missing integer is NaN";
    // A narrower range clamps; another colour map recolours.
    model.setValueRange(100.0f, 200.0f);
    EXPECT_EQ(model.attributes()[1].color, colormap_color(Colormap::Viridis, 1.0f));
    model.setColormap(Colormap::Magma);
    EXPECT_EQ(model.attributes()[0].color, colormap_color(Colormap::Magma, 0.0f));
    Column fractions{"pct", FloatColumn{{0.5, 1.0, 0.0, 0.25, 0.75}}};
    ASSERT_TRUE(model.setObsColumn(fractions, nullptr));
    EXPECT_EQ(model.dataRange(), (std::pair<float, float>{0.0f, 1.0f}));
    EXPECT_EQ(model.attributes()[3].color, colormap_color(Colormap::Magma, 0.25f)) << "the colour map is kept";
}

TEST(PlotModel, TheMaskHidesOrDimsAndTheSelectionDimsTheRest) {
    PlotModel model;
    model.setNumCells(4);
    const Rgba8 background{0, 0, 0, 255}, uniform{200, 100, 50, 255};
    model.setPalette(background, uniform);
    EXPECT_EQ(model.attributes()[0].color, uniform);
    QSignalSpy order(&model, &PlotModel::orderKeysChanged);

    model.setCellMask({1, 0, 1, 0});
    EXPECT_EQ(model.visibleCount(), 2);
    EXPECT_EQ(model.attributes()[1].color.a, 0);
    EXPECT_EQ(order.count(), 0) << "a hiding mask leaves the draw order";
    model.setMaskStyle(PlotModel::MaskStyle::Dim);
    EXPECT_EQ(order.count(), 1);
    EXPECT_EQ(model.visibleCount(), 4);
    const Rgba8 dimmed = model.attributes()[1].color;
    EXPECT_EQ(dimmed.a, 255);
    EXPECT_LT(dimmed.r, uniform.r) << "faded towards the black background";
    EXPECT_EQ(model.attributes()[0].color, uniform);
    model.setCellMask({});
    model.setMaskStyle(PlotModel::MaskStyle::Hide);

    order.clear();
    model.setSelection(std::make_shared<const CellSet>(CellSet{2}));
    EXPECT_EQ(order.count(), 1);
    EXPECT_EQ(model.selectedFlags(), (std::vector<std::uint8_t>{0, 0, 1, 0}));
    EXPECT_EQ(model.attributes()[2].color, uniform);
    EXPECT_LT(model.attributes()[0].color.r, uniform.r);
    // A lighter background moves the dimmed cells with it.
    model.setPalette(Rgba8{255, 255, 255, 255}, uniform);
    EXPECT_GT(model.attributes()[0].color.b, uniform.b);

    // Another number of cells: nothing indexed by the old cells survives.
    model.setContinuous(QStringLiteral("score"), {1.0f, 2.0f, 3.0f, 4.0f});
    model.setNumCells(3);
    EXPECT_TRUE(model.selection()->empty());
    EXPECT_TRUE(model.cellMask().empty());
    EXPECT_EQ(model.colorKind(), PlotModel::ColorKind::Uniform);
    EXPECT_EQ(model.attributes().size(), 3u);
}

TEST(PlotModel, TheValueLayerIsOneSwitchWithASignal) {
    PlotModel model;
    EXPECT_EQ(model.valueLayer(), ValueLayer::LogNorm);
    QSignalSpy changed(&model, &PlotModel::valueLayerChanged);
    model.setValueLayer(ValueLayer::Raw);
    model.setValueLayer(ValueLayer::Raw);
    ASSERT_EQ(changed.count(), 1) << "the same layer again changes nothing";
    EXPECT_EQ(changed[0][0].value<ValueLayer>(), ValueLayer::Raw);
    EXPECT_EQ(model.valueLayer(), ValueLayer::Raw);
}

// The legend beside the 3-D view reads the same model: names with counts, a click
// toggles a category in the model (and so in both views), nothing while uniform.
TEST(PlotModel, TheLegendShowsTheModelAndTogglesItsCategories) {
    PlotModel model;
    model.setNumCells(6);
    PlotLegend legend(&model);
    legend.resize(legend.sizeHint());
    EXPECT_TRUE(legend.lines().isEmpty());
    ASSERT_TRUE(model.setObsColumn(categorical_column(), nullptr));
    EXPECT_EQ(legend.lines(), (QStringList{QStringLiteral("louvain"), QStringLiteral("B  (2)"), QStringLiteral("NK  (2)"),
                                           QStringLiteral("T  (1)")}));
    const int wide = legend.sizeHint().width();
    EXPECT_GT(wide, QFontMetrics(legend.font()).horizontalAdvance(QStringLiteral("NK  (2)"))) << "sized to its names";
    legend.resize(legend.sizeHint());
    legend.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&legend));
    const QRectF nk = legend.entryRect(1);
    ASSERT_FALSE(nk.isEmpty());
    QTest::mouseClick(&legend, Qt::LeftButton, {}, nk.center().toPoint());
    EXPECT_FALSE(model.categoryVisible(1));
    EXPECT_EQ(model.visibleCount(), 4);
    model.setContinuous(QStringLiteral("CD79A (raw/X)"), {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 4.5f});
    EXPECT_EQ(legend.lines(), (QStringList{QStringLiteral("CD79A (raw/X)"), QStringLiteral("4.5"), QStringLiteral("0")}));
    model.setUniformColor();
    EXPECT_TRUE(legend.lines().isEmpty());
}

}  // namespace
}  // namespace fathom::ui
