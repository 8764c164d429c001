#include "ui/FigureExport.hpp"

#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QFont>
#include <QFontMetricsF>
#include <QImage>
#include <QImageWriter>
#include <QLinearGradient>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>
#include <ostream>
#include <tuple>
#include <vector>

#include "core/types/atomic_file.hpp"
#include "core/types/errors.hpp"
#include "ui/PlotView.hpp"

namespace fathom::ui {

namespace {

constexpr double k_min_inches = 0.5, k_max_inches = 40.0;
constexpr int k_min_dpi = 36, k_max_dpi = 2400;
// Type sizes in points (1/72 in), close to matplotlib's defaults for a small figure.
constexpr double k_title_pt = 10.0, k_label_pt = 8.5, k_tick_pt = 7.0, k_legend_pt = 7.5;
constexpr double k_pad_pt = 6.0, k_tick_length_pt = 3.0, k_line_pt = 0.75;

QColor to_qcolor(Rgba8 color) { return QColor(color.r, color.g, color.b, color.a); }

/// "Nice" tick values (1, 2, 5 x 10^k steps) inside [low, high], about `target` of them.
std::vector<double> nice_ticks(double low, double high, int target) {
    std::vector<double> ticks;
    if (!(high > low) || !std::isfinite(low) || !std::isfinite(high)) {
        if (std::isfinite(low)) ticks.push_back(low);
        return ticks;
    }
    const double raw = (high - low) / std::max(1, target);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double normal = raw / magnitude;
    const double step = (normal < 1.5 ? 1.0 : normal < 3.0 ? 2.0 : normal < 7.0 ? 5.0 : 10.0) * magnitude;
    for (double value = std::ceil(low / step) * step; value <= high + step * 1e-9; value += step)
        ticks.push_back(std::abs(value) < step * 1e-9 ? 0.0 : value);
    return ticks;
}

QString tick_text(double value) { return QString::number(value, 'g', 6); }

QFont figure_font(double points, bool bold = false) {
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setStyleHint(QFont::SansSerif);
    font.setPointSizeF(points);
    font.setBold(bold);
    return font;
}

/// Everything the figure shows, read from the plot once.
struct FigureContent {
    QString title, x_label, y_label;
    PlotView::ColorKind kind = PlotView::ColorKind::Uniform;
    std::vector<std::pair<QString, QColor>> legend;  ///< visible categories, in order
    Colormap colormap = Colormap::Viridis;
    float low = 0.0f, high = 0.0f;                   ///< colour bar range
    QColor background, text, frame;
    WorldRect view;                                  ///< world region on screen
    double screen_scale = 1.0;                       ///< screen px per world unit
};

/// Positions of the figure's parts in device units (pixels at the figure's DPI).
struct FigureLayout {
    QRect plot;            ///< the point layer (whole device pixels)
    WorldRect world;       ///< what `plot` shows
    std::vector<double> x_ticks, y_ticks;
    QRectF legend;         ///< legend or colour bar block
    int legend_rows = 0;   ///< entries per legend column
    double legend_column_width = 0.0;
};

class FigurePainter {
public:
    FigurePainter(const FigureContent& content, const FigureOptions& options, QPaintDevice& device)
        : m_content(content), m_options(options), m_device(device), m_unit(options.dpi / 72.0),
          m_page(options.width_in * options.dpi, options.height_in * options.dpi) {}

    double pt(double points) const { return points * m_unit; }

