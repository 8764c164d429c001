#pragma once
/// Helpers shared by the GL frame-time benchmarks (bench_plot*.cpp).
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QWidget>
#include <QWindow>

#include "bench/bench_support.hpp"

namespace fathom::bench {

/// Processes events until `widget`'s window is exposed (false after 10 s).
inline bool wait_exposed(QWidget& widget) {
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < 10000) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        if (widget.windowHandle() && widget.windowHandle()->isExposed()) return true;
    }
    return false;
}

}  // namespace fathom::bench
