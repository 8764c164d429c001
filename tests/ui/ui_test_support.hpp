#pragma once
/// Helpers for the widget and GL tests: QApplication set-up (a gtest environment), GL
/// availability, bounded waits and picture checks.
#include <QColor>
#include <QImage>
#include <chrono>
#include <functional>

#include "ui/ColorMaps.hpp"

namespace fathom::test {

/// True when an OpenGL 3.3 core (or ES 3) context can be created on this display.
bool gl_available();
/// Why gl_available() is false (for GTEST_SKIP messages).
const char* gl_unavailable_reason();

/// Processes events until `done()` or `timeout`; true when done. Each turn waits at most
/// 10 ms for events, so it never sleeps past the condition.
bool process_events_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);

/// The colour of pixel (x, y) as Rgba8 (alpha 255).
ui::Rgba8 pixel_at(const QImage& image, int x, int y);
/// Pixels exactly equal to `color` (alpha ignored).
long count_pixels(const QImage& image, ui::Rgba8 color);
/// Pixels different from `color`.
long count_pixels_not(const QImage& image, ui::Rgba8 color);
/// Distinct colours in the picture.
long count_distinct_colors(const QImage& image);

}  // namespace fathom::test

#define FATHOM_REQUIRE_GL()                                                                       \
    do {                                                                                          \
        if (!::fathom::test::gl_available())                                                      \
            GTEST_SKIP() << "no OpenGL 3.3 display: " << ::fathom::test::gl_unavailable_reason() \
                         << " (run under xvfb-run)";                                              \
    } while (0)