    /// Lays the figure out; empty string or the reason it does not fit.
    QString layout(FigureLayout& out) const {
        const QFontMetricsF title_metrics(figure_font(k_title_pt, true), &m_device);
        const QFontMetricsF label_metrics(figure_font(k_label_pt), &m_device);
        const QFontMetricsF tick_metrics(figure_font(k_tick_pt), &m_device);
        const QFontMetricsF legend_metrics(figure_font(k_legend_pt), &m_device);
        const double pad = pt(k_pad_pt), tick = pt(k_tick_length_pt);
        const double top = pad + (m_content.title.isEmpty() ? 0.0 : title_metrics.height() + pad * 0.5);
        const double bottom = pad + label_metrics.height() + pad * 0.5 + tick_metrics.height() + tick + pt(2.0);

        // Right-hand block: legend columns or colour bar with its tick labels.
        double right = pad;
        const double plot_height = m_page.height() - top - bottom;
        if (m_options.legend && m_content.kind == PlotView::ColorKind::Categorical && !m_content.legend.empty()) {
            const double row = legend_metrics.height() * 1.25;
            const auto entries = static_cast<int>(m_content.legend.size());
            const int max_rows = std::max(1, static_cast<int>(std::floor(plot_height / row)));
            const int columns = (entries + max_rows - 1) / max_rows;
            out.legend_rows = (entries + columns - 1) / columns;  // balanced columns
            double widest = 0.0;
            for (const auto& [name, color] : m_content.legend) widest = std::max(widest, legend_metrics.horizontalAdvance(name));
            out.legend_column_width = legend_metrics.height() * 1.6 + widest + pad;
            right = pad * 2.0 + columns * out.legend_column_width;  // the gap after the plot, then the columns
        } else if (m_options.legend && m_content.kind == PlotView::ColorKind::Continuous) {
            double widest = 0.0;
            for (double value : nice_ticks(m_content.low, m_content.high, 4))
                widest = std::max(widest, tick_metrics.horizontalAdvance(tick_text(value)));
            right = pad * 2.0 + pt(10.0) + tick + pt(2.0) + widest + pad;
        }

        // Left margin from the y tick labels, which depend on the world region: twice.
        double left = pad + label_metrics.height() + pad * 0.5 + tick + pt(2.0) + tick_metrics.horizontalAdvance(QStringLiteral("-0.0"));
        for (int pass = 0; pass < 2; ++pass) {
            const double width = m_page.width() - left - right;
            if (width < pt(36.0) || plot_height < pt(36.0))
                return QStringLiteral("the plot area would be %1 x %2 pt; enlarge the figure (or fewer legend entries)")
                    .arg(std::max(0.0, width / m_unit), 0, 'f', 0)
                    .arg(std::max(0.0, plot_height / m_unit), 0, 'f', 0);
            out.plot = QRect(static_cast<int>(std::lround(left)), static_cast<int>(std::lround(top)),
                             static_cast<int>(std::lround(width)), static_cast<int>(std::lround(plot_height)));
            out.world = widened(m_content.view, static_cast<double>(out.plot.width()) / out.plot.height());
            out.x_ticks = nice_ticks(out.world.min_x, out.world.max_x, 5);
            out.y_ticks = nice_ticks(out.world.min_y, out.world.max_y, 5);
            double widest = 0.0;
            for (double value : out.y_ticks) widest = std::max(widest, tick_metrics.horizontalAdvance(tick_text(value)));
            left = pad + label_metrics.height() + pad * 0.5 + tick + pt(2.0) + widest;
        }
        out.legend = QRectF(out.plot.right() + pad * 2.0, out.plot.top(), m_page.width() - out.plot.right() - pad * 2.0,
                            out.plot.height());
        return {};
    }

