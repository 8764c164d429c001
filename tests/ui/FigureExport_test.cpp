// Figure export under Xvfb: PNG size and pHYs DPI, the PDF read by poppler (page size,
// text as text, exactly one embedded image) and the SVG (valid, <text> elements, one
// <image>), for a small embedding with known categories.
#include "ui/FigureExport.hpp"

#include <gtest/gtest.h>

#include <QFile>
#include <QImageReader>
#include <QSvgRenderer>
#include <QTest>
#include <QtEndian>
#include <filesystem>
#include <random>

#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"
#include "ui/PlotView.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

using fathom::test::count_pixels;
using fathom::test::run_command;
using fathom::test::shell_quote;

constexpr Rgba8 k_red{230, 20, 20, 255};
constexpr Rgba8 k_green{20, 200, 40, 255};
constexpr Rgba8 k_blue{30, 60, 240, 255};

bool have_tool(const char* name) { return run_command(std::string("command -v ") + name + " >/dev/null 2>&1").exit_code == 0; }

/// The pHYs chunk of a PNG: (pixels per metre x, y, unit) or unit -1 when absent.
struct Phys {
    std::uint32_t x = 0, y = 0;
    int unit = -1;
};
Phys read_phys(const QString& path) {
    QFile file(path);
    EXPECT_TRUE(file.open(QIODevice::ReadOnly));
    const QByteArray bytes = file.readAll();
    Phys phys;
    qsizetype at = 8;  // after the signature
    while (at + 8 <= bytes.size()) {
        const auto length = qFromBigEndian<quint32>(bytes.constData() + at);
        const QByteArray type = bytes.mid(at + 4, 4);
        if (type == "pHYs" && length == 9) {
            phys.x = qFromBigEndian<quint32>(bytes.constData() + at + 8);
            phys.y = qFromBigEndian<quint32>(bytes.constData() + at + 12);
            phys.unit = static_cast<unsigned char>(bytes[at + 16]);
        }
        at += 12 + static_cast<qsizetype>(length);
    }
    return phys;
}

class FigureExportTest : public ::testing::Test {
protected:
    void SetUp() override {
        FATHOM_REQUIRE_GL();
        folder = test::temp_dir("figure");
        view = std::make_unique<PlotView>();
        view->resize(420, 320);
        view->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(view.get()));
        // Three blobs, 1500 cells each, coloured red / green / blue.
        std::mt19937 generator(3);
        std::normal_distribution<float> noise(0.0f, 0.8f);
        const float centers[3][2] = {{-10.0f, 0.0f}, {10.0f, 0.0f}, {0.0f, 14.0f}};
        std::vector<float> xy;
        std::vector<std::int32_t> codes;
        for (int blob = 0; blob < 3; ++blob)
            for (int cell = 0; cell < 1500; ++cell) {
                xy.push_back(centers[blob][0] + noise(generator));
                xy.push_back(centers[blob][1] + noise(generator));
                codes.push_back(blob);
            }
        view->setPositions(std::move(xy));
        view->setCategorical(QStringLiteral("cluster"), codes, {"alpha", "beta", "gamma"}, {k_red, k_green, k_blue});
        view->setPointSize(4.0f);
        for (int frame = 0; frame < 64 && !view->uploadComplete(); ++frame) view->grabFramebuffer();
        ASSERT_TRUE(view->uploadComplete());
    }

    QString path_of(const char* name) const { return QString::fromStdString((folder / name).string()); }

    std::filesystem::path folder;
    std::unique_ptr<PlotView> view;
};

