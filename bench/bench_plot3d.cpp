// Frame times of the VTK 3-D view (Embedding3DView) on the GL at hand (llvmpipe under
// Xvfb here). Run:
//   xvfb-run -a -s "-screen 0 1400x1100x24" build/bench/bench_plot3d [--points 100000,1000000]
//       [--frames 5] [--size 1024x768] [--point-size 2]
// Each figure is the median over --frames frames of grabFramebuffer(), i.e. one paintGL
// (VTK render + blit into the widget) plus the read-back of the picture.
//
// Rows:
//   first frame      new positions and colours: VTK builds its buffers and draws
//   rotate           a trackball drag step: camera change only, no buffer upload
//   recolour         new per-cell colours (another colouring, a legend toggle or a
//                    filter): colour + vertex arrays rebuilt, buffers re-uploaded, drawn
#include <QApplication>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QSurfaceFormat>
#include <QWindow>
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/gl_bench_support.hpp"
#include "ui/PlotView.hpp"
#ifdef FATHOM_HAS_VTK
#include "ui/vtk/Embedding3DView.hpp"
#endif

namespace {

#ifdef FATHOM_HAS_VTK

using fathom::ui::Embedding3DView;
using fathom::ui::PointAttribute;
using fathom::ui::Rgba8;

using fathom::bench::median;
using fathom::bench::wait_exposed;

double timed_grab(Embedding3DView& view) {
    QElapsedTimer timer;
    timer.start();
    const QImage image = view.grabFramebuffer();
    const double ms = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
    if (image.isNull()) std::fprintf(stderr, "bench_plot3d: empty frame\n");
    return ms;
}

void drag_step(Embedding3DView& view, int step) {
    const QPointF from(view.width() / 2.0, view.height() / 2.0);
    const QPointF to = from + QPointF(6.0 * (step % 2 ? 1 : -1), 2.0);
    QMouseEvent press(QEvent::MouseButtonPress, from, view.mapToGlobal(from), Qt::LeftButton, Qt::LeftButton,
                      Qt::NoModifier);
    QMouseEvent move(QEvent::MouseMove, to, view.mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QMouseEvent release(QEvent::MouseButtonRelease, to, view.mapToGlobal(to), Qt::LeftButton, Qt::NoButton,
                        Qt::NoModifier);
    QApplication::sendEvent(&view, &press);
    QApplication::sendEvent(&view, &move);
    QApplication::sendEvent(&view, &release);
}

int run(const std::vector<std::int64_t>& sizes, int frames, int width, int height, float point_size) {
    std::printf("%-10s %14s %12s %12s\n", "points", "first frame", "rotate", "recolour");
    for (const std::int64_t count : sizes) {
        // Ten Gaussian clusters in 3-D, ten colours.
        std::mt19937 generator(7);
        std::normal_distribution<float> noise(0.0f, 1.0f);
        std::uniform_real_distribution<float> center(-20.0f, 20.0f);
        float centers[10][3];
        for (auto& cluster : centers)
            for (float& axis : cluster) axis = center(generator);
        std::vector<float> xyz(static_cast<std::size_t>(count) * 3);
        std::vector<std::int32_t> codes(static_cast<std::size_t>(count));
        for (std::int64_t cell = 0; cell < count; ++cell) {
            const auto cluster = static_cast<std::size_t>(cell % 10);
            codes[static_cast<std::size_t>(cell)] = static_cast<std::int32_t>(cluster);
            for (int axis = 0; axis < 3; ++axis)
                xyz[static_cast<std::size_t>(cell * 3 + axis)] = centers[cluster][axis] + noise(generator);
        }
        const std::vector<Rgba8> palette = fathom::ui::default_category_colors(10);
        std::vector<PointAttribute> attributes(codes.size());
        std::vector<std::uint8_t> visible(10, 1);

        std::vector<double> first, rotate, recolour;
        for (int frame = 0; frame < frames; ++frame) {
            Embedding3DView view;
            view.resize(width, height);
            view.setPointSize(point_size);
            view.show();
            if (!wait_exposed(view)) {
                std::fprintf(stderr, "bench_plot3d: the window was not exposed\n");
                return 1;
            }
            view.setPositions(xyz);
            std::fill(visible.begin(), visible.end(), 1);
            fathom::ui::fill_categorical_attributes(codes, palette, visible, {}, attributes);
            view.setAttributes(attributes);
            first.push_back(timed_grab(view));
            for (int step = 0; step < frames; ++step) {
                drag_step(view, step);
                rotate.push_back(timed_grab(view));
            }
            for (int step = 0; step < 2; ++step) {
                visible[static_cast<std::size_t>(step)] = 0;  // a legend toggle
                fathom::ui::fill_categorical_attributes(codes, palette, visible, {}, attributes);
                view.setAttributes(attributes);
                recolour.push_back(timed_grab(view));
            }
        }
        std::printf("%-10lld %11.1f ms %9.1f ms %9.1f ms\n", static_cast<long long>(count), median(first),
                    median(rotate), median(recolour));
        std::fflush(stdout);
    }
    return 0;
}

#endif

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::int64_t> sizes{100000, 1000000};
    int frames = 5;
    int width = 1024, height = 768;
    float point_size = 2.0f;
    for (int index = 1; index < argc; ++index) {
        const std::string argument = argv[index];
        auto next = [&]() -> std::string { return index + 1 < argc ? argv[++index] : std::string(); };
        if (argument == "--points") {
            sizes.clear();
            const std::string list = next();
            for (std::size_t start = 0; start < list.size();) {
                const std::size_t end = list.find(',', start);
                sizes.push_back(std::stoll(list.substr(start, end - start)));
                start = end == std::string::npos ? list.size() : end + 1;
            }
        } else if (argument == "--frames") {
            frames = std::max(1, std::stoi(next()));
        } else if (argument == "--size") {
            std::sscanf(next().c_str(), "%dx%d", &width, &height);
        } else if (argument == "--point-size") {
            point_size = std::stof(next());
        } else {
            std::fprintf(stderr, "bench_plot3d: unknown argument %s\n", argument.c_str());
            return 2;
        }
    }
#ifdef FATHOM_HAS_VTK
    QSurfaceFormat::setDefaultFormat(fathom::ui::PlotView::surfaceFormat());
    QApplication app(argc, argv);
    return run(sizes, frames, width, height, point_size);
#else
    (void)sizes;
    (void)frames;
    (void)width;
    (void)height;
    (void)point_size;
    std::fprintf(stderr, "bench_plot3d: built without the VTK 3-D view (FATHOM_WITH_VTK=OFF)\n");
    return 0;
#endif
}