    /// Paints the figure: background, the point layer, then the vector parts on top.
    void paint(QPainter& painter, const FigureLayout& layout, const QImage& layer) const {
        painter.setRenderHint(QPainter::Antialiasing, true);
        painter.setRenderHint(QPainter::TextAntialiasing, true);
        // PDF: Flate-compressed points, not JPEG (which smears single-pixel cells).
        painter.setRenderHint(QPainter::LosslessImageRendering, true);
        painter.fillRect(QRectF(QPointF(0, 0), m_page), m_content.background);
        painter.drawImage(layout.plot, layer);

        const QRectF plot(layout.plot);
        QPen frame_pen(m_content.frame, pt(k_line_pt));
        frame_pen.setCapStyle(Qt::FlatCap);
        painter.setPen(frame_pen);
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(plot);

        // Ticks and tick labels (world y points up, device y down).
        const double tick = pt(k_tick_length_pt), gap = pt(2.0);
        const QFont tick_font = figure_font(k_tick_pt);
        painter.setFont(tick_font);
        const QFontMetricsF tick_metrics(tick_font, &m_device);
        const auto x_of = [&](double world_x) {
            return plot.left() + (world_x - layout.world.min_x) / layout.world.width() * plot.width();
        };
        const auto y_of = [&](double world_y) {
            return plot.bottom() - (world_y - layout.world.min_y) / layout.world.height() * plot.height();
        };
        for (double value : layout.x_ticks) {
            const double x = x_of(value);
            painter.setPen(frame_pen);
            painter.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + tick));
            const QString text = tick_text(value);
            painter.setPen(m_content.text);
            painter.drawText(QPointF(x - tick_metrics.horizontalAdvance(text) / 2.0,
                                     plot.bottom() + tick + gap + tick_metrics.ascent()),
                             text);
        }
        for (double value : layout.y_ticks) {
            const double y = y_of(value);
            painter.setPen(frame_pen);
            painter.drawLine(QPointF(plot.left() - tick, y), QPointF(plot.left(), y));
            const QString text = tick_text(value);
            painter.setPen(m_content.text);
            painter.drawText(QPointF(plot.left() - tick - gap - tick_metrics.horizontalAdvance(text),
                                     y + (tick_metrics.ascent() - tick_metrics.descent()) / 2.0),
                             text);
        }

        // Axis labels and title.
        const double pad = pt(k_pad_pt);
        const QFont label_font = figure_font(k_label_pt);
        const QFontMetricsF label_metrics(label_font, &m_device);
        painter.setFont(label_font);
        painter.setPen(m_content.text);
        painter.drawText(QPointF(plot.center().x() - label_metrics.horizontalAdvance(m_content.x_label) / 2.0,
                                 m_page.height() - pad - label_metrics.descent()),
                         m_content.x_label);
        painter.save();
        painter.translate(pad + label_metrics.ascent(), plot.center().y() + label_metrics.horizontalAdvance(m_content.y_label) / 2.0);
        painter.rotate(-90.0);
        painter.drawText(QPointF(0.0, 0.0), m_content.y_label);
        painter.restore();
        if (!m_content.title.isEmpty()) {
            const QFont title_font = figure_font(k_title_pt, true);
            const QFontMetricsF title_metrics(title_font, &m_device);
            painter.setFont(title_font);
            painter.drawText(QPointF(plot.center().x() - title_metrics.horizontalAdvance(m_content.title) / 2.0,
                                     pad + title_metrics.ascent()),
                             m_content.title);
        }

        if (!m_options.legend) return;
        if (m_content.kind == PlotView::ColorKind::Categorical) paint_legend(painter, layout);
        else if (m_content.kind == PlotView::ColorKind::Continuous) paint_color_bar(painter, layout);
    }

private:
    /// `view` grown along one axis (about its centre) to the aspect width / height.
    static WorldRect widened(const WorldRect& view, double aspect) {
        WorldRect world = view;
        const double center_x = (view.min_x + view.max_x) / 2.0, center_y = (view.min_y + view.max_y) / 2.0;
        double width = view.width(), height = view.height();
        if (width / height < aspect) width = height * aspect;
        else height = width / aspect;
        world.min_x = center_x - width / 2.0;
        world.max_x = center_x + width / 2.0;
        world.min_y = center_y - height / 2.0;
        world.max_y = center_y + height / 2.0;
        return world;
    }

