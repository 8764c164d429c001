#pragma once
/// A small histogram of one gene's values over all cells, with the cells of the current
/// filter drawn over it, the range its rule accepts shaded, and a brush: dragging across
/// it selects a value range (crossfilter style) that the filter panel turns into a
/// "between" rule.
#include <QWidget>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace fathom::ui {

/// Bin counts of `values` over [low, high] in `num_bins` equal bins (the last bin
/// includes `high`; NaN and values outside are not counted): `all` counts every cell,
/// `filtered` the cells with mask[cell] != 0 (empty mask: `filtered` is all zeros).
struct HistogramCounts {
    std::vector<std::int64_t> all;
    std::vector<std::int64_t> filtered;
};
HistogramCounts histogram_counts(std::span<const float> values, std::span<const std::uint8_t> mask, float low,
                                 float high, int num_bins);

/// The histogram widget. Heights are log-scaled (log1p of the count), since most cells
/// of a gene are usually 0.
class FilterHistogram : public QWidget {
    Q_OBJECT
public:
    static constexpr int k_num_bins = 48;

    explicit FilterHistogram(QWidget* parent = nullptr);

    /// The gene's value for every cell; the axis spans their finite minimum to maximum.
    void setValues(std::shared_ptr<const std::vector<float>> values);
    /// The filter's cells (one flag per cell; empty or null = no filter result).
    void setMask(std::shared_ptr<const std::vector<std::uint8_t>> mask);
    /// The value range the rule accepts, shaded (low > high: none).
    void setAcceptedRange(float low, float high);
    bool hasValues() const;
    /// The axis range [low, high] (equal when all values are equal).
    std::pair<float, float> axisRange() const;
    const HistogramCounts& counts() const;
    /// Widget x of a value and the value at a widget x (the brush's mapping).
    double xOfValue(float value) const;
    float valueAtX(double x) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    /// The user dragged across the histogram: the values under the brush, low <= high.
    void rangeSelected(float low, float high);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    void recount();
    QRectF plotRect() const;

    std::shared_ptr<const std::vector<float>> m_values;
    std::shared_ptr<const std::vector<std::uint8_t>> m_mask;
    float m_low = 0.0f, m_high = 0.0f;
    float m_accepted_low = 1.0f, m_accepted_high = 0.0f;
    HistogramCounts m_counts;
    bool m_dragging = false;
    double m_drag_from = 0.0, m_drag_to = 0.0;
};

}  // namespace fathom::ui