TEST(FigureOptions, SizesUnitsAndLimits) {
    QString error;
    auto size = parse_figure_size(QStringLiteral("6x4in"), &error);
    ASSERT_TRUE(size) << error.toStdString();
    EXPECT_DOUBLE_EQ(size->width(), 6.0);
    EXPECT_DOUBLE_EQ(size->height(), 4.0);
    size = parse_figure_size(QStringLiteral("254 x 127mm"), &error);
    ASSERT_TRUE(size);
    EXPECT_DOUBLE_EQ(size->width(), 10.0);
    EXPECT_DOUBLE_EQ(size->height(), 5.0);
    size = parse_figure_size(QStringLiteral("2.54x5.08cm"), &error);
    ASSERT_TRUE(size);
    EXPECT_DOUBLE_EQ(size->width(), 1.0);
    EXPECT_FALSE(parse_figure_size(QStringLiteral("6x4"), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("6x4in")));
    EXPECT_FALSE(parse_figure_size(QStringLiteral("0x4in"), &error));

    FigureOptions options;
    EXPECT_TRUE(validate(options).isEmpty());
    options.dpi = 10;
    EXPECT_TRUE(validate(options).startsWith(QStringLiteral("FigureOptions::dpi"))) << validate(options).toStdString();
    options = FigureOptions{};
    options.width_in = 100.0;
    EXPECT_TRUE(validate(options).startsWith(QStringLiteral("FigureOptions::width_in")));

    EXPECT_EQ(figure_format_of(QStringLiteral("a/b.PDF")), FigureFormat::Pdf);
    EXPECT_FALSE(figure_format_of(QStringLiteral("a.jpg")));
    EXPECT_EQ(axis_labels_of(QStringLiteral("X_umap")).first, QStringLiteral("UMAP1"));
    EXPECT_EQ(axis_labels_of(QStringLiteral("X_pca")).second, QStringLiteral("PC2"));
}

TEST_F(FigureExportTest, PngHasTheRequestedPixelsAndDpiWhateverTheWindowSize) {
    FigureOptions options;
    options.width_in = 3.0;
    options.height_in = 2.0;
    options.dpi = 150;
    options.embedding = QStringLiteral("X_umap");
    QString error;
    const QString path = path_of("small.png");
    ASSERT_TRUE(export_figure(*view, path, options, &error)) << error.toStdString();
    QImage image(path);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.width(), 450);
    EXPECT_EQ(image.height(), 300);
    const Phys phys = read_phys(path);
    EXPECT_EQ(phys.unit, 1) << "pHYs missing or not in metres";
    // PNG stores whole pixels per metre: 150 dpi = 5905.5 -> 5906 (150.012 dpi).
    EXPECT_EQ(phys.x, 5906u);
    EXPECT_NEAR(phys.x * 0.0254, 150.0, 0.0127);
    EXPECT_EQ(phys.x, phys.y);
    // The three categories' colours are drawn (the point layer) on the dark background.
    EXPECT_GT(count_pixels(image, k_red), 200);
    EXPECT_GT(count_pixels(image, k_green), 200);
    EXPECT_GT(count_pixels(image, k_blue), 200);
    EXPECT_GT(count_pixels(image, view->backgroundColor()), 450 * 300 / 4);

    // A different window size and DPI: the figure follows the options only.
    view->resize(260, 500);
    view->grabFramebuffer();
    options.dpi = 200;
    const QString bigger = path_of("bigger.png");
    ASSERT_TRUE(export_figure(*view, bigger, options, &error)) << error.toStdString();
    image = QImage(bigger);
    EXPECT_EQ(image.size(), QSize(600, 400));
    EXPECT_NEAR(read_phys(bigger).x * 0.0254, 200.0, 0.0127);
    // Hidden categories are not drawn (as on screen).
    view->setCategoryVisible(1, false);
    ASSERT_TRUE(export_figure(*view, bigger, options, &error)) << error.toStdString();
    image = QImage(bigger);
    EXPECT_GT(count_pixels(image, k_red), 200);
    EXPECT_EQ(count_pixels(image, k_green), 0);
    // The widget's own view was not changed by the off-screen renders.
    EXPECT_EQ(view->transform().width(), 260);
}