    void paint_legend(QPainter& painter, const FigureLayout& layout) const {
        const QFont font = figure_font(k_legend_pt);
        const QFontMetricsF metrics(font, &m_device);
        painter.setFont(font);
        const double row = metrics.height() * 1.25, swatch = metrics.height() * 0.75;
        for (std::size_t entry = 0; entry < m_content.legend.size(); ++entry) {
            const int column = static_cast<int>(entry) / layout.legend_rows;
            const int line = static_cast<int>(entry) % layout.legend_rows;
            const double x = layout.legend.left() + column * layout.legend_column_width;
            const double y = layout.legend.top() + line * row;
            const auto& [name, color] = m_content.legend[entry];
            painter.setPen(Qt::NoPen);
            painter.setBrush(color);
            painter.drawEllipse(QRectF(x, y + (row - swatch) / 2.0, swatch, swatch));
            painter.setBrush(Qt::NoBrush);
            painter.setPen(m_content.text);
            painter.drawText(QPointF(x + swatch + metrics.height() * 0.6,
                                     y + (row + metrics.ascent() - metrics.descent()) / 2.0),
                             name);
        }
    }

    void paint_color_bar(QPainter& painter, const FigureLayout& layout) const {
        const double bar_width = pt(10.0);
        const double bar_height = layout.legend.height() * 0.6;
        const QRectF bar(layout.legend.left(), layout.legend.top() + (layout.legend.height() - bar_height) / 2.0, bar_width,
                         bar_height);
        // A vector gradient (bottom = low), sampled from the 256-entry map.
        QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
        constexpr int stops = 32;
        for (int stop = 0; stop <= stops; ++stop) {
            const float t = static_cast<float>(stop) / stops;
            gradient.setColorAt(t, to_qcolor(colormap_color(m_content.colormap, std::min(t, 0.9999f))));
        }
        painter.setPen(Qt::NoPen);
        painter.setBrush(gradient);
        painter.drawRect(bar);
        QPen frame_pen(m_content.frame, pt(k_line_pt));
        painter.setPen(frame_pen);
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(bar);

        const QFont font = figure_font(k_tick_pt);
        const QFontMetricsF metrics(font, &m_device);
        painter.setFont(font);
        const double range = static_cast<double>(m_content.high) - m_content.low;
        const double tick = pt(k_tick_length_pt);
        for (double value : nice_ticks(m_content.low, m_content.high, 4)) {
            const double t = range > 0.0 ? (value - m_content.low) / range : 0.5;
            const double y = bar.bottom() - t * bar.height();
            painter.setPen(frame_pen);
            painter.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + tick, y));
            painter.setPen(m_content.text);
            painter.drawText(QPointF(bar.right() + tick + pt(2.0), y + (metrics.ascent() - metrics.descent()) / 2.0),
                             tick_text(value));
        }
    }

    const FigureContent& m_content;
    const FigureOptions& m_options;
    QPaintDevice& m_device;
    double m_unit;   ///< device units per point
    QSizeF m_page;   ///< device units
};

FigureContent read_content(const PlotView& plot, const FigureOptions& options) {
    FigureContent content;
    content.kind = plot.colorKind();
    content.title = options.title.isEmpty() ? plot.colorName() : options.title;
    const auto [x_label, y_label] = axis_labels_of(options.embedding);
    content.x_label = options.x_label.isEmpty() ? x_label : options.x_label;
    content.y_label = options.y_label.isEmpty() ? y_label : options.y_label;
    const auto& categories = plot.categories();
    const auto& colors = plot.categoryColors();
    for (std::size_t category = 0; category < categories.size(); ++category) {
        if (!plot.categoryVisible(static_cast<int>(category))) continue;  // hidden on screen: not drawn
        content.legend.emplace_back(QString::fromStdString(categories[category]),
                                    category < colors.size() ? to_qcolor(colors[category]) : to_qcolor(k_missing_color));
    }
    content.colormap = plot.colormap();
    std::tie(content.low, content.high) = plot.valueRange();
    content.background = to_qcolor(plot.backgroundColor());
    const bool dark = plot.theme() == PlotView::Theme::Dark;
    content.text = dark ? QColor(230, 230, 230) : QColor(20, 20, 20);
    content.frame = dark ? QColor(170, 170, 170) : QColor(40, 40, 40);
    content.view = plot.plotWorld();  // the screen's framing, without the legend's strip
    content.screen_scale = plot.transform().pixels_per_unit();
    return content;
}

}  // namespace

