#include "ui/ScriptRunner.hpp"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QImageWriter>
#include <QPixmap>
#include <QRegularExpression>
#include <QTimer>
#include <memory>

#include "ui/MainWindow.hpp"
#include "core/engine/settings_schema.hpp"
#include "ui/MarkerPlots.hpp"
#include "ui/PipelinePanel.hpp"
#include "ui/PlotView.hpp"
#include "ui/SelectionWorkflow.hpp"

namespace fathom::ui {

namespace {

// Exit codes shared with fathom-cli (STYLE.md): 0 ok, 2 usage, 3 input, 4 compute, 5 device.
int exit_code_of(int failure) {
    switch (static_cast<FailureKind>(failure)) {
        case FailureKind::Input: return 3;
        case FailureKind::Option: return 2;
        case FailureKind::Output: return 4;
        case FailureKind::Device: return 5;
        default: return 4;
    }
}

constexpr int k_picture_timeout_ms = 120000;

}  // namespace

QString script_usage() {
    return QStringLiteral(
        "usage: fathom [FILE] [--run] [--set NAME=VALUE] [--color-by KEY|gene:NAME] [--markers COL] [--tab NAME]\n"
        "              [--screenshot OUT.png] [--size WxH]\n"
        "              [--export-figure OUT.png|svg|pdf [--figure-size WxHin|mm|cm] [--dpi N]]\n"
        "              [--devices cpu:N|cuda:0,...]\n"
        "  FILE             dataset to open (h5ad, 10x h5, Matrix Market folder) or a session (.fathom.json)\n"
        "  --run            run the analysis pipeline after opening\n"
        "  --set NAME=VALUE a pipeline setting by its name in `fathom-cli settings` (repeatable)\n"
        "  --color-by KEY   colour by an obs column (e.g. leiden) or gene:NAME\n"
        "  --markers COL    marker genes of every group of the obs column COL (table and marker plots)\n"
        "  --tab NAME       show the analysis dock's tab NAME (Pipeline, Dataset, QC)\n"
        "  --screenshot P   write the window's picture to P (PNG) and exit\n"
        "  --size WxH       window size, e.g. 1400x900\n"
        "  --export-figure P  write the plot as a figure (PNG, or SVG / PDF with vector text) and exit\n"
        "  --figure-size S  the figure's size, e.g. 6x4in, 180x120mm (default 5x4in)\n"
        "  --dpi N          the figure's resolution (PNG pixels per inch; default 300)\n"
        "  --devices D      where the matrix shards live (default cpu:1)\n");
}

std::optional<ScriptOptions> parse_script_options(const QStringList& arguments, QString* error) {
    ScriptOptions options;
    auto fail = [&](const QString& message) -> std::optional<ScriptOptions> {
        if (error) *error = message;
        return std::nullopt;
    };
    for (int index = 0; index < arguments.size(); ++index) {
        const QString& argument = arguments[index];
        auto value = [&](const char* option) -> std::optional<QString> {
            if (index + 1 >= arguments.size()) return std::nullopt;
            (void)option;
            return arguments[++index];
        };
        if (argument == QStringLiteral("--help") || argument == QStringLiteral("-h")) {
            options.show_help = true;
        } else if (argument == QStringLiteral("--run")) {
            options.run = true;
        } else if (argument == QStringLiteral("--color-by")) {
            const auto text = value("--color-by");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--color-by expects KEY or gene:NAME"));
            options.color_by = *text;
        } else if (argument == QStringLiteral("--set")) {
            const auto text = value("--set");
            const qsizetype equals = text ? text->indexOf(QLatin1Char('=')) : -1;
            if (equals <= 0) return fail(QStringLiteral("--set expects NAME=VALUE (a setting of `fathom-cli settings`)"));
            const std::string name = text->left(equals).toStdString();
            const SettingSpec* spec = find_setting(name);
            if (!spec) return fail(QStringLiteral("--set: unknown setting '%1'").arg(QString::fromStdString(name)));
            try {
                const SettingValue setting = parse_setting_value(*spec, text->mid(equals + 1).toStdString());
                check_setting_value(*spec, setting);
                set_setting(options.settings, *spec, setting);
                options.given.emplace_back(name, setting);
            } catch (const std::exception& problem) {
                return fail(QStringLiteral("--set %1: %2").arg(*text, QString::fromUtf8(problem.what())));
            }
            options.settings_given = true;
        } else if (argument == QStringLiteral("--markers")) {
            const auto text = value("--markers");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--markers expects an obs column"));
            options.markers = *text;
        } else if (argument == QStringLiteral("--tab")) {
            const auto text = value("--tab");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--tab expects Pipeline, Dataset or QC"));
            options.tab = *text;
        } else if (argument == QStringLiteral("--screenshot")) {
            const auto text = value("--screenshot");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--screenshot expects a file name"));
            options.screenshot = *text;
        } else if (argument == QStringLiteral("--size")) {
            const auto text = value("--size");
            static const QRegularExpression pattern(QStringLiteral("^(\\d+)[xX](\\d+)$"));
            const auto match = text ? pattern.match(*text) : QRegularExpressionMatch();
            if (!text || !match.hasMatch())
                return fail(QStringLiteral("--size expects WxH (e.g. 1280x800), got '%1'").arg(text ? *text : QString()));
            const int width = match.captured(1).toInt(), height = match.captured(2).toInt();
            if (width < 200 || height < 150 || width > 10000 || height > 10000)
                return fail(QStringLiteral("--size %1: each side must be in [200, 10000] x [150, 10000]").arg(*text));
            options.size = QSize(width, height);
        } else if (argument == QStringLiteral("--export-figure")) {
            const auto text = value("--export-figure");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--export-figure expects a file name"));
            if (!figure_format_of(*text))
                return fail(QStringLiteral("--export-figure %1: use a .png, .svg or .pdf name").arg(*text));
            options.export_figure = *text;
        } else if (argument == QStringLiteral("--figure-size")) {
            const auto text = value("--figure-size");
            QString problem;
            const auto size = text ? parse_figure_size(*text, &problem) : std::nullopt;
            if (!size) return fail(QStringLiteral("--figure-size: %1").arg(text ? problem : QStringLiteral("expects WxH with a unit, e.g. 6x4in")));
            options.figure.width_in = size->width();
            options.figure.height_in = size->height();
        } else if (argument == QStringLiteral("--dpi")) {
            const auto text = value("--dpi");
            bool ok = false;
            const int dpi = text ? text->toInt(&ok) : 0;
            if (!ok) return fail(QStringLiteral("--dpi expects an integer, got '%1'").arg(text ? *text : QString()));
            options.figure.dpi = dpi;
        } else if (argument == QStringLiteral("--devices")) {
            const auto text = value("--devices");
            if (!text || text->isEmpty()) return fail(QStringLiteral("--devices expects cpu, cpu:N or cuda:0,..."));
            options.devices = *text;
        } else if (argument.startsWith(QStringLiteral("-")) && argument.size() > 1) {
            return fail(QStringLiteral("unknown option %1").arg(argument));
        } else if (options.path.isEmpty()) {
            options.path = argument;
        } else {
            return fail(QStringLiteral("unexpected argument '%1' (one FILE only)").arg(argument));
        }
    }
    if (!options.screenshot.isEmpty() && options.path.isEmpty())
        return fail(QStringLiteral("--screenshot needs a FILE to open"));
    if (!options.export_figure.isEmpty() && options.path.isEmpty())
        return fail(QStringLiteral("--export-figure needs a FILE to open"));
    if (const QString problem = validate(options.figure); !problem.isEmpty())
        return fail(QStringLiteral("--figure-size / --dpi: %1").arg(problem));
    if ((options.run || !options.color_by.isEmpty()) && options.path.isEmpty())
        return fail(QStringLiteral("--run and --color-by need a FILE to open"));
    if (!options.screenshot.isEmpty() && !options.screenshot.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive))
        return fail(QStringLiteral("--screenshot %1: only PNG is written (use a .png name)").arg(options.screenshot));
    return options;
}

