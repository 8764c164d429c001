#pragma once
/// Scripted use of the window (docs and tests):
/// `fathom FILE [--run] [--set NAME=VALUE ...] [--color-by KEY|gene:NAME] [--markers COLUMN] [--tab NAME]
///  [--screenshot OUT.png] [--size WxH]
///  [--export-figure OUT.png|svg|pdf [--figure-size WxHin|mm|cm] [--dpi N]]`
/// opens FILE, optionally runs the pipeline to the end, applies the colouring, waits
/// until the plot has every point on screen, writes the window's picture and/or the
/// figure (FigureExport.hpp) and reports an exit code (0, or 2 usage / 3 input /
/// 4 compute / 5 device with a message).
#include <QElapsedTimer>
#include <QObject>
#include <QSize>
#include <QString>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/PipelineSettings.hpp"
#include "core/engine/settings_schema.hpp"
#include "ui/FigureExport.hpp"

class QTimer;

namespace fathom::ui {

class MainWindow;

/// What the command line asked for.
struct ScriptOptions {
    QString path;              ///< dataset to open (required for a script)
    bool run = false;          ///< run the pipeline after opening
    QString color_by;          ///< obs column or "gene:NAME"; empty = default colouring
    QString screenshot;        ///< PNG to write; empty = stay interactive
    QString export_figure;     ///< figure to write (.png, .svg, .pdf); empty = none
    FigureOptions figure;      ///< its size and DPI (--figure-size, --dpi)
    QSize size;                ///< window size; invalid = default
    QString devices;           ///< EngineConfig::devices; empty = default
    QString markers;           ///< categorical obs column whose markers (table, marker plots) are computed; empty = none
    QString tab;               ///< the analysis dock's tab to show ("Pipeline", "Dataset", "QC"); empty = as is
    /// Pipeline settings by schema name (--set min_genes=200), checked by the schema when
    /// parsed: `settings` holds them on top of the defaults, `given` each in order. After
    /// opening, only the given ones are set in the form, on top of what it chose for the
    /// file (the recipe that fits its X, for one).
    PipelineSettings settings;
    bool settings_given = false;
    std::vector<std::pair<std::string, SettingValue>> given;
    bool show_help = false;
};

/// Parses the arguments after the program name. Returns the options, or nullopt with
/// `error` set ("unknown option --foo", "--size expects WxH, got 'abc'").
std::optional<ScriptOptions> parse_script_options(const QStringList& arguments, QString* error);
/// The usage text of `fathom`.
QString script_usage();

/// Drives a MainWindow through the scripted steps; emits finished(exit_code, message).
class ScriptRunner : public QObject {
    Q_OBJECT
public:
    ScriptRunner(MainWindow& window, ScriptOptions options, QObject* parent = nullptr);
    /// Starts (open first). Call once the window is shown.
    void start();
    /// Whether the runner exits the application when done (a --screenshot or
    /// --export-figure run).
    bool exitsWhenDone() const;

signals:
    void finished(int exit_code, const QString& message);

private:
    void fail(int exit_code, const QString& message);
    void afterOpen();
    void afterPipeline();
    void afterColoring();
    void waitForPicture();
    void writePicture();

    MainWindow& m_window;
    ScriptOptions m_options;
    QTimer* m_poll = nullptr;
    int m_settle_frames = 0;
    QElapsedTimer m_waited;
    bool m_done = false;
    bool m_markers_started = false;
};

}  // namespace fathom::ui