QString validate(const FigureOptions& options) {
    const auto inches = [](const char* field, double value) -> QString {
        if (!(value >= k_min_inches && value <= k_max_inches))
            return QStringLiteral("FigureOptions::%1 must be in [%2, %3] inches, got %4")
                .arg(QString::fromUtf8(field))
                .arg(k_min_inches)
                .arg(k_max_inches)
                .arg(value);
        return {};
    };
    if (QString error = inches("width_in", options.width_in); !error.isEmpty()) return error;
    if (QString error = inches("height_in", options.height_in); !error.isEmpty()) return error;
    if (options.dpi < k_min_dpi || options.dpi > k_max_dpi)
        return QStringLiteral("FigureOptions::dpi must be in [%1, %2], got %3").arg(k_min_dpi).arg(k_max_dpi).arg(options.dpi);
    const double pixels = options.width_in * options.dpi * options.height_in * options.dpi;
    if (pixels > 400e6)
        return QStringLiteral("FigureOptions: %1 x %2 in at %3 dpi is %4 megapixels (at most 400)")
            .arg(options.width_in)
            .arg(options.height_in)
            .arg(options.dpi)
            .arg(pixels / 1e6, 0, 'f', 0);
    return {};
}

std::optional<FigureFormat> figure_format_of(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QStringLiteral("png")) return FigureFormat::Png;
    if (suffix == QStringLiteral("svg")) return FigureFormat::Svg;
    if (suffix == QStringLiteral("pdf")) return FigureFormat::Pdf;
    return std::nullopt;
}

std::optional<QSizeF> parse_figure_size(const QString& text, QString* error) {
    static const QRegularExpression pattern(
        QStringLiteral("^\\s*(\\d+(?:\\.\\d*)?|\\.\\d+)\\s*[xX]\\s*(\\d+(?:\\.\\d*)?|\\.\\d+)\\s*(in|mm|cm)\\s*$"));
    const auto match = pattern.match(text);
    if (!match.hasMatch()) {
        if (error) *error = QStringLiteral("figure size '%1': expected WxH with a unit, e.g. 6x4in or 180x120mm").arg(text);
        return std::nullopt;
    }
    const QString unit = match.captured(3);
    const double per_inch = unit == QStringLiteral("in") ? 1.0 : unit == QStringLiteral("cm") ? 2.54 : 25.4;
    const QSizeF size(match.captured(1).toDouble() / per_inch, match.captured(2).toDouble() / per_inch);
    if (!(size.width() > 0.0) || !(size.height() > 0.0)) {
        if (error) *error = QStringLiteral("figure size '%1': width and height must be > 0").arg(text);
        return std::nullopt;
    }
    return size;
}

std::pair<QString, QString> axis_labels_of(const QString& embedding) {
    QString base = embedding.startsWith(QStringLiteral("X_")) ? embedding.mid(2) : embedding;
    const QString lower = base.toLower();
    if (lower == QStringLiteral("umap")) base = QStringLiteral("UMAP");
    else if (lower == QStringLiteral("pca")) base = QStringLiteral("PC");
    else if (lower == QStringLiteral("tsne")) base = QStringLiteral("tSNE");
    else if (base.isEmpty()) base = QStringLiteral("dim");
    else base = base.toUpper();
    return {base + QStringLiteral("1"), base + QStringLiteral("2")};
}

