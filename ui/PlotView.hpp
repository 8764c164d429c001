#pragma once
/// The embedding plot widget: the view transform (pan, zoom, fit beside the legend), the
/// selection tools, hover picking, the Dear ImGui overlay (legend with category toggles,
/// colour bar with range control, hover readout, frame time and visible points) and
/// figure export. What each cell shows lives in its PlotModel (ui/PlotModel.hpp: colouring,
/// mask, selection, value layer), which the 3-D view observes too; the GL buffers, uploads,
/// draw order and density image live in its PlotRenderer (ui/PlotRenderer.hpp).
///
/// - Recolouring or filtering rewrites only the attribute buffer, never the positions;
///   a new draw order (file, seeded random, by value; selected cells last) rewrites the
///   positions once. Picking and selection work on cell ids (the spatial grid), whatever
///   the order on the GPU.
/// - The finished point (or density) layer is cached in an offscreen framebuffer, so
///   overlay-only frames (hover, legend) do not redraw the cells.
/// - Hover picking uses a uniform grid built once per embedding (SpatialGrid).
/// - Lasso and rectangle tools select cells through the same grid (left drag; the middle
///   button still pans, the wheel zooms); the selection is drawn on top and the other
///   cells dimmed, through the attribute buffer and the draw order only.
/// - The legend keeps a strip on the right: no cell is drawn or picked under it.
#include <QImage>
#include <QOpenGLWidget>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ui/CellSelection.hpp"
#include "ui/ColorMaps.hpp"
#include "ui/PlotColoring.hpp"
#include "ui/PlotModel.hpp"
#include "ui/PlotRenderer.hpp"
#include "ui/ViewTransform.hpp"

namespace fathom::ui {

/// The embedding plot widget. All methods are for the GUI thread.
class PlotView : public QOpenGLWidget {
    Q_OBJECT
public:
    /// Background and overlay style.
    enum class Theme { Dark, Light };
    /// Density (aggregation) rendering: never, always, or when many points overlap.
    enum class DensityMode { Off, On, Auto };
    /// What the current colouring is.
    using ColorKind = PlotModel::ColorKind;
    /// What setPositions() does to the view.
    enum class FitPolicy { Keep, Fit, FitUnlessUserMoved };
    /// What a left-button drag does: pan, or draw a lasso / rectangle selection.
    enum class Tool { Pan, Lasso, Rectangle };

    /// Upload and draw counters (tests and the benchmark read them).
    using Stats = PlotStats;

    explicit PlotView(QWidget* parent = nullptr);
    ~PlotView() override;

    /// The surface format PlotView needs (OpenGL 3.3 core); set it as the default
    /// format before creating QApplication so that every context matches.
    static QSurfaceFormat surfaceFormat();

    // ---- data -----------------------------------------------------------------------
    /// Replaces the positions: `xy` holds num_cells * 2 floats (x0, y0, x1, y1, ...).
    /// With the same number of cells (a new UMAP frame) the current colouring is kept;
    /// with a different number it resets to uniform. Uploaded in batches from the next frame.
    void setPositions(std::vector<float> xy, FitPolicy fit = FitPolicy::Fit);
    /// Positions from the first two columns of a cells x k row-major matrix.
    void setPositions(const float* matrix, std::int64_t rows, std::int64_t cols, FitPolicy fit = FitPolicy::Fit);
    /// A line shown in the middle of the canvas while there are no points (e.g. "run the
    /// pipeline to compute an embedding"); empty = none.
    void setEmptyHint(const QString& text);
    /// The hint as shown now ("" while there are points).
    QString emptyHint() const;
    /// Cell names shown by the hover readout (obs index); may be null.
    void setCellNames(std::shared_ptr<const std::vector<std::string>> names);
    /// A categorical annotation the hover readout always shows (e.g. the cluster while
    /// colouring by a gene); codes index `categories`, -1 = missing. Empty name = none.
    void setHoverCategories(const QString& name, std::vector<std::int32_t> codes, std::vector<std::string> categories);
    std::int64_t numPoints() const;
    const std::vector<float>& positions() const;

