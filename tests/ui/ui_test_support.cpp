#include "ui_test_support.hpp"

#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QStandardPaths>
#include <QSurfaceFormat>
#include <set>

#include "ui/PlotView.hpp"

namespace fathom::test {

namespace {

int g_argc = 1;
char g_program[] = "test_ui";
char* g_argv[] = {g_program, nullptr};
bool g_display = false;

// One QApplication for the whole binary, created before the first test (never at static
// initialisation: listing the tests must work without a display).
class QtEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        g_display = !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
                    !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
        if (!g_display) qputenv("QT_QPA_PLATFORM", "offscreen");
        QSurfaceFormat::setDefaultFormat(ui::PlotView::surfaceFormat());
        QStandardPaths::setTestModeEnabled(true);  // QSettings go to a test location
        m_app = new QApplication(g_argc, g_argv);
    }
    void TearDown() override {
        delete m_app;
        m_app = nullptr;
    }

private:
    QApplication* m_app = nullptr;
};

[[maybe_unused]] ::testing::Environment* const g_environment = ::testing::AddGlobalTestEnvironment(new QtEnvironment);

const char* g_reason = "";

}  // namespace

bool gl_available() {
    static const bool available = [] {
        if (!g_display) {
            g_reason = "DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset";
            return false;
        }
        QOpenGLContext context;
        context.setFormat(ui::PlotView::surfaceFormat());
        if (!context.create()) {
            g_reason = "QOpenGLContext::create() failed";
            return false;
        }
        const QSurfaceFormat format = context.format();
        const bool ok = context.isOpenGLES() ? format.majorVersion() >= 3
                                             : format.majorVersion() * 10 + format.minorVersion() >= 33;
        if (!ok) g_reason = "the context is older than OpenGL 3.3";
        return ok;
    }();
    return available;
}

const char* gl_unavailable_reason() { return g_reason; }

bool process_events_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    QElapsedTimer timer;
    timer.start();
    while (!done()) {
        if (timer.elapsed() > timeout.count()) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

ui::Rgba8 pixel_at(const QImage& image, int x, int y) {
    const QRgb value = image.pixel(x, y);
    return {static_cast<std::uint8_t>(qRed(value)), static_cast<std::uint8_t>(qGreen(value)),
            static_cast<std::uint8_t>(qBlue(value)), 255};
}

long count_pixels(const QImage& image, ui::Rgba8 color) {
    long count = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) count += pixel_at(image, x, y) == color;
    return count;
}

long count_pixels_not(const QImage& image, ui::Rgba8 color) {
    return static_cast<long>(image.width()) * image.height() - count_pixels(image, color);
}

long count_distinct_colors(const QImage& image) {
    std::set<QRgb> colors;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) colors.insert(image.pixel(x, y) | 0xff000000u);
    return static_cast<long>(colors.size());
}

}  // namespace fathom::test
