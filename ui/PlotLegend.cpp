#include "ui/PlotLegend.hpp"

#include <QLinearGradient>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QShowEvent>
#include <algorithm>

#include "ui/PlotModel.hpp"

namespace fathom::ui {

namespace {

constexpr int k_margin = 8;
constexpr int k_swatch = 12;
constexpr int k_gap = 6;
constexpr int k_bar_width = 14;
constexpr int k_bar_height = 160;
constexpr int k_max_width = 300;  // longer names are elided (the full name is the tooltip)

QColor to_qcolor(Rgba8 color, int alpha = 255) { return QColor(color.r, color.g, color.b, alpha); }

QString value_text(float value) { return QString::number(static_cast<double>(value), 'g', 4); }

}  // namespace

PlotLegend::PlotLegend(PlotModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
    setObjectName(QStringLiteral("plotLegend"));
    setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Preferred);
    connect(m_model, &PlotModel::attributesChanged, this, &PlotLegend::refresh);
    connect(m_model, &PlotModel::colormapChanged, this, &PlotLegend::refresh);
    refresh();
}

QStringList PlotLegend::lines() const {
    QStringList out;
    if (m_model->colorKind() == PlotModel::ColorKind::Uniform) return out;
    out << m_model->colorName();
    if (m_model->colorKind() == PlotModel::ColorKind::Categorical) {
        const QLocale locale(QLocale::English);
        const auto& names = m_model->categories();
        const auto& counts = m_model->categoryCounts();
        for (std::size_t category = 0; category < names.size(); ++category)
            out << QStringLiteral("%1  (%2)").arg(QString::fromStdString(names[category]),
                                                  locale.toString(static_cast<qlonglong>(
                                                      category < counts.size() ? counts[category] : 0)));
    } else {
        const auto [low, high] = m_model->valueRange();
        out << value_text(high) << value_text(low);
    }
    return out;
}

QSize PlotLegend::sizeHint() const {
    const QStringList text = lines();
    if (text.isEmpty()) return {0, 0};
    const QFontMetrics metrics(font());
    QFont bold = font();
    bold.setBold(true);
    int width = QFontMetrics(bold).horizontalAdvance(text.front());
    const bool categorical = m_model->colorKind() == PlotModel::ColorKind::Categorical;
    for (int line = 1; line < text.size(); ++line)
        width = std::max(width, (categorical ? k_swatch : k_bar_width) + k_gap + metrics.horizontalAdvance(text[line]));
    const int row = metrics.height() + 4;
    const int height = categorical ? row * static_cast<int>(text.size()) : row + k_bar_height;
    // (+ 2: text widths are rounded; a name must not be elided at its own hint.)
    return {std::min(width + 2, k_max_width) + 2 * k_margin, height + 2 * k_margin};
}

QSize PlotLegend::minimumSizeHint() const { return {sizeHint().width(), 0}; }

std::vector<QRectF> PlotLegend::entries() const {
    std::vector<QRectF> out;
    if (m_model->colorKind() != PlotModel::ColorKind::Categorical) return out;
    const int row = QFontMetrics(font()).height() + 4;
    const int entry_width = std::max(width(), sizeHint().width()) - 2 * k_margin;
    for (std::size_t category = 0; category < m_model->categories().size(); ++category)
        out.emplace_back(k_margin, k_margin + row * static_cast<int>(category + 1), entry_width, row);
    return out;
}

QRectF PlotLegend::entryRect(int category) const {
    const std::vector<QRectF> all = entries();
    if (category < 0 || static_cast<std::size_t>(category) >= all.size()) return {};
    return all[static_cast<std::size_t>(category)];
}

void PlotLegend::refresh() {
    const bool shown = m_model->colorKind() != PlotModel::ColorKind::Uniform;
    setFixedWidth(shown ? sizeHint().width() : 0);
    updateGeometry();
    update();
    emit sizeHintChanged();
}

void PlotLegend::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) refresh();
}

void PlotLegend::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    refresh();  // the font it is shown with may differ from the one it was made with
}

void PlotLegend::paintEvent(QPaintEvent*) {
    const QStringList text = lines();
    if (text.isEmpty()) return;
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QFontMetrics metrics(font());
    const int row = metrics.height() + 4;
    const int text_width = width() - 2 * k_margin;
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.drawText(QRect(k_margin, k_margin, text_width, row), Qt::AlignLeft | Qt::AlignVCenter,
                     QFontMetrics(bold).elidedText(text.front(), Qt::ElideRight, text_width));
    painter.setFont(font());
    if (m_model->colorKind() == PlotModel::ColorKind::Categorical) {
        const auto& colors = m_model->categoryColors();
        const std::vector<QRectF> rects = entries();
        for (std::size_t category = 0; category < rects.size(); ++category) {
            const QRectF entry = rects[category];
            const bool visible = m_model->categoryVisible(static_cast<int>(category));
            const Rgba8 color = category < colors.size() ? colors[category] : k_missing_color;
            const QRectF swatch(entry.left(), entry.center().y() - k_swatch / 2.0, k_swatch, k_swatch);
            painter.fillRect(swatch, to_qcolor(color, visible ? 255 : 60));
            QColor ink = palette().color(QPalette::WindowText);
            if (!visible) ink.setAlpha(110);
            painter.setPen(ink);
            const int left = k_swatch + k_gap;
            painter.drawText(entry.adjusted(left, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                             metrics.elidedText(text[static_cast<int>(category) + 1], Qt::ElideRight,
                                                static_cast<int>(entry.width()) - left));
        }
        return;
    }
    // Colour bar: high at the top, as the 2-D plot's.
    const QRect bar(k_margin, k_margin + row, k_bar_width, k_bar_height);
    QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
    constexpr int stops = 16;
    for (int stop = 0; stop <= stops; ++stop) {
        const float t = static_cast<float>(stop) / stops;
        gradient.setColorAt(t, to_qcolor(colormap_color(m_model->colormap(), t)));
    }
    painter.fillRect(bar, gradient);
    const int left = bar.right() + k_gap;
    painter.drawText(QRect(left, bar.top(), text_width - left, row), Qt::AlignLeft | Qt::AlignTop, text[1]);
    painter.drawText(QRect(left, bar.bottom() - row, text_width - left, row), Qt::AlignLeft | Qt::AlignBottom, text[2]);
}

void PlotLegend::mousePressEvent(QMouseEvent* event) {
    const std::vector<QRectF> rects = entries();
    for (std::size_t category = 0; category < rects.size(); ++category)
        if (rects[category].contains(event->position())) {
            const int index = static_cast<int>(category);
            m_model->setCategoryVisible(index, !m_model->categoryVisible(index));
            event->accept();
            return;
        }
    QWidget::mousePressEvent(event);
}

}  // namespace fathom::ui
