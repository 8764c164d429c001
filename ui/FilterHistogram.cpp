#include "ui/FilterHistogram.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/PlotColoring.hpp"

namespace fathom::ui {

namespace {

constexpr double k_margin = 4.0;
constexpr double k_axis_height = 13.0;
constexpr double k_min_drag_px = 3.0;

}  // namespace

HistogramCounts histogram_counts(std::span<const float> values, std::span<const std::uint8_t> mask, float low,
                                 float high, int num_bins) {
    HistogramCounts counts;
    const auto bins = static_cast<std::size_t>(std::max(1, num_bins));
    counts.all.assign(bins, 0);
    counts.filtered.assign(bins, 0);
    const bool masked = mask.size() == values.size();
    const double width = static_cast<double>(high) - static_cast<double>(low);
    for (std::size_t cell = 0; cell < values.size(); ++cell) {
        const float value = values[cell];
        if (!(value >= low && value <= high)) continue;  // NaN fails both
        std::size_t bin = 0;
        if (width > 0.0)
            bin = std::min(bins - 1, static_cast<std::size_t>((static_cast<double>(value) - low) / width *
                                                              static_cast<double>(bins)));
        ++counts.all[bin];
        if (masked && mask[cell]) ++counts.filtered[bin];
    }
    return counts;
}

FilterHistogram::FilterHistogram(QWidget* parent) : QWidget(parent) {
    setMouseTracking(false);
    setCursor(Qt::CrossCursor);
    setToolTip(tr("Drag across the histogram to keep the cells in that range"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QSize FilterHistogram::sizeHint() const { return {220, 64}; }
QSize FilterHistogram::minimumSizeHint() const { return {100, 48}; }

void FilterHistogram::setValues(std::shared_ptr<const std::vector<float>> values) {
    if (values == m_values) return;
    m_values = std::move(values);
    const auto [low, high] = m_values ? finite_range(*m_values) : std::pair<float, float>{0.0f, 0.0f};
    m_low = low;
    m_high = high;
    recount();
}

void FilterHistogram::setMask(std::shared_ptr<const std::vector<std::uint8_t>> mask) {
    if (mask == m_mask) return;
    m_mask = std::move(mask);
    recount();
}

void FilterHistogram::setAcceptedRange(float low, float high) {
    m_accepted_low = low;
    m_accepted_high = high;
    update();
}

bool FilterHistogram::hasValues() const { return m_values && !m_values->empty(); }
std::pair<float, float> FilterHistogram::axisRange() const { return {m_low, m_high}; }
const HistogramCounts& FilterHistogram::counts() const { return m_counts; }

void FilterHistogram::recount() {
    if (m_values)
        m_counts = histogram_counts(*m_values, m_mask ? std::span<const std::uint8_t>(*m_mask) : std::span<const std::uint8_t>(),
                                    m_low, m_high, k_num_bins);
    else
        m_counts = {};
    update();
}

QRectF FilterHistogram::plotRect() const {
    return QRectF(k_margin, k_margin, std::max(1.0, width() - 2.0 * k_margin),
                  std::max(1.0, height() - 2.0 * k_margin - k_axis_height));
}

double FilterHistogram::xOfValue(float value) const {
    const QRectF plot = plotRect();
    if (!(m_high > m_low)) return plot.left();
    return plot.left() + (static_cast<double>(value) - m_low) / (static_cast<double>(m_high) - m_low) * plot.width();
}

float FilterHistogram::valueAtX(double x) const {
    const QRectF plot = plotRect();
    const double t = std::clamp((x - plot.left()) / plot.width(), 0.0, 1.0);
    return static_cast<float>(m_low + t * (static_cast<double>(m_high) - m_low));
}

void FilterHistogram::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    const QRectF plot = plotRect();
    if (!hasValues()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(rect(), Qt::AlignCenter, tr("loading values..."));
        return;
    }
    // The accepted range, shaded.
    if (m_accepted_low <= m_accepted_high) {
        const double left = std::clamp(xOfValue(m_accepted_low), plot.left(), plot.right());
        const double right = std::clamp(xOfValue(m_accepted_high), plot.left(), plot.right());
        painter.fillRect(QRectF(left, plot.top(), std::max(1.0, right - left), plot.height()), QColor(255, 200, 60, 60));
    }
    std::int64_t largest = 1;
    for (const std::int64_t count : m_counts.all) largest = std::max(largest, count);
    const double scale = std::log1p(static_cast<double>(largest));
    const auto bins = static_cast<double>(m_counts.all.size());
    const double bar = plot.width() / std::max(1.0, bins);
    const auto draw_bars = [&](const std::vector<std::int64_t>& counts, const QColor& color) {
        for (std::size_t bin = 0; bin < counts.size(); ++bin) {
            if (counts[bin] == 0) continue;
            const double height = plot.height() * std::log1p(static_cast<double>(counts[bin])) / scale;
            painter.fillRect(QRectF(plot.left() + bar * static_cast<double>(bin), plot.bottom() - height,
                                    std::max(1.0, bar - 1.0), height),
                             color);
        }
    };
    draw_bars(m_counts.all, QColor(150, 150, 160));
    draw_bars(m_counts.filtered, QColor(40, 120, 220));
    // Axis labels: the range.
    painter.setPen(palette().color(QPalette::Text));
    QFont font = painter.font();
    font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.8));
    painter.setFont(font);
    const QRectF axis(plot.left(), plot.bottom() + 1.0, plot.width(), k_axis_height);
    painter.drawText(axis, Qt::AlignLeft | Qt::AlignVCenter, QString::number(m_low, 'g', 3));
    painter.drawText(axis, Qt::AlignRight | Qt::AlignVCenter, QString::number(m_high, 'g', 3));
    if (m_dragging) {
        const double left = std::min(m_drag_from, m_drag_to), right = std::max(m_drag_from, m_drag_to);
        painter.setPen(QColor(40, 120, 220));
        painter.fillRect(QRectF(left, plot.top(), right - left, plot.height()), QColor(40, 120, 220, 50));
        painter.drawRect(QRectF(left, plot.top(), right - left, plot.height()));
    }
}

void FilterHistogram::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || !hasValues()) return;
    m_dragging = true;
    m_drag_from = m_drag_to = event->position().x();
    update();
}

void FilterHistogram::mouseMoveEvent(QMouseEvent* event) {
    if (!m_dragging) return;
    m_drag_to = event->position().x();
    update();
}

void FilterHistogram::mouseReleaseEvent(QMouseEvent* event) {
    if (!m_dragging || event->button() != Qt::LeftButton) return;
    m_dragging = false;
    m_drag_to = event->position().x();
    update();
    if (std::abs(m_drag_to - m_drag_from) < k_min_drag_px) return;
    const float low = valueAtX(std::min(m_drag_from, m_drag_to));
    const float high = valueAtX(std::max(m_drag_from, m_drag_to));
    emit rangeSelected(low, high);
}

}  // namespace fathom::ui