TEST_F(FigureExportTest, FilteredCellsAndDensityModeLookAsOnScreen) {
    FigureOptions options;
    options.width_in = 3.0;
    options.height_in = 2.0;
    options.dpi = 100;
    options.legend = false;  // its swatches would show every category's colour
    QString error;
    // A filter mask keeping the first blob only: the others are not drawn.
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(view->numPoints()), 0);
    std::fill(mask.begin(), mask.begin() + 1500, 1);
    view->setCellMask(mask);
    const QString masked = path_of("masked.png");
    ASSERT_TRUE(export_figure(*view, masked, options, &error)) << error.toStdString();
    QImage image(masked);
    EXPECT_GT(count_pixels(image, k_red), 50);
    EXPECT_EQ(count_pixels(image, k_green), 0);
    EXPECT_EQ(count_pixels(image, k_blue), 0);
    view->setCellMask({});

    // Density mode: the aggregated layer instead of points, still at the figure's size.
    view->setDensityMode(PlotView::DensityMode::On);
    const auto aggregations = view->stats().density_aggregations;
    const QString density = path_of("density.png");
    ASSERT_TRUE(export_figure(*view, density, options, &error)) << error.toStdString();
    image = QImage(density);
    EXPECT_EQ(image.size(), QSize(300, 200));
    EXPECT_GT(view->stats().density_aggregations, aggregations);
    // Pure category colours no longer dominate: density shades of them do, over the background.
    EXPECT_GT(fathom::test::count_distinct_colors(image), 20);
    EXPECT_GT(fathom::test::count_pixels_not(image, view->backgroundColor()), 2000);
    // The on-screen frame still renders afterwards.
    const QImage frame = view->grabFramebuffer();
    EXPECT_EQ(frame.width(), static_cast<int>(view->width() * view->devicePixelRatioF()));
    EXPECT_GT(fathom::test::count_pixels_not(frame, view->backgroundColor()), 100);
}

TEST_F(FigureExportTest, PdfHasVectorTextAndExactlyOneImage) {
    if (!have_tool("pdfinfo") || !have_tool("pdftotext") || !have_tool("pdfimages"))
        GTEST_SKIP() << "poppler-utils (pdfinfo, pdftotext, pdfimages) not installed";
    FigureOptions options;
    options.width_in = 4.0;
    options.height_in = 3.0;
    options.dpi = 200;
    options.embedding = QStringLiteral("X_umap");
    options.title = QStringLiteral("Clusters of the blobs");
    const QString path = path_of("figure.pdf");
    QString error;
    ASSERT_TRUE(export_figure(*view, path, options, &error)) << error.toStdString();
    const std::string file = shell_quote(path.toStdString());

    const auto info = run_command("pdfinfo " + file);
    ASSERT_EQ(info.exit_code, 0) << info.output;
    // 4 x 3 in = 288 x 216 pt, one page.
    EXPECT_NE(info.output.find(" 288 x 216 pts"), std::string::npos) << info.output;
    const auto pages = info.output.find("Pages:");
    ASSERT_NE(pages, std::string::npos) << info.output;
    EXPECT_EQ(std::stoi(info.output.substr(pages + 6)), 1) << info.output;

    const auto text = run_command("pdftotext " + file + " -");
    ASSERT_EQ(text.exit_code, 0) << text.output;
    for (const char* expected : {"UMAP1", "UMAP2", "alpha", "beta", "gamma", "Clusters of the blobs"})
        EXPECT_NE(text.output.find(expected), std::string::npos) << expected << " not found in:\n" << text.output;

    const auto images = run_command("pdfimages -list " + file);
    ASSERT_EQ(images.exit_code, 0) << images.output;
    // Two header lines, then one line per image.
    std::vector<std::string> lines;
    std::istringstream stream(images.output);
    for (std::string line; std::getline(stream, line);)
        if (!line.empty()) lines.push_back(line);
    ASSERT_EQ(lines.size(), 3u) << images.output;
    // The point layer at the figure's DPI (x-ppi column), losslessly encoded.
    EXPECT_NE(lines[2].find(" 200 "), std::string::npos) << lines[2];
    EXPECT_EQ(lines[2].find("jpeg"), std::string::npos) << lines[2];
}

