#pragma once
/// A legend drawn with QPainter beside a view (the 3-D view's dock): the colouring's name,
/// then one swatch, name and cell count per category (a hidden category faded; a click
/// toggles it, as the 2-D plot's legend does), or a colour bar with its range. It observes
/// a PlotModel and takes no width while the colouring is uniform. Its width follows the
/// longest name, so that nothing is cut and nothing covers the view's points.
#include <QRectF>
#include <QWidget>
#include <vector>

class QEvent;
class QShowEvent;

namespace fathom::ui {

class PlotModel;

/// Legend of a PlotModel's colouring. GUI thread only.
class PlotLegend : public QWidget {
    Q_OBJECT
public:
    explicit PlotLegend(PlotModel* model, QWidget* parent = nullptr);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    /// Where category `category` is drawn (widget coordinates); empty when it is not.
    QRectF entryRect(int category) const;
    /// The lines drawn ("louvain", "B  (342)", ...; a colour bar: name, high, low).
    QStringList lines() const;

signals:
    /// The legend's size hint changed (another colouring, or a font once it is shown).
    void sizeHintChanged();

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void changeEvent(QEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    /// Where each category is drawn, from the current font.
    std::vector<QRectF> entries() const;

    PlotModel* m_model = nullptr;
};

}  // namespace fathom::ui
