#include "ui/MarkerPlots.hpp"

#include <QBuffer>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QImage>
#include <QImageWriter>
#include <QLabel>
#include <QPageSize>
#include <QPainter>
#include <QPainterPath>
#include <QPdfWriter>
#include <QPushButton>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "core/types/atomic_file.hpp"
#include "ui/ColorMaps.hpp"
#include "ui/JobWatcher.hpp"

namespace fathom::ui {

GroupedGeneStats grouped_gene_stats(const std::vector<std::vector<float>>& gene_values, std::span<const std::int32_t> codes,
                                    std::vector<std::string> groups, std::vector<std::string> genes) {
    if (gene_values.size() != genes.size())
        throw std::invalid_argument("grouped_gene_stats: " + std::to_string(gene_values.size()) + " value columns for " +
                                    std::to_string(genes.size()) + " genes");
    GroupedGeneStats stats;
    stats.groups = std::move(groups);
    stats.genes = std::move(genes);
    const std::size_t num_groups = stats.groups.size(), num_genes = stats.genes.size();
    stats.mean.assign(num_groups * num_genes, 0.0);
    stats.fraction.assign(num_groups * num_genes, 0.0);
    stats.values.assign(num_genes, std::vector<std::vector<float>>(num_groups));
    for (std::size_t gene = 0; gene < num_genes; ++gene) {
        const std::vector<float>& values = gene_values[gene];
        if (values.size() != codes.size())
            throw std::invalid_argument("grouped_gene_stats: gene '" + stats.genes[gene] + "' has " +
                                        std::to_string(values.size()) + " values for " + std::to_string(codes.size()) +
                                        " cells");
        std::vector<double> sum(num_groups, 0.0), expressing(num_groups, 0.0);
        for (std::size_t cell = 0; cell < codes.size(); ++cell) {
            const std::int32_t code = codes[cell];
            if (code < 0 || static_cast<std::size_t>(code) >= num_groups || std::isnan(values[cell])) continue;
            const auto group = static_cast<std::size_t>(code);
            sum[group] += values[cell];
            expressing[group] += values[cell] > 0.0f;
            stats.values[gene][group].push_back(values[cell]);
        }
        for (std::size_t group = 0; group < num_groups; ++group) {
            auto& cells = stats.values[gene][group];
            std::sort(cells.begin(), cells.end());
            const double count = static_cast<double>(cells.size());
            stats.mean[group * num_genes + gene] = count > 0 ? sum[group] / count : std::nan("");
            stats.fraction[group * num_genes + gene] = count > 0 ? expressing[group] / count : 0.0;
        }
    }
    return stats;
}

std::vector<std::string> top_marker_genes(const ObsMarkers& markers, int per_group) {
    std::vector<std::string> genes;
    std::set<std::string> seen;
    for (const MarkerGroup& group : markers.groups)
        for (std::size_t rank = 0; rank < group.genes.size() && static_cast<int>(rank) < per_group; ++rank)
            if (seen.insert(group.genes[rank]).second) genes.push_back(group.genes[rank]);
    return genes;
}

// ---- the figure ---------------------------------------------------------------------------

namespace {

/// Where the parts of the figure go at a given size.
struct Layout {
    double left = 0, top = 0;        ///< grid origin
    double cell_width = 0, cell_height = 0;
    double cell = 0;                 ///< the smaller side: dots and violins scale with it
    QRectF legend;
};

Layout layout_of(const GroupedGeneStats& stats, QSizeF size, const QFontMetricsF& metrics) {
    double label_width = 0, gene_height = 0;
    for (const auto& group : stats.groups)
        label_width = std::max(label_width, metrics.horizontalAdvance(QString::fromStdString(group)));
    for (const auto& gene : stats.genes)
        gene_height = std::max(gene_height, metrics.horizontalAdvance(QString::fromStdString(gene)));
    Layout layout;
    const double legend_width = 130;
    layout.left = label_width + 14;
    layout.top = gene_height + 14 + metrics.height();
    const double columns = std::max<std::size_t>(1, stats.num_genes()), rows = std::max<std::size_t>(1, stats.num_groups());
    const double width = size.width() - layout.left - legend_width - 16, height = size.height() - layout.top - 8;
    layout.cell_width = std::max(4.0, std::min(width / columns, 48.0));
    layout.cell_height = std::max(4.0, std::min(height / rows, 48.0));
    layout.cell = std::min(layout.cell_width, layout.cell_height);
    layout.legend = QRectF(layout.left + layout.cell_width * columns + 16, std::min(layout.top, 24.0), legend_width - 10,
                           size.height() - std::min(layout.top, 24.0));
    return layout;
}

QColor to_qcolor(Rgba8 color) { return QColor(color.r, color.g, color.b); }

}  // namespace

MarkerPlotView::MarkerPlotView(QWidget* parent) : QWidget(parent) {
    setMinimumSize(160, 90);
    setBackgroundRole(QPalette::Base);
    setAutoFillBackground(true);
}

QSize MarkerPlotView::sizeHint() const { return {720, 320}; }

void MarkerPlotView::setStats(GroupedGeneStats stats, const QString& value_label) {
    m_stats = std::move(stats);
    m_value_label = value_label;
    update();
}

void MarkerPlotView::setKind(Kind kind) {
    m_kind = kind;
    update();
}

std::pair<double, double> MarkerPlotView::meanRange() const {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (double mean : m_stats.mean)
        if (std::isfinite(mean)) {
            low = std::min(low, mean);
            high = std::max(high, mean);
        }
    return std::isfinite(low) ? std::pair{low, high} : std::pair{0.0, 0.0};
}

QColor MarkerPlotView::meanColor(std::size_t group, std::size_t gene) const {
    const double mean = m_stats.mean_at(group, gene);
    if (!std::isfinite(mean)) return to_qcolor(k_missing_color);
    const auto [low, high] = meanRange();
    const double t = high > low ? (mean - low) / (high - low) : 0.0;
    return to_qcolor(colormap_color(m_kind == Kind::Dot ? Colormap::Magma : Colormap::Viridis, static_cast<float>(t)));
}

double MarkerPlotView::dotRadius(std::size_t group, std::size_t gene, QSizeF size) const {
    const Layout layout = layout_of(m_stats, size, QFontMetricsF(font()));
    return 0.5 * 0.92 * layout.cell * std::sqrt(std::clamp(m_stats.fraction_at(group, gene), 0.0, 1.0));
}

void MarkerPlotView::render(QPainter& painter, QSizeF size) const {
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing);
    painter.fillRect(QRectF(QPointF(0, 0), size), Qt::white);
    painter.setFont(font());
    const QFontMetricsF metrics(font());
    painter.setPen(Qt::black);
    if (m_stats.num_genes() == 0 || m_stats.num_groups() == 0) {
        painter.drawText(QRectF(QPointF(0, 0), size), Qt::AlignCenter,
                         tr("Compute the markers of a column (Groups of ... vs rest) to plot them"));
        painter.restore();
        return;
    }
    const Layout layout = layout_of(m_stats, size, metrics);
    const double cell = layout.cell;
    // Group labels (rows) and gene labels (columns, rotated).
    for (std::size_t group = 0; group < m_stats.num_groups(); ++group) {
        const QRectF row(0, layout.top + layout.cell_height * group, layout.left - 8, layout.cell_height);
        painter.drawText(row, Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(m_stats.groups[group]));
    }
    for (std::size_t gene = 0; gene < m_stats.num_genes(); ++gene) {
        painter.save();
        painter.translate(layout.left + layout.cell_width * (gene + 0.5) + metrics.ascent() * 0.35, layout.top - 6);
        painter.rotate(-90);
        painter.drawText(QPointF(0, 0), QString::fromStdString(m_stats.genes[gene]));
        painter.restore();
    }
    const QRectF grid(layout.left, layout.top, layout.cell_width * m_stats.num_genes(),
                      layout.cell_height * m_stats.num_groups());
    painter.setPen(QPen(QColor(200, 200, 200), 0.5));
    painter.drawRect(grid);
    for (std::size_t group = 0; group < m_stats.num_groups(); ++group) {
        for (std::size_t gene = 0; gene < m_stats.num_genes(); ++gene) {
            const QRectF box(layout.left + layout.cell_width * gene, layout.top + layout.cell_height * group,
                             layout.cell_width, layout.cell_height);
            switch (m_kind) {
                case Kind::Matrix:
                    painter.fillRect(box, meanColor(group, gene));
                    break;
                case Kind::Dot: {
                    const double radius = dotRadius(group, gene, size);
                    painter.setPen(QPen(QColor(60, 60, 60), 0.4));
                    painter.setBrush(meanColor(group, gene));
                    painter.drawEllipse(box.center(), radius, radius);
                    break;
                }
                case Kind::Violin: {
                    // A kernel density of the group's values (Gaussian, Scott's bandwidth),
                    // drawn vertically over the gene's own value range, width ~ density.
                    const auto& values = m_stats.values[gene][group];
                    if (values.size() < 2) break;
                    const auto& column = m_stats.values[gene];
                    float low = values.front(), high = values.back();
                    for (const auto& other : column)
                        if (!other.empty()) {
                            low = std::min(low, other.front());
                            high = std::max(high, other.back());
                        }
                    if (!(high > low)) break;
                    double mean = 0, squares = 0;
                    for (float value : values) mean += value;
                    mean /= values.size();
                    for (float value : values) squares += (value - mean) * (value - mean);
                    const double sd = std::sqrt(squares / (values.size() - 1));
                    const double bandwidth = std::max(1e-3 * (high - low), 1.06 * sd * std::pow(values.size(), -0.2));
                    constexpr int k_steps = 24;
                    std::vector<double> density(k_steps + 1, 0.0);
                    const double first = values.front(), last = values.back();
                    for (int step = 0; step <= k_steps; ++step) {
                        const double at = first + (last - first) * step / k_steps;
                        for (float value : values) density[step] += std::exp(-0.5 * std::pow((at - value) / bandwidth, 2));
                    }
                    const double peak = *std::max_element(density.begin(), density.end());
                    const auto y_of = [&](double value) { return box.bottom() - 2 - (box.height() - 4) * (value - low) / (high - low); };
                    QPainterPath path;
                    for (int step = 0; step <= k_steps; ++step) {
                        const double at = first + (last - first) * step / k_steps;
                        const double half = 0.45 * box.width() * density[step] / peak;
                        const QPointF point(box.center().x() + half, y_of(at));
                        step == 0 ? path.moveTo(point) : path.lineTo(point);
                    }
                    for (int step = k_steps; step >= 0; --step) {
                        const double at = first + (last - first) * step / k_steps;
                        path.lineTo(box.center().x() - 0.45 * box.width() * density[step] / peak, y_of(at));
                    }
                    path.closeSubpath();
                    painter.setPen(QPen(QColor(60, 60, 60), 0.4));
                    painter.setBrush(meanColor(group, gene));
                    painter.drawPath(path);
                    break;
                }
            }
        }
    }
    // Legend: the colour scale of the means, and for the dot plot the dot sizes.
    painter.setPen(Qt::black);
    QRectF legend = layout.legend;
    painter.drawText(QPointF(legend.left(), legend.top() + metrics.ascent()),
                     m_kind == Kind::Violin ? tr("mean (fill)") : tr("mean"));
    painter.drawText(QPointF(legend.left(), legend.top() + metrics.height() + metrics.ascent()), m_value_label);
    const QRectF bar(legend.left(), legend.top() + 2 * metrics.height() + 4, legend.width() - 10, 10);
    for (int step = 0; step < 64; ++step) {
        const Rgba8 color = colormap_color(m_kind == Kind::Dot ? Colormap::Magma : Colormap::Viridis, step / 63.0f);
        painter.fillRect(QRectF(bar.left() + bar.width() * step / 64, bar.top(), bar.width() / 64 + 0.5, bar.height()),
                         to_qcolor(color));
    }
    const auto [low, high] = meanRange();
    painter.drawText(QPointF(bar.left(), bar.bottom() + metrics.ascent() + 2), QString::number(low, 'g', 3));
    const QString high_text = QString::number(high, 'g', 3);
    painter.drawText(QPointF(bar.right() - metrics.horizontalAdvance(high_text), bar.bottom() + metrics.ascent() + 2),
                     high_text);
    if (m_kind == Kind::Dot) {
        double y = bar.bottom() + metrics.height() * 2 + 8;
        painter.drawText(QPointF(legend.left(), y), tr("fraction expressing"));
        y += 6;
        for (const double fraction : {0.2, 0.4, 0.6, 0.8, 1.0}) {
            const double radius = 0.5 * 0.92 * std::min(cell, 24.0) * std::sqrt(fraction);
            y += std::min(cell, 24.0) * 0.5 + 2;
            painter.setPen(QPen(QColor(60, 60, 60), 0.4));
            painter.setBrush(QColor(150, 150, 150));
            painter.drawEllipse(QPointF(legend.left() + 14, y), radius, radius);
            painter.setPen(Qt::black);
            painter.drawText(QPointF(legend.left() + 34, y + metrics.ascent() * 0.4), QString::number(fraction, 'g', 2));
            y += std::min(cell, 24.0) * 0.5;
        }
    }
    painter.restore();
}