ScriptRunner::ScriptRunner(MainWindow& window, ScriptOptions options, QObject* parent)
    : QObject(parent), m_window(window), m_options(std::move(options)) {
    m_poll = new QTimer(this);
    m_poll->setInterval(20);
    connect(m_poll, &QTimer::timeout, this, &ScriptRunner::waitForPicture);
}

bool ScriptRunner::exitsWhenDone() const { return !m_options.screenshot.isEmpty() || !m_options.export_figure.isEmpty(); }

void ScriptRunner::fail(int exit_code, const QString& message) {
    if (m_done) return;
    m_done = true;
    m_poll->stop();
    emit finished(exit_code, message);
}

void ScriptRunner::start() {
    if (m_options.path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) {
        // A session: it reopens its dataset, re-runs its pipeline when it had results and
        // restores the view; --run is not needed.
        connect(&m_window, &MainWindow::sessionRestored, this, [this](bool ok, const QString& message) {
            if (m_done) return;
            if (!ok) return fail(3, QStringLiteral("cannot open session %1: %2").arg(m_options.path, message));
            afterPipeline();
        }, Qt::SingleShotConnection);
        m_window.openSession(m_options.path);
        return;
    }
    connect(&m_window, &MainWindow::datasetOpened, this, [this](bool ok, const QString& message, int failure) {
        if (m_done) return;
        if (!ok) return fail(exit_code_of(failure), QStringLiteral("cannot open %1: %2").arg(m_options.path, message));
        afterOpen();
    }, Qt::SingleShotConnection);
    if (!m_window.openFile(m_options.path)) return;  // datasetOpened(false) already reported it
}

