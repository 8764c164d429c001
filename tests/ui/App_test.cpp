// The `fathom` executable: command-line parsing, the no-display message, and the
// scripted --screenshot path (run as a child process).
#include <gtest/gtest.h>

#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/support/paths.hpp"
#include "ui/ScriptRunner.hpp"
#include "ui_test_support.hpp"

namespace fathom::ui {
namespace {

TEST(ScriptOptions, ParsesTheDocumentedFlags) {
    QString error;
    const auto options = parse_script_options(
        {"data.h5ad", "--run", "--color-by", "gene:CD3E", "--screenshot", "out.png", "--size", "1400x900"}, &error);
    ASSERT_TRUE(options) << error.toStdString();
    EXPECT_EQ(options->path, QStringLiteral("data.h5ad"));
    EXPECT_TRUE(options->run);
    EXPECT_EQ(options->color_by, QStringLiteral("gene:CD3E"));
    EXPECT_EQ(options->screenshot, QStringLiteral("out.png"));
    EXPECT_EQ(options->size, QSize(1400, 900));
}

TEST(ScriptOptions, ParsesTheFigureExportFlags) {
    QString error;
    const auto options = parse_script_options({"data.h5ad", "--export-figure", "fig.pdf", "--figure-size", "180x120mm",
                                               "--dpi", "600"},
                                              &error);
    ASSERT_TRUE(options) << error.toStdString();
    EXPECT_EQ(options->export_figure, QStringLiteral("fig.pdf"));
    EXPECT_NEAR(options->figure.width_in, 180.0 / 25.4, 1e-12);
    EXPECT_NEAR(options->figure.height_in, 120.0 / 25.4, 1e-12);
    EXPECT_EQ(options->figure.dpi, 600);
    EXPECT_FALSE(parse_script_options({"data.h5ad", "--export-figure", "fig.gif"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("fig.gif")));
    EXPECT_FALSE(parse_script_options({"data.h5ad", "--export-figure", "f.png", "--figure-size", "6x4"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("--figure-size")));
    EXPECT_FALSE(parse_script_options({"data.h5ad", "--export-figure", "f.png", "--dpi", "5"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("FigureOptions::dpi")));
    EXPECT_FALSE(parse_script_options({"--export-figure", "f.png"}, &error));
}

TEST(ScriptOptions, RejectsBadInputWithAMessage) {
    QString error;
    EXPECT_FALSE(parse_script_options({"a.h5ad", "--size", "big"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("--size")));
    EXPECT_FALSE(parse_script_options({"a.h5ad", "--frobnicate"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("--frobnicate")));
    EXPECT_FALSE(parse_script_options({"--screenshot", "x.png"}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("FILE")));
    EXPECT_FALSE(parse_script_options({"a.h5ad", "--screenshot", "x.jpg"}, &error));
    EXPECT_FALSE(parse_script_options({"a.h5ad", "b.h5ad"}, &error));
    EXPECT_FALSE(parse_script_options({"a.h5ad", "--color-by"}, &error));
}

#ifdef FATHOM_GUI_PATH
struct ProcessRun {
    int exit_code = -1;
    QString output;
};

ProcessRun run_fathom(const QStringList& arguments, const QProcessEnvironment& environment, int timeout_ms = 120000) {
    QProcess process;
    process.setProcessEnvironment(environment);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral(FATHOM_GUI_PATH), arguments);
    ProcessRun run;
    if (!process.waitForStarted(10000)) return run;
    if (!process.waitForFinished(timeout_ms)) {
        process.kill();
        process.waitForFinished(5000);
        return run;
    }
    run.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
    run.output = QString::fromLocal8Bit(process.readAll());
    return run;
}

TEST(FathomExecutable, WithoutADisplayItPointsAtTheCliAndFails) {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.remove(QStringLiteral("DISPLAY"));
    environment.remove(QStringLiteral("WAYLAND_DISPLAY"));
    environment.remove(QStringLiteral("QT_QPA_PLATFORM"));
    const ProcessRun run = run_fathom({QStringLiteral("cells.h5ad")}, environment);
    EXPECT_NE(run.exit_code, 0);
    EXPECT_GT(run.exit_code, 0) << "must exit with a code, not crash";
    EXPECT_TRUE(run.output.contains(QStringLiteral("fathom-cli"))) << run.output.toStdString();
    EXPECT_TRUE(run.output.contains(QStringLiteral("display"))) << run.output.toStdString();
}

TEST(FathomExecutable, BadArgumentsExitWithUsage) {
    const ProcessRun run = run_fathom({QStringLiteral("--size"), QStringLiteral("nope")}, QProcessEnvironment::systemEnvironment());
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_TRUE(run.output.contains(QStringLiteral("usage")));
}

TEST(FathomExecutable, ScreenshotOfAnOpenedDatasetColouredByAStoredCategory) {
    FATHOM_REQUIRE_GL();
    const auto input = fathom::test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(input);
    const auto out = fathom::test::temp_dir("ui-shot") / "louvain.png";
    const ProcessRun run = run_fathom({QString::fromStdString(input.string()), QStringLiteral("--color-by"), QStringLiteral("louvain"),
                                QStringLiteral("--screenshot"), QString::fromStdString(out.string()), QStringLiteral("--size"),
                                QStringLiteral("900x600")},
                               QProcessEnvironment::systemEnvironment());
    ASSERT_EQ(run.exit_code, 0) << run.output.toStdString();
    QImage image(QString::fromStdString(out.string()));
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(900, 600));
    // uns['louvain_colors'] (zeileis) is honoured: its first colour, #023fa5, is on screen.
    EXPECT_GT(fathom::test::count_pixels(image, Rgba8{0x02, 0x3f, 0xa5, 255}), 50);
    EXPECT_GT(fathom::test::count_distinct_colors(image), 20);
}

// `fathom SESSION.fathom.json` reopens the session's dataset and colouring (it was
// rejected as an unrecognised format).
TEST(FathomExecutable, ASessionFileOpensFromTheCommandLine) {
    FATHOM_REQUIRE_GL();
    const auto input = fathom::test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(input);
    const auto folder = fathom::test::temp_dir("ui-session-cli");
    const auto session = folder / "pbmc.fathom.json";
    std::ofstream(session) << R"({"format": "fathom-session", "version": 2, "dataset": ")" << input.string()
                           << R"(", "has_results": false, "color_by": "louvain"})";
    const auto out = folder / "session.png";
    const ProcessRun run = run_fathom({QString::fromStdString(session.string()), QStringLiteral("--screenshot"),
                                       QString::fromStdString(out.string()), QStringLiteral("--size"), QStringLiteral("900x600")},
                                      QProcessEnvironment::systemEnvironment());
    ASSERT_EQ(run.exit_code, 0) << run.output.toStdString();
    QImage image(QString::fromStdString(out.string()));
    ASSERT_FALSE(image.isNull());
    // The session's colouring: uns['louvain_colors'] (first colour #023fa5) is on screen.
    EXPECT_GT(fathom::test::count_pixels(image, Rgba8{0x02, 0x3f, 0xa5, 255}), 50);
}

TEST(FathomExecutable, ExportFigureWritesTheRequestedSizeAndVectorText) {
    FATHOM_REQUIRE_GL();
    const auto input = fathom::test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(input);
    const auto folder = fathom::test::temp_dir("ui-figure");
    const auto png = folder / "louvain.png";
    ProcessRun run = run_fathom({QString::fromStdString(input.string()), QStringLiteral("--color-by"), QStringLiteral("louvain"),
                                 QStringLiteral("--export-figure"), QString::fromStdString(png.string()),
                                 QStringLiteral("--figure-size"), QStringLiteral("80x60mm"), QStringLiteral("--dpi"),
                                 QStringLiteral("254")},
                                QProcessEnvironment::systemEnvironment());
    ASSERT_EQ(run.exit_code, 0) << run.output.toStdString();
    const QImage image(QString::fromStdString(png.string()));
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(800, 600));  // 80 mm at 254 dpi = 800 px
    EXPECT_EQ(image.dotsPerMeterX(), 10000);   // 254 dpi = 10,000 px per metre
    EXPECT_GT(fathom::test::count_pixels(image, Rgba8{0x02, 0x3f, 0xa5, 255}), 20);  // uns['louvain_colors'][0]