void MarkerPlotView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    render(painter, size());
}

bool MarkerPlotView::exportFigure(const QString& path, QSize size, QString* error) const {
    const auto fail = [&](const QString& message) {
        if (error) *error = QStringLiteral("%1: %2").arg(path, message);
        return false;
    };
    const QString suffix = QFileInfo(path).suffix().toLower();
    QBuffer file;
    file.open(QIODevice::WriteOnly);
    if (suffix == QStringLiteral("png")) {
        QImage image(size, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::white);
        {
            QPainter painter(&image);
            render(painter, size);
        }
        QImageWriter writer(&file, "png");
        if (!writer.write(image)) return fail(QStringLiteral("PNG encoding failed: %1").arg(writer.errorString()));
    } else if (suffix == QStringLiteral("svg")) {
        QSvgGenerator generator;
        generator.setOutputDevice(&file);
        generator.setSize(size);
        generator.setViewBox(QRect(QPoint(0, 0), size));
        generator.setTitle(QStringLiteral("Fathom marker plot"));
        QPainter painter;
        if (!painter.begin(&generator)) return fail(QStringLiteral("cannot start the SVG writer"));
        render(painter, size);
        painter.end();
    } else if (suffix == QStringLiteral("pdf")) {
        QPdfWriter writer(&file);
        writer.setCreator(QStringLiteral("Fathom"));
        writer.setResolution(72);
        writer.setPageMargins(QMarginsF(0, 0, 0, 0));
        writer.setPageSize(QPageSize(QSizeF(size), QPageSize::Point, QStringLiteral("figure"), QPageSize::ExactMatch));
        QPainter painter;
        if (!painter.begin(&writer)) return fail(QStringLiteral("cannot start the PDF writer"));
        render(painter, size);
        painter.end();
    } else {
        return fail(QStringLiteral("unknown figure format '%1' (use .png, .svg or .pdf)").arg(suffix));
    }
    try {
        const QByteArray& bytes = file.data();
        write_file_atomically(path.toStdString(), [&](std::ostream& out) { out.write(bytes.constData(), bytes.size()); });
    } catch (const std::exception& failure) {
        return fail(QString::fromUtf8(failure.what()));
    }
    return true;
}

