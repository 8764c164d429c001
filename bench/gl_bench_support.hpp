#pragma once
/// Helpers shared by the GL frame-time benchmarks (bench_plot*.cpp).
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QWidget>
#include <QWindow>
#include <algorithm>
#include <vector>

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

/// Median of `values` (0 when empty).
inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

}  // namespace fathom::bench