    if (std::system("command -v pdftotext >/dev/null 2>&1") != 0) return;
    const auto pdf = folder / "louvain.pdf";
    run = run_fathom({QString::fromStdString(input.string()), QStringLiteral("--color-by"), QStringLiteral("louvain"),
                      QStringLiteral("--export-figure"), QString::fromStdString(pdf.string())},
                     QProcessEnvironment::systemEnvironment());
    ASSERT_EQ(run.exit_code, 0) << run.output.toStdString();
    const auto text = fathom::test::temp_dir("ui-figure-text") / "louvain.txt";
    ASSERT_EQ(std::system(("pdftotext '" + pdf.string() + "' '" + text.string() + "'").c_str()), 0);
    std::ifstream stream(text);
    const std::string content((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
    for (const char* expected : {"louvain", "UMAP1", "UMAP2"})
        EXPECT_NE(content.find(expected), std::string::npos) << expected << " not in:\n" << content;
}

TEST(FathomExecutable, ScreenshotFailuresExitNonZeroWithAMessage) {
    FATHOM_REQUIRE_GL();
    const auto out = fathom::test::temp_dir("ui-shot-bad") / "x.png";
    ProcessRun run = run_fathom({QStringLiteral("/nonexistent/cells.h5ad"), QStringLiteral("--screenshot"),
                          QString::fromStdString(out.string())},
                         QProcessEnvironment::systemEnvironment());
    EXPECT_EQ(run.exit_code, 3) << run.output.toStdString();
    EXPECT_TRUE(run.output.contains(QStringLiteral("/nonexistent/cells.h5ad")));
    EXPECT_FALSE(std::filesystem::exists(out));
    const auto input = fathom::test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    if (!std::filesystem::exists(input)) return;
    run = run_fathom({QString::fromStdString(input.string()), QStringLiteral("--color-by"), QStringLiteral("gene:NO_SUCH_GENE"),
                      QStringLiteral("--screenshot"), QString::fromStdString(out.string())},
                     QProcessEnvironment::systemEnvironment());
    EXPECT_EQ(run.exit_code, 2) << run.output.toStdString();
    EXPECT_TRUE(run.output.contains(QStringLiteral("NO_SUCH_GENE")));
}
#endif

}  // namespace
}  // namespace fathom::ui