// ---- the panel ------------------------------------------------------------------------------

MarkerPlotsPanel::MarkerPlotsPanel(EngineAccess engine, JobWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_engine(std::move(engine)), m_watcher(watcher) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    m_kind = new QComboBox(this);
    m_kind->setObjectName(QStringLiteral("markerPlotKind"));
    m_kind->addItem(tr("dot plot"), static_cast<int>(MarkerPlotView::Kind::Dot));
    m_kind->addItem(tr("violin plot"), static_cast<int>(MarkerPlotView::Kind::Violin));
    m_kind->addItem(tr("matrix plot"), static_cast<int>(MarkerPlotView::Kind::Matrix));
    auto* export_button = new QPushButton(tr("Export..."), this);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    bar->addWidget(m_kind);
    bar->addWidget(m_status, 1);
    bar->addWidget(export_button);
    layout->addLayout(bar);
    m_view = new MarkerPlotView(this);
    layout->addWidget(m_view, 1);
    connect(m_kind, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_view->setKind(static_cast<MarkerPlotView::Kind>(m_kind->itemData(index).toInt())); });
    connect(export_button, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export marker plot"), QString(),
                                                          tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
        if (path.isEmpty()) return;
        QString error;
        if (!m_view->exportFigure(path, QSize(std::max(640, m_view->width()), std::max(360, m_view->height())), &error))
            m_status->setText(error);
        else
            m_status->setText(tr("wrote %1").arg(path));
    });
}

