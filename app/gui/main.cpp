// fathom: the desktop explorer. Checks for a display before Qt is touched (so that a
// headless run prints a pointer to fathom-cli instead of aborting in the platform
// plugin), then builds the window and, for scripted runs, drives it to a screenshot.
#include <QApplication>
#include <QStringList>
#include <QSurfaceFormat>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "gpu/provider.hpp"
#if defined(FATHOM_HAVE_CUDA_GL)
#include "gpu/gl_interop.hpp"
#endif
#include "ui/MainWindow.hpp"
#include "ui/PlotView.hpp"
#include "ui/ScriptRunner.hpp"

namespace {

bool has_display() {
    for (const char* variable : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) {
        const char* value = std::getenv(variable);
        if (value && *value) return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    QStringList arguments;
    for (int index = 1; index < argc; ++index) arguments << QString::fromLocal8Bit(argv[index]);
    QString error;
    const auto options = fathom::ui::parse_script_options(arguments, &error);
    if (!options) {
        std::fprintf(stderr, "fathom: %s\n%s", qPrintable(error), qPrintable(fathom::ui::script_usage()));
        return 2;
    }
    if (options->show_help) {
        std::fputs(qPrintable(fathom::ui::script_usage()), stdout);
        return 0;
    }
    if (!has_display()) {
        std::fprintf(stderr, "%s\n", qPrintable(fathom::ui::MainWindow::noDisplayMessage()));
        return 1;
    }

    QSurfaceFormat::setDefaultFormat(fathom::ui::PlotView::surfaceFormat());
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Fathom"));
    QApplication::setOrganizationName(QStringLiteral("Fathom"));

    fathom::EngineConfig config;
    if (!options->devices.isEmpty()) config.devices = options->devices.toStdString();
    config.device_provider = fathom::gpu::make_device_provider();
#if defined(FATHOM_HAVE_CUDA_GL)
    // The plot writes its buffers through CUDA-GL interop when its GL context is on a
    // CUDA GPU (else, and on any failure, through GL as before).
    fathom::set_gl_buffer_writer_factory([] { return fathom::gpu::make_gl_buffer_writer(); });
#endif
    std::unique_ptr<fathom::ui::MainWindow> window;
    try {
        window = std::make_unique<fathom::ui::MainWindow>(config, options->screenshot.isEmpty() && options->export_figure.isEmpty());
    } catch (const std::exception& failure) {
        std::fprintf(stderr, "fathom: %s\n", failure.what());
        return 2;
    }
    if (options->size.isValid()) window->resize(options->size);
    window->show();
    if (options->path.isEmpty()) return app.exec();

    fathom::ui::ScriptRunner runner(*window, *options);
    int exit_code = 0;
    QObject::connect(&runner, &fathom::ui::ScriptRunner::finished, [&](int code, const QString& message) {
        if (code != 0) std::fprintf(stderr, "fathom: %s\n", qPrintable(message));
        else if (!message.isEmpty()) std::fprintf(stdout, "fathom: %s\n", qPrintable(message));
        if (runner.exitsWhenDone()) {  // interactive runs stay open after a failure
            exit_code = code;
            QApplication::exit(code);
        }
    });
    QTimer::singleShot(0, &runner, &fathom::ui::ScriptRunner::start);
    const int result = app.exec();
    return exit_code != 0 ? exit_code : result;
}
