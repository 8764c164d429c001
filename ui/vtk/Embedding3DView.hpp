#pragma once
/// The 3-D embedding view (built only with FATHOM_WITH_VTK; the macro FATHOM_HAS_VTK
/// tells the rest of the code it exists): a QOpenGLWidget in which VTK draws the cells
/// through a vtkGenericOpenGLRenderWindow that renders into the widget's own context,
/// with trackball rotation (left drag rotates, right drag or wheel zooms, middle drag pans).
///
/// Colours are not computed here: the view takes the per-cell attributes of the PlotModel
/// that the 2-D PlotView draws too (same colour map, palette, legend toggles, mask and
/// selection), so both views always agree. Cells whose attribute alpha is 0 (hidden by a
/// category toggle or a filter) are not drawn. Axes run from the points' minimum corner
/// along x, y and z, named after the source (UMAP1..3, PC1..3) by a Qt overlay.
///
/// VTK renders only inside paintGL (interaction requests a repaint), into its own
/// framebuffer, which is then blitted into the widget's framebuffer. No VTK header is
/// included here.
#include <QOpenGLWidget>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ui/ColorMaps.hpp"
#include "ui/PlotColoring.hpp"

namespace fathom::ui {

/// 3-D point view of an embedding. All methods are for the GUI thread.
class Embedding3DView : public QOpenGLWidget {
    Q_OBJECT
public:
    explicit Embedding3DView(QWidget* parent = nullptr);
    ~Embedding3DView() override;

    /// Replaces the positions: `xyz` holds num_cells * 3 floats (x0, y0, z0, x1, ...).
    /// With a different number of cells the colours reset to the default colour and the
    /// camera is fitted to the points; with the same number (a new UMAP frame, another
    /// source) the colours are kept, and the camera too unless `fit_camera`.
    void setPositions(std::vector<float> xyz, bool fit_camera = false);
    /// Colours and visibility of every cell, as PlotView::pointAttributes() holds them
    /// (alpha 0 = hidden). Ignored, returning false, when the count differs from numPoints().
    bool setAttributes(std::span<const PointAttribute> attributes);
    /// Name of what is shown (e.g. "X_umap"); the dock puts it in its title.
    void setSourceName(const QString& name);
    QString sourceName() const;
    /// The axis names shown ("UMAP1", "UMAP2", "UMAP3"; empty without points).
    QStringList axisNames() const;
    /// Where the x, y and z axes end on the widget (their names are drawn there), from
    /// the current camera; empty without points.
    std::vector<QPointF> axisLabelPositions() const;
    std::int64_t numPoints() const;
    /// Cells drawn (alpha != 0).
    std::int64_t visiblePoints() const;

    void setBackgroundColor(Rgba8 color);
    Rgba8 backgroundColor() const;
    /// Point size in pixels (default 3).
    void setPointSize(float pixels);
    float pointSize() const;
    /// Fits the camera to the points, looking down the z axis.
    void resetCamera();
    /// Camera position and focal point in data coordinates (tests check rotation).
    std::array<double, 3> cameraPosition() const;
    std::array<double, 3> cameraFocalPoint() const;
    /// VTK renders done so far (paintGL calls that redrew the scene).
    std::int64_t renderCount() const;
    /// Room for a useful view when the dock first opens.
    QSize sizeHint() const override;

signals:
    /// A frame was painted.
    void frameRendered();

protected:
    void initializeGL() override;
    void resizeGL(int width, int height) override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void enterEvent(QEnterEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    struct Private;
    std::unique_ptr<Private> d;

    void releaseGl();
    void syncScene();
    void updateAxes();
};

}  // namespace fathom::ui