    // ---- colouring (rewrites the attribute buffer only) -----------------------------
    /// What each cell shows (colouring, mask, selection, value layer); the 3-D view
    /// observes the same model. The setters below forward to it.
    PlotModel* model() const;
    /// One colour for every cell (the theme's default when `color` is null).
    void setUniformColor(const Rgba8* color = nullptr);
    /// Colour by categories: codes[cell] indexes `categories` (-1 = missing); one colour
    /// per category. Every category starts visible.
    void setCategorical(const QString& name, std::vector<std::int32_t> codes, std::vector<std::string> categories,
                        std::vector<Rgba8> colors);
    /// Colour by a continuous value (NaN = missing); the range starts at the finite
    /// minimum and maximum.
    void setContinuous(const QString& name, std::vector<float> values, Colormap colormap = Colormap::Viridis);
    /// Colour range of continuous colouring (values outside are clamped).
    void setValueRange(float low, float high);
    void resetValueRange();
    std::pair<float, float> valueRange() const;
    std::pair<float, float> dataRange() const;
    void setColormap(Colormap colormap);
    Colormap colormap() const;
    ColorKind colorKind() const;
    QString colorName() const;
    const std::vector<std::string>& categories() const;
    const std::vector<Rgba8>& categoryColors() const;
    /// Legend toggle: hides or shows the cells of one category.
    void setCategoryVisible(int category, bool visible);
    bool categoryVisible(int category) const;
    /// Shows only cells with mask[cell] != 0 (e.g. a marker-gene filter); empty = all.
    /// With MaskStyle::Dim the other cells stay drawn, faded towards the background and
    /// beneath the matching ones.
    void setCellMask(std::vector<std::uint8_t> mask);
    const std::vector<std::uint8_t>& cellMask() const;
    /// What the cell mask does to the cells outside it.
    using MaskStyle = PlotModel::MaskStyle;
    void setMaskStyle(MaskStyle style);
    MaskStyle maskStyle() const;
    /// Cells drawn (not hidden by category or mask).
    std::int64_t visiblePoints() const;
    /// Per-cell colour and scaled value as drawn (alpha 0 = hidden by category or mask),
    /// one per point; the 3-D view shows the same colouring from these.
    const std::vector<PointAttribute>& pointAttributes() const;

    // ---- selection ------------------------------------------------------------------
    void setTool(Tool tool);
    Tool tool() const;
    /// How a gesture without modifiers combines with the selection (Shift while pressing
    /// adds, Alt or Ctrl subtracts, whatever this is).
    void setSelectionMode(SelectionMode mode);
    SelectionMode selectionMode() const;
    /// Highlights `cells` (drawn last, the other cells dimmed); null or empty = none.
    /// Rewrites the attributes, and the positions once in the new draw order. Cleared
    /// when the number of cells changes.
    void setSelection(SharedCellSet cells);
    /// The highlighted cells (never null).
    SharedCellSet selection() const;
    /// Visible cells inside a polygon in world units, ascending (from the spatial grid);
    /// cells in the legend's strip (not drawn there) are not selected.
    CellSet cellsInWorldPolygon(std::span<const Vec2> polygon) const;
    /// Visible cells inside a polygon in widget coordinates.
    CellSet cellsInWidgetPolygon(const QPolygonF& polygon) const;

    // ---- draw order -----------------------------------------------------------------
    void setDrawOrder(DrawOrder order, std::uint64_t seed = 0);
    DrawOrder drawOrder() const;

    // ---- view -----------------------------------------------------------------------
    /// Fits the view to the bulk of the points (fitBounds(): a few far outliers stay off
    /// screen rather than squeezing the cloud into a corner); the default view, R or a
    /// double click.
    void resetView();
    /// Fits the view to every point (dataBounds()); A.
    void fitAll();
    /// Bounds of every finite point.
    WorldRect dataBounds() const;
    /// What resetView() fits: the 0.5-99.5 % quantiles per axis widened by 10 % of their
    /// span (robust_extent), within dataBounds().
    WorldRect fitBounds() const;
    /// The world rectangle where cells are drawn: the visible world less the legend's
    /// strip (what an exported figure frames).
    WorldRect plotWorld() const;
    const ViewTransform& transform() const;
    void setTransform(const ViewTransform& transform);
    /// True once the user panned or zoomed (or setTransform chose the view) since the last fit.
    bool viewMovedByUser() const;
    /// Fixed point size in pixels (turns automatic size off).
    void setPointSize(float pixels);
    /// Point size from the density of cells on screen.
    void setAutoPointSize(bool automatic);
    bool autoPointSize() const;
    /// The size the next frame uses.
    float effectivePointSize() const;
    void setOpacity(float opacity);
    float opacity() const;
    void setTheme(Theme theme);
    Theme theme() const;
    Rgba8 backgroundColor() const;
    void setDensityMode(DensityMode mode);
    DensityMode densityMode() const;
    /// Whether the next frame draws the density image.
    bool densityActive() const;
    void setOverlayVisible(bool visible);
    bool overlayVisible() const;