void ScriptRunner::afterOpen() {
    if (m_options.settings_given) {
        PipelineSettings settings = m_window.pipelinePanel()->settings();
        for (const auto& [name, value] : m_options.given) set_setting(settings, *find_setting(name), value);
        m_window.pipelinePanel()->setSettings(settings);
    }
    if (!m_options.run) return afterPipeline();
    connect(&m_window, &MainWindow::pipelineFinished, this, [this](bool ok, const QString& message, int failure) {
        if (m_done) return;
        if (!ok) return fail(failure == 0 ? 130 : exit_code_of(failure), QStringLiteral("pipeline failed: %1").arg(message));
        afterPipeline();
    }, Qt::SingleShotConnection);
    m_window.runPipeline();
}

void ScriptRunner::afterPipeline() {
    if (m_options.color_by.isEmpty()) return afterColoring();
    const QString key = m_options.color_by;
    auto applied = std::make_shared<QMetaObject::Connection>();
    auto failed = std::make_shared<QMetaObject::Connection>();
    *applied = connect(&m_window, &MainWindow::coloringApplied, this, [this, key, applied, failed](const QString& done) {
        if (done != key || m_done) return;
        disconnect(*applied);
        disconnect(*failed);
        afterColoring();
    });
    *failed = connect(&m_window, &MainWindow::coloringFailed, this,
                      [this, key, applied, failed](const QString& wanted, const QString& message) {
                          if (wanted != key || m_done) return;
                          disconnect(*applied);
                          disconnect(*failed);
                          fail(2, QStringLiteral("--color-by %1: %2").arg(key, message));
                      });
    if (!m_window.colorBy(key)) {
        if (!m_done) fail(2, QStringLiteral("--color-by %1: no such obs column (or no dataset)").arg(key));
    }
}

void ScriptRunner::afterColoring() {
    if (!m_options.tab.isEmpty()) m_window.showAnalysisTab(m_options.tab);
    if (!m_options.markers.isEmpty() && !m_markers_started) {
        m_markers_started = true;
        auto ready = std::make_shared<QMetaObject::Connection>();
        auto failed = std::make_shared<QMetaObject::Connection>();
        *ready = connect(m_window.markerPlots(), &MarkerPlotsPanel::plotsReady, this, [this, ready, failed] {
            disconnect(*ready);
            disconnect(*failed);
            if (!m_done) afterColoring();
        });
        *failed = connect(m_window.selectionWorkflow(), &SelectionWorkflow::markersFinished, this,
                          [this, ready, failed](bool ok, const QString& message) {
                              if (ok || m_done) return;
                              disconnect(*ready);
                              disconnect(*failed);
                              fail(2, QStringLiteral("--markers %1: %2").arg(m_options.markers, message));
                          });
        m_window.selectionWorkflow()->computeColumnMarkers(m_options.markers);
        return;
    }
    if (!exitsWhenDone()) {
        m_done = true;
        emit finished(0, QString());
        return;
    }
    m_settle_frames = 0;
    m_poll->start();
}

void ScriptRunner::waitForPicture() {
    if (!m_waited.isValid()) m_waited.start();
    PlotView* plot = m_window.plotView();
    // Every point uploaded, then two more frames so that the overlay (legend) has settled.
    if (!plot->uploadComplete() && plot->numPoints() > 0) {
        plot->update();
        if (m_waited.elapsed() > k_picture_timeout_ms) fail(4, QStringLiteral("the plot did not finish uploading"));
        return;
    }
    if (m_settle_frames < 3) {
        ++m_settle_frames;
        plot->grabFramebuffer();
        return;
    }
    m_poll->stop();
    writePicture();
}

void ScriptRunner::writePicture() {
    QString written;
    if (!m_options.export_figure.isEmpty()) {
        QString error;
        QElapsedTimer clock;
        clock.start();
        if (!m_window.exportFigure(m_options.export_figure, m_options.figure, &error)) return fail(4, error);
        written = QStringLiteral("wrote %1 (%2 x %3 in, %4 dpi) in %5 ms")
                      .arg(m_options.export_figure)
                      .arg(m_options.figure.width_in)
                      .arg(m_options.figure.height_in)
                      .arg(m_options.figure.dpi)
                      .arg(clock.elapsed());
        if (m_options.screenshot.isEmpty()) {
            m_done = true;
            emit finished(0, written);
            return;
        }
    }
    const QPixmap picture = m_window.grab();
    if (picture.isNull()) return fail(4, QStringLiteral("could not grab the window"));
    const QString path = m_options.screenshot;
    if (!picture.save(path, "PNG")) return fail(4, QStringLiteral("cannot write %1").arg(QFileInfo(path).absoluteFilePath()));
    m_done = true;
    const QString shot = QStringLiteral("wrote %1 (%2x%3)").arg(path).arg(picture.width()).arg(picture.height());
    emit finished(0, written.isEmpty() ? shot : written + QStringLiteral("; ") + shot);
}

}  // namespace fathom::ui