void MarkerPlotsPanel::clear() {
    ++m_request;
    m_view->setStats({}, QString());
    m_status->clear();
}

void MarkerPlotsPanel::showMarkers(const ObsMarkers& markers, std::vector<std::int32_t> codes,
                                   std::vector<std::string> categories, int per_group) {
    ++m_request;
    m_layer = markers.layer;
    m_genes = top_marker_genes(markers, per_group);
    m_codes = std::move(codes);
    m_categories = std::move(categories);
    m_values.clear();
    m_status->setText(tr("reading %1 genes...").arg(m_genes.size()));
    fetchNext();
}

void MarkerPlotsPanel::fetchNext() {
    Engine* engine = m_engine();
    if (!engine) return;
    if (m_values.size() == m_genes.size()) {
        try {
            m_view->setStats(grouped_gene_stats(m_values, m_codes, m_categories, m_genes),
                             QString::fromUtf8(value_layer_label(m_layer)));
        } catch (const std::invalid_argument& failure) {
            m_status->setText(QString::fromUtf8(failure.what()));
            emit plotsFailed(QString::fromUtf8(failure.what()));
            return;
        }
        m_status->setText(tr("top markers of each group (%1 genes), %2")
                              .arg(m_genes.size())
                              .arg(QString::fromUtf8(value_layer_label(m_layer))));
        emit plotsReady();
        return;
    }
    const std::uint64_t request = m_request;
    const Pending<GeneValues> pending = engine->gene_values(m_genes[m_values.size()], m_layer);
    m_watcher->watch(pending.handle(), QStringLiteral("marker plot"), [this, pending, request](const JobStatus& status) {
        if (request != m_request) return;
        const auto values = pending.value();
        if (status.state != JobState::Succeeded || !values) {
            const QString message = QString::fromStdString(status.message);
            m_status->setText(tr("marker plot: %1").arg(message));
            emit plotsFailed(message);
            return;
        }
        m_values.push_back(values->values);
        fetchNext();
    });
}

}  // namespace fathom::ui