TEST_F(FigureExportTest, SvgParsesWithTextElementsAndOneImage) {
    view->setTheme(PlotView::Theme::Light);
    FigureOptions options;
    options.width_in = 4.0;
    options.height_in = 3.0;
    options.dpi = 120;
    options.embedding = QStringLiteral("X_pca");
    const QString path = path_of("figure.svg");
    QString error;
    ASSERT_TRUE(export_figure(*view, path, options, &error)) << error.toStdString();
    QSvgRenderer renderer(path);
    ASSERT_TRUE(renderer.isValid());
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QString svg = QString::fromUtf8(file.readAll());
    EXPECT_EQ(svg.count(QStringLiteral("<image")), 1);
    EXPECT_GE(svg.count(QStringLiteral("<text")), 6);  // axis labels, title, three legend entries, ticks
    for (const char* expected : {">PC1<", ">PC2<", ">alpha<", ">gamma<", ">cluster<"})
        EXPECT_TRUE(svg.contains(QString::fromUtf8(expected))) << expected;
    // The physical size: 4 x 3 in.
    EXPECT_TRUE(svg.contains(QStringLiteral("width=\"101.6mm\""))) << svg.left(600).toStdString();
    if (have_tool("rsvg-convert")) {
        const QString png = path_of("figure-rsvg.png");
        const auto converted = run_command("rsvg-convert -o " + shell_quote(png.toStdString()) + " " +
                                           shell_quote(path.toStdString()) + " 2>&1");
        EXPECT_EQ(converted.exit_code, 0) << converted.output;
        const QImage rendered(png);
        ASSERT_FALSE(rendered.isNull());
        // The embedded point layer survives another renderer: the blob colours are there.
        EXPECT_GT(count_pixels(rendered, k_blue), 20);
    }
}

TEST_F(FigureExportTest, ContinuousColouringGetsAColourBar) {
    std::vector<float> values(static_cast<std::size_t>(view->numPoints()));
    for (std::size_t cell = 0; cell < values.size(); ++cell) values[cell] = static_cast<float>(cell % 100) / 10.0f;
    view->setContinuous(QStringLiteral("CD3E (log-norm)"), values);
    FigureOptions options;
    options.dpi = 100;
    const QString path = path_of("continuous.svg");
    QString error;
    ASSERT_TRUE(export_figure(*view, path, options, &error)) << error.toStdString();
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QString svg = QString::fromUtf8(file.readAll());
    EXPECT_EQ(svg.count(QStringLiteral("<image")), 1);
    EXPECT_TRUE(svg.contains(QStringLiteral("CD3E (log-norm)")));
    // Colour bar ticks over the value range [0, 9.9].
    EXPECT_TRUE(svg.contains(QStringLiteral(">0<")));
    EXPECT_TRUE(svg.contains(QStringLiteral(">8<")));
    EXPECT_TRUE(svg.contains(QStringLiteral("linearGradient")));
}

TEST_F(FigureExportTest, BadRequestsFailNamingTheFileAndLeaveNothing) {
    QString error;
    FigureOptions options;
    EXPECT_FALSE(export_figure(*view, path_of("figure.jpg"), options, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("figure.jpg"))) << error.toStdString();
    options.dpi = 5000;
    EXPECT_FALSE(export_figure(*view, path_of("figure.png"), options, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("FigureOptions::dpi"))) << error.toStdString();
    options = FigureOptions{};
    const QString missing = path_of("no/such/folder/figure.pdf");
    EXPECT_FALSE(export_figure(*view, missing, options, &error));
    EXPECT_TRUE(error.contains(missing)) << error.toStdString();
    EXPECT_TRUE(std::filesystem::is_empty(folder));
}

}  // namespace
}  // namespace fathom::ui