    // ---- upload ---------------------------------------------------------------------
    /// Points per position upload batch (default 262144).
    void setBatchSize(std::int64_t points);
    std::int64_t batchSize() const;
    /// Upload time budget per frame in ms: batches continue while under it (at least
    /// one batch per frame). 0 = exactly one batch per frame.
    void setUploadBudgetMs(double milliseconds);
    /// Points whose current positions are on the GPU.
    std::int64_t uploadedPoints() const;
    bool uploadComplete() const;

    // ---- hover, legend, stats -------------------------------------------------------
    /// Cell under the cursor (-1 when none).
    std::int64_t hoveredCell() const;
    /// The hover readout as shown ("barcode", category or value).
    QString hoverText() const;
    /// Cell nearest to a widget position within `radius_px` among visible cells, or -1.
    std::int64_t pickCell(QPointF position, double radius_px) const;
    /// Where the legend drew category `category` in the last frame (widget coordinates);
    /// empty when it was not drawn.
    QRectF legendEntryRect(int category) const;
    /// The legend (or colour bar) window as drawn in the last frame; empty when none. The
    /// view is fitted left of it, so that it hides no points until the user pans or zooms.
    QRectF legendRect() const;
    /// Width of the strip on the right that the legend keeps free of cells (0 without one).
    double legendStrip() const;
    /// The stats text (cells, frame time; bottom left) as drawn in the last frame; empty when
    /// none. It stays left of legendStrip(), its lines elided when too long.
    QRectF statsRect() const;
    const Stats& stats() const;
    /// Renders one frame synchronously into the widget's framebuffer and waits for the GL
    /// to finish it; `redraw_scene` forces the point/density layer to be redrawn as a view
    /// change would. Returns the wall time in ms (for the benchmark).
    double renderFrameForBenchmark(bool redraw_scene);
    /// Renders the point (or density) layer alone, off-screen, into a `pixels` image
    /// showing the world rectangle `world` (its aspect should match `pixels`; the scale
    /// is isotropic, from the width). Colours, visibility, draw order, opacity, theme and
    /// the points-or-density choice are the on-screen ones; point sizes are the on-screen
    /// size times `point_scale` (image pixels per screen pixel). Independent of the
    /// widget's size; the widget's view is untouched. Needs the widget's GL context (shown
    /// once): returns a null image with `error` set otherwise, or when `pixels` exceeds the
    /// GL limits.
    QImage renderLayerImage(QSize pixels, const WorldRect& world, float point_scale, QString* error = nullptr);

signals:
    /// The hovered cell changed (-1 = none).
    void hoveredCellChanged(qint64 cell);
    /// A legend toggle changed a category's visibility.
    void categoryVisibilityChanged(int category, bool visible);
    /// The per-cell attributes changed (colouring, range, legend toggle or mask).
    void attributesChanged();
    /// The colour range changed (overlay control or setValueRange).
    void valueRangeChanged(float low, float high);
    /// Pan, zoom or reset.
    void viewChanged();
    /// A frame was painted.
    void frameRendered();
    /// A lasso or rectangle gesture ended: the visible cells it enclosed (ascending) and
    /// how they combine with the selection. PlotView does not change its selection itself.
    void selectionGesture(const fathom::ui::CellSet& hits, fathom::ui::SelectionMode mode);

protected:
    void initializeGL() override;
    void resizeGL(int width, int height) override;
    void paintGL() override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void keyReleaseEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    struct Private;
    std::unique_ptr<Private> d;

    void releaseGl();
    void onAttributesChanged();
    void rebuildDrawOrder();
    void markSceneDirty(bool reaggregate);
    void uploadPending();
    SceneRequest sceneRequest() const;
    void renderScene();
    void buildOverlay();
    void updateHover(QPointF position);
    void finishSelectionGesture();
};

}  // namespace fathom::ui