bool export_figure(PlotView& plot, const QString& path, const FigureOptions& options, QString* error) {
    const auto fail = [&](const QString& message) {
        if (error) *error = QStringLiteral("%1: %2").arg(path, message);
        return false;
    };
    const auto format = figure_format_of(path);
    if (!format) return fail(QStringLiteral("unknown figure format (use .png, .svg or .pdf)"));
    if (const QString problem = validate(options); !problem.isEmpty()) return fail(problem);
    if (plot.numPoints() == 0) return fail(QStringLiteral("the plot is empty (no embedding shown)"));

    const FigureContent content = read_content(plot, options);
    const QSize page(static_cast<int>(std::lround(options.width_in * options.dpi)),
                     static_cast<int>(std::lround(options.height_in * options.dpi)));
    // The file is rendered in memory, then written by the one atomic writer (temporary
    // file, then rename: nothing is left at `path` on failure). Its checks run first, so
    // an unusable destination fails before the rendering.
    const std::string file_name = QFile::encodeName(path).toStdString();
    const auto write_error = [&](const WriteError& failure) { return fail(QString::fromStdString(failure.reason())); };
    try {
        check_output_path(file_name);
    } catch (const WriteError& failure) {
        return write_error(failure);
    }
    QBuffer file;
    file.open(QIODevice::WriteOnly);

    // Lays out on `device`, renders the point layer at the plot rectangle's pixel size
    // and paints the figure with `painter` (already begun on `device`).
    const auto draw = [&](QPaintDevice& device, QPainter& painter) -> QString {
        const FigurePainter figure(content, options, device);
        FigureLayout layout;
        if (QString problem = figure.layout(layout); !problem.isEmpty()) return problem;
        const double scale = layout.plot.width() / layout.world.width();
        QString layer_error;
        const QImage layer = plot.renderLayerImage(layout.plot.size(), layout.world,
                                                   static_cast<float>(scale / content.screen_scale), &layer_error);
        if (layer.isNull()) return QStringLiteral("cannot render the point layer: %1").arg(layer_error);
        figure.paint(painter, layout, layer);
        return {};
    };

    QString problem;
    switch (*format) {
        case FigureFormat::Png: {
            QImage image(page, QImage::Format_RGB32);
            const int dots_per_meter = static_cast<int>(std::lround(options.dpi / 0.0254));
            image.setDotsPerMeterX(dots_per_meter);  // written as the pHYs chunk
            image.setDotsPerMeterY(dots_per_meter);
            image.fill(content.background);
            {
                QPainter painter(&image);
                problem = draw(image, painter);
            }
            if (problem.isEmpty()) {
                QImageWriter writer(&file, "png");
                if (!writer.write(image)) problem = QStringLiteral("PNG encoding failed: %1").arg(writer.errorString());
            }
            break;
        }
        case FigureFormat::Svg: {
            QSvgGenerator generator;
            generator.setOutputDevice(&file);
            generator.setSize(page);
            generator.setViewBox(QRect(QPoint(0, 0), page));
            generator.setResolution(options.dpi);
            generator.setTitle(content.title);
            generator.setDescription(QStringLiteral("Fathom embedding figure"));
            QPainter painter;
            if (!painter.begin(&generator)) problem = QStringLiteral("cannot start the SVG writer");
            else problem = draw(generator, painter);
            painter.end();
            break;
        }
        case FigureFormat::Pdf: {
            QPdfWriter writer(&file);
            writer.setCreator(QStringLiteral("Fathom"));
            writer.setTitle(content.title);
            writer.setResolution(options.dpi);
            writer.setPageMargins(QMarginsF(0, 0, 0, 0));
            writer.setPageSize(QPageSize(QSizeF(options.width_in, options.height_in), QPageSize::Inch,
                                         QStringLiteral("figure"), QPageSize::ExactMatch));
            QPainter painter;
            if (!painter.begin(&writer)) problem = QStringLiteral("cannot start the PDF writer");
            else problem = draw(writer, painter);
            painter.end();
            break;
        }
    }
    if (!problem.isEmpty()) return fail(problem);
    try {
        const QByteArray& bytes = file.data();
        write_file_atomically(file_name, [&](std::ostream& out) { out.write(bytes.constData(), bytes.size()); });
    } catch (const WriteError& failure) {
        return write_error(failure);
    }
    return true;
}

}  // namespace fathom::ui
