#include "ui/PlotView.hpp"

#include <imgui.h>

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QSurfaceFormat>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ui/ImGuiLayer.hpp"
#include "ui/PlotRenderer.hpp"
#include "ui/SpatialGrid.hpp"

namespace fathom::ui {

namespace {

constexpr Rgba8 k_dark_background{27, 29, 34, 255};
constexpr Rgba8 k_light_background{255, 255, 255, 255};
constexpr Rgba8 k_dark_uniform{150, 170, 200, 255};
constexpr Rgba8 k_light_uniform{60, 100, 160, 255};

// Auto density: switch when at least this many cells are on screen and there are at
// least this many cells per viewport pixel (points then mostly overdraw each other).
constexpr double k_auto_density_min_points = 200000.0;
constexpr double k_auto_density_points_per_pixel = 0.25;
// After a zoom the density image is resampled until zooming pauses this long.
constexpr int k_density_refresh_ms = 150;
// A lasso records a new vertex once the pointer moved this far (pixels).
constexpr double k_lasso_step_px = 2.0;
/// `text` shortened (ending "..") so that the current ImGui font draws it at most `width`
/// px wide; unchanged when it fits.
std::string elide_to_width(std::string text, float width) {
    if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
    while (!text.empty()) {
        text.pop_back();
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
        if (ImGui::CalcTextSize((text + "..").c_str()).x <= width) break;
    }
    return text + "..";
}

/// Content width of the colour bar's legend (bar, tick labels, range controls), px.
constexpr float k_color_bar_legend_width = 84.0f;

ImVec4 to_imvec4(Rgba8 color, float alpha = 1.0f) {
    return {color.r / 255.0f, color.g / 255.0f, color.b / 255.0f, alpha};
}

QString format_count(std::int64_t value) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(value)); }

}  // namespace

struct PlotView::Private {
    // ---- CPU data ----
    std::vector<float> positions;  // num_points * 2
    std::int64_t num_points = 0;
    WorldRect bounds;      ///< every finite point
    WorldRect fit_bounds;  ///< the bulk of the points (robust_extent): what the default view fits
    std::uint64_t data_generation = 0;
    std::shared_ptr<const std::vector<std::string>> names;
    QString hover_name;
    std::vector<std::int32_t> hover_codes;
    std::vector<std::string> hover_categories;

    PlotModel* model = nullptr;  // owned by the widget (a child QObject)

    PlotRenderer renderer;  // GL buffers, uploads, draw order, scene target, density image

    mutable SpatialGrid grid;
    mutable bool grid_dirty = true;

    // ---- view ----
    ViewTransform view;
    bool fit_pending = true;
    bool fit_everything = false;  ///< the pending or last fit shows every point, not only the bulk
    double legend_reserved_px = 0.0;  ///< right strip kept free of points for the legend (last frame's width)
    QRectF legend_rect;               ///< the legend as drawn in the last frame (widget coordinates)
    QRectF stats_rect;                ///< the stats text (bottom left) as drawn in the last frame
    QString empty_hint;  ///< shown on the canvas while there are no points
    bool user_moved = false;
    float point_size = 3.0f;
    bool auto_point_size = true;
    float opacity = 1.0f;
    Theme theme = Theme::Dark;
    DensityMode density_mode = DensityMode::Auto;
    bool overlay_visible = true;
    std::int64_t batch_size = 262144;
    double upload_budget_ms = 6.0;

    // ---- GL ----
    QMetaObject::Connection context_connection;
    bool gl_ready = false;
    QString gl_error;
    bool scene_dirty = true;
    QTimer density_refresh_timer;  // re-aggregation after a zoom pauses
    bool density_refresh_due = false;

    // ---- overlay and interaction ----
    ImGuiLayer overlay;
    std::vector<QRectF> legend_rects;
    std::int64_t hovered = -1;
    QPointF mouse_position;
    bool dragging = false;
    QPointF drag_last;
    Tool tool = Tool::Pan;
    SelectionMode selection_mode = SelectionMode::Replace;
    bool gesture_active = false;          // a lasso / rectangle is being drawn
    SelectionMode gesture_mode = SelectionMode::Replace;
    QPolygonF gesture_points;             // widget coordinates; a rectangle keeps its two corners

    QElapsedTimer frame_clock;
    double last_frame_ms = -1.0;

    Rgba8 background() const { return theme == Theme::Dark ? k_dark_background : k_light_background; }
    Rgba8 uniform_color() const { return theme == Theme::Dark ? k_dark_uniform : k_light_uniform; }

    // Estimated cells on screen and the screen area (px^2) their bounds cover.
    std::pair<double, double> on_screen() const {
        const std::int64_t visible_count = model->visibleCount();
        if (bounds.empty() || visible_count == 0) return {0.0, 0.0};
        const WorldRect shown = bounds.intersected(view.visible_world());
        if (shown.empty()) return {0.0, 0.0};
        const double full_area = bounds.width() * bounds.height();
        const double fraction = full_area > 0.0 ? (shown.width() * shown.height()) / full_area : 1.0;
        const double scale = view.pixels_per_unit();
        const double screen_area = std::max(1.0, shown.width() * scale * std::max(shown.height() * scale, 1.0));
        return {static_cast<double>(visible_count) * std::clamp(fraction, 0.0, 1.0), screen_area};
    }
};

PlotView::PlotView(QWidget* parent) : QOpenGLWidget(parent), d(std::make_unique<Private>()) {
    setFormat(surfaceFormat());
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(120, 120);
    d->model = new PlotModel(this);
    d->model->setPalette(d->background(), d->uniform_color());
    connect(d->model, &PlotModel::attributesChanged, this, &PlotView::onAttributesChanged);
    connect(d->model, &PlotModel::orderKeysChanged, this, &PlotView::rebuildDrawOrder);
    connect(d->model, &PlotModel::valueRangeChanged, this, &PlotView::valueRangeChanged);
    connect(d->model, &PlotModel::categoryVisibilityChanged, this, &PlotView::categoryVisibilityChanged);
    // The density image of a uniform colouring maps counts through the colour map.
    connect(d->model, &PlotModel::colormapChanged, this, [this] { markSceneDirty(true); });
    d->frame_clock.start();
    d->density_refresh_timer.setSingleShot(true);
    d->density_refresh_timer.setInterval(k_density_refresh_ms);
    connect(&d->density_refresh_timer, &QTimer::timeout, this, [this] {
        d->density_refresh_due = true;
        markSceneDirty(false);
    });
}

PlotView::~PlotView() {
    if (d->gl_ready) {
        makeCurrent();
        releaseGl();
        doneCurrent();
    }
}

QSurfaceFormat PlotView::surfaceFormat() {
    QSurfaceFormat format = QSurfaceFormat::defaultFormat();
    if (QOpenGLContext::openGLModuleType() == QOpenGLContext::LibGL) {
        format.setRenderableType(QSurfaceFormat::OpenGL);
        format.setVersion(3, 3);
        format.setProfile(QSurfaceFormat::CoreProfile);
    } else {
        format.setRenderableType(QSurfaceFormat::OpenGLES);
        format.setVersion(3, 0);
    }
    format.setDepthBufferSize(0);
    format.setStencilBufferSize(0);
    format.setSamples(0);
    return format;
}

// ---- data ---------------------------------------------------------------------------

void PlotView::setPositions(std::vector<float> xy, FitPolicy fit) {
    const std::int64_t count = static_cast<std::int64_t>(xy.size() / 2);
    xy.resize(static_cast<std::size_t>(count) * 2);
    const bool same_cells = count == d->num_points;
    d->positions = std::move(xy);
    d->num_points = count;
    ++d->data_generation;
    d->bounds = point_bounds(d->positions);
    d->fit_bounds = robust_extent(d->positions, d->bounds);
    d->grid_dirty = true;
    d->hovered = -1;
    if (!same_cells) {
        d->names.reset();
        d->hover_name.clear();
        d->hover_codes.clear();
        d->hover_categories.clear();
        d->model->setNumCells(count);
    }
    if (fit == FitPolicy::Fit || (fit == FitPolicy::FitUnlessUserMoved && !d->user_moved)) {
        d->fit_pending = true;
        if (fit == FitPolicy::Fit) d->fit_everything = false;
        d->user_moved = false;
    }
    markSceneDirty(true);
}

void PlotView::setEmptyHint(const QString& text) {
    d->empty_hint = text;
    update();
}

QString PlotView::emptyHint() const { return d->num_points == 0 ? d->empty_hint : QString(); }

void PlotView::setPositions(const float* matrix, std::int64_t rows, std::int64_t cols, FitPolicy fit) {
    std::vector<float> xy(static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)) * 2, 0.0f);
    if (matrix && cols >= 1) {
        for (std::int64_t row = 0; row < rows; ++row) {
            xy[2 * row] = matrix[row * cols];
            xy[2 * row + 1] = cols >= 2 ? matrix[row * cols + 1] : 0.0f;
        }
    }
    setPositions(std::move(xy), fit);
}

void PlotView::setCellNames(std::shared_ptr<const std::vector<std::string>> names) { d->names = std::move(names); }

void PlotView::setHoverCategories(const QString& name, std::vector<std::int32_t> codes,
                                  std::vector<std::string> categories) {
    d->hover_name = name;
    d->hover_codes = std::move(codes);
    d->hover_categories = std::move(categories);
}
std::int64_t PlotView::numPoints() const { return d->num_points; }
const std::vector<float>& PlotView::positions() const { return d->positions; }

// ---- colouring ------------------------------------------------------------------------

PlotModel* PlotView::model() const { return d->model; }
void PlotView::setUniformColor(const Rgba8* color) { d->model->setUniformColor(color); }
void PlotView::setCategorical(const QString& name, std::vector<std::int32_t> codes, std::vector<std::string> categories,
                              std::vector<Rgba8> colors) {
    d->model->setCategorical(name, std::move(codes), std::move(categories), std::move(colors));
}
void PlotView::setContinuous(const QString& name, std::vector<float> values, Colormap colormap) {
    d->model->setContinuous(name, std::move(values), colormap);
}
void PlotView::setValueRange(float low, float high) { d->model->setValueRange(low, high); }
void PlotView::resetValueRange() { d->model->resetValueRange(); }
std::pair<float, float> PlotView::valueRange() const { return d->model->valueRange(); }
std::pair<float, float> PlotView::dataRange() const { return d->model->dataRange(); }
void PlotView::setColormap(Colormap colormap) { d->model->setColormap(colormap); }
Colormap PlotView::colormap() const { return d->model->colormap(); }
PlotView::ColorKind PlotView::colorKind() const { return d->model->colorKind(); }
QString PlotView::colorName() const { return d->model->colorName(); }
const std::vector<std::string>& PlotView::categories() const { return d->model->categories(); }
const std::vector<Rgba8>& PlotView::categoryColors() const { return d->model->categoryColors(); }
void PlotView::setCategoryVisible(int category, bool visible) { d->model->setCategoryVisible(category, visible); }
bool PlotView::categoryVisible(int category) const { return d->model->categoryVisible(category); }
void PlotView::setCellMask(std::vector<std::uint8_t> mask) { d->model->setCellMask(std::move(mask)); }
const std::vector<std::uint8_t>& PlotView::cellMask() const { return d->model->cellMask(); }
void PlotView::setMaskStyle(MaskStyle style) { d->model->setMaskStyle(style); }
PlotView::MaskStyle PlotView::maskStyle() const { return d->model->maskStyle(); }
std::int64_t PlotView::visiblePoints() const { return d->model->visibleCount(); }
const std::vector<PointAttribute>& PlotView::pointAttributes() const { return d->model->attributes(); }

void PlotView::onAttributesChanged() {
    d->renderer.markAttributesDirty();
    const auto& attributes = d->model->attributes();
    if (d->hovered >= 0 && (d->hovered >= static_cast<std::int64_t>(attributes.size()) || attributes[d->hovered].color.a == 0)) {
        d->hovered = -1;
        emit hoveredCellChanged(-1);
    }
    markSceneDirty(true);
    emit attributesChanged();
}

// ---- selection -------------------------------------------------------------------------

void PlotView::setTool(Tool tool) {
    d->tool = tool;
    d->gesture_active = false;
    setCursor(tool == Tool::Pan ? Qt::ArrowCursor : Qt::CrossCursor);
    update();
}

PlotView::Tool PlotView::tool() const { return d->tool; }
void PlotView::setSelectionMode(SelectionMode mode) { d->selection_mode = mode; }
SelectionMode PlotView::selectionMode() const { return d->selection_mode; }

void PlotView::setSelection(SharedCellSet cells) { d->model->setSelection(std::move(cells)); }

SharedCellSet PlotView::selection() const { return d->model->selection(); }

CellSet PlotView::cellsInWorldPolygon(std::span<const Vec2> polygon) const {
    if (d->num_points == 0) return {};
    if (d->grid_dirty) {
        d->grid.build(d->positions);
        d->grid_dirty = false;
    }
    // Cells in the legend's strip are not drawn, so a gesture does not select them either.
    const double plot_right = legendStrip() > 0.0 ? width() - legendStrip() : HUGE_VAL;
    return d->grid.points_in_polygon(polygon, [this, plot_right](std::int64_t cell) {
        if (static_cast<std::size_t>(cell) >= d->model->attributes().size() || d->model->attributes()[cell].color.a == 0)
            return false;
        return d->view.world_to_screen({d->positions[2 * cell], d->positions[2 * cell + 1]}).x < plot_right;
    });
}

CellSet PlotView::cellsInWidgetPolygon(const QPolygonF& polygon) const {
    std::vector<Vec2> world;
    world.reserve(static_cast<std::size_t>(polygon.size()));
    for (const QPointF& point : polygon) world.push_back(d->view.screen_to_world({point.x(), point.y()}));
    return cellsInWorldPolygon(world);
}

void PlotView::finishSelectionGesture() {
    d->gesture_active = false;
    QPolygonF polygon = d->gesture_points;
    if (d->tool == Tool::Rectangle && polygon.size() >= 2) {
        const QRectF rect = QRectF(polygon.front(), polygon.back()).normalized();
        polygon = QPolygonF(rect);
        polygon.removeLast();  // QPolygonF(QRectF) repeats the first corner
    }
    d->gesture_points.clear();
    // A click (no area) selects nothing: with Replace it clears the selection.
    const CellSet hits = polygon.size() >= 3 ? cellsInWidgetPolygon(polygon) : CellSet{};
    emit selectionGesture(hits, d->gesture_mode);
    update();
}

// ---- draw order -----------------------------------------------------------------------

void PlotView::setDrawOrder(DrawOrder order, std::uint64_t seed) {
    if (order == d->renderer.drawOrder() && seed == d->renderer.drawOrderSeed()) return;
    d->renderer.setDrawOrder(order, seed);
    rebuildDrawOrder();
}

DrawOrder PlotView::drawOrder() const { return d->renderer.drawOrder(); }

void PlotView::rebuildDrawOrder() {
    if (d->renderer.rebuildDrawOrder(*d->model, d->num_points)) markSceneDirty(false);
}

// ---- view -----------------------------------------------------------------------------

void PlotView::resetView() {
    d->fit_pending = true;
    d->fit_everything = false;
    d->user_moved = false;
    markSceneDirty(false);
    emit viewChanged();
}

void PlotView::fitAll() {
    d->fit_pending = true;
    d->fit_everything = true;
    d->user_moved = false;
    markSceneDirty(false);
    emit viewChanged();
}

const ViewTransform& PlotView::transform() const { return d->view; }

void PlotView::setTransform(const ViewTransform& transform) {
    d->view = transform;
    d->view.set_viewport(width(), height());
    d->fit_pending = false;
    d->user_moved = true;  // an explicit view (a restored session): no refit for the legend
    markSceneDirty(false);
    emit viewChanged();
}

bool PlotView::viewMovedByUser() const { return d->user_moved; }

WorldRect PlotView::dataBounds() const { return d->bounds; }

WorldRect PlotView::fitBounds() const { return d->bounds.empty() ? d->bounds : d->fit_bounds; }

WorldRect PlotView::plotWorld() const {
    WorldRect world = d->view.visible_world();
    const double strip = std::clamp(legendStrip(), 0.0, static_cast<double>(d->view.width()) - 1.0);
    world.max_x -= strip / d->view.pixels_per_unit();
    return world;
}

void PlotView::setPointSize(float pixels) {
    d->point_size = std::clamp(pixels, 1.0f, 64.0f);
    d->auto_point_size = false;
    markSceneDirty(false);
}

void PlotView::setAutoPointSize(bool automatic) {
    d->auto_point_size = automatic;
    markSceneDirty(false);
}

bool PlotView::autoPointSize() const { return d->auto_point_size; }

float PlotView::effectivePointSize() const {
    if (!d->auto_point_size) return d->point_size;
    const auto [cells, area] = d->on_screen();
    if (cells <= 0.0) return 3.0f;
    // About 0.6 of the spacing the cells would have if spread evenly over their area.
    return static_cast<float>(std::clamp(0.6 * std::sqrt(area / cells), 1.0, 8.0));
}

void PlotView::setOpacity(float opacity) {
    d->opacity = std::clamp(opacity, 0.02f, 1.0f);
    markSceneDirty(false);
}

float PlotView::opacity() const { return d->opacity; }

void PlotView::setTheme(Theme theme) {
    if (theme == d->theme) return;
    d->theme = theme;
    d->overlay.set_light_style(theme == Theme::Light);
    d->model->setPalette(d->background(), d->uniform_color());
    markSceneDirty(true);  // the density image is mixed over the background
}

PlotView::Theme PlotView::theme() const { return d->theme; }
Rgba8 PlotView::backgroundColor() const { return d->background(); }

void PlotView::setDensityMode(DensityMode mode) {
    d->density_mode = mode;
    markSceneDirty(true);
}

PlotView::DensityMode PlotView::densityMode() const { return d->density_mode; }

bool PlotView::densityActive() const {
    switch (d->density_mode) {
        case DensityMode::Off: return false;
        case DensityMode::On: return true;
        case DensityMode::Auto: {
            const auto [cells, area] = d->on_screen();
            (void)area;
            const double viewport = static_cast<double>(d->view.width()) * d->view.height();
            return cells >= k_auto_density_min_points && cells >= k_auto_density_points_per_pixel * viewport;
        }
    }
    return false;
}

void PlotView::setOverlayVisible(bool visible) {
    d->overlay_visible = visible;
    markSceneDirty(false);  // the legend's strip comes and goes with the overlay
}

bool PlotView::overlayVisible() const { return d->overlay_visible; }

void PlotView::setBatchSize(std::int64_t points) { d->batch_size = std::max<std::int64_t>(points, 1); }
std::int64_t PlotView::batchSize() const { return d->batch_size; }
void PlotView::setUploadBudgetMs(double milliseconds) { d->upload_budget_ms = std::max(0.0, milliseconds); }
std::int64_t PlotView::uploadedPoints() const { return d->renderer.uploaded(d->data_generation); }
bool PlotView::uploadComplete() const {
    return d->gl_ready && d->renderer.holds(d->data_generation) && d->renderer.uploaded(d->data_generation) == d->num_points;
}

std::int64_t PlotView::hoveredCell() const { return d->hovered; }

QString PlotView::hoverText() const {
    const std::int64_t cell = d->hovered;
    if (cell < 0 || cell >= d->num_points) return {};
    QString text = d->names && static_cast<std::size_t>(cell) < d->names->size()
                       ? QString::fromStdString((*d->names)[cell])
                       : QStringLiteral("cell %1").arg(cell);
    if (d->model->colorKind() == ColorKind::Categorical) {
        const std::int32_t code = d->model->codes()[cell];
        const QString category = code >= 0 && static_cast<std::size_t>(code) < d->model->categories().size()
                                     ? QString::fromStdString(d->model->categories()[code])
                                     : QStringLiteral("NA");
        text += QStringLiteral("\n%1: %2").arg(d->model->colorName(), category);
    } else if (d->model->colorKind() == ColorKind::Continuous) {
        const float value = d->model->values()[cell];
        text += QStringLiteral("\n%1: %2").arg(d->model->colorName(),
                                               value == value ? QString::number(value, 'g', 4) : QStringLiteral("NA"));
    }
    if (!d->hover_name.isEmpty() && d->hover_name != d->model->colorName() && static_cast<std::size_t>(cell) < d->hover_codes.size()) {
        const std::int32_t code = d->hover_codes[cell];
        text += QStringLiteral("\n%1: %2").arg(d->hover_name, code >= 0 && static_cast<std::size_t>(code) < d->hover_categories.size()
                                                                  ? QString::fromStdString(d->hover_categories[code])
                                                                  : QStringLiteral("NA"));
    }
    return text;
}

std::int64_t PlotView::pickCell(QPointF position, double radius_px) const {
    if (d->num_points == 0) return -1;
    if (d->grid_dirty) {
        d->grid.build(d->positions);
        d->grid_dirty = false;
    }
    const Vec2 world = d->view.screen_to_world({position.x(), position.y()});
    const double radius = radius_px / d->view.pixels_per_unit();
    // Cells in the legend's strip are not drawn, so they are not picked either.
    const double plot_right = legendStrip() > 0.0 ? width() - legendStrip() : HUGE_VAL;
    return d->grid.nearest(world, radius, [this, plot_right](std::int64_t cell) {
        const auto& attributes = d->model->attributes();
        if (static_cast<std::size_t>(cell) >= attributes.size() || attributes[cell].color.a == 0) return false;
        return d->view.world_to_screen({d->positions[2 * cell], d->positions[2 * cell + 1]}).x < plot_right;
    });
}

QRectF PlotView::legendRect() const { return d->legend_rect; }

QRectF PlotView::statsRect() const { return d->num_points > 0 ? d->stats_rect : QRectF(); }

double PlotView::legendStrip() const { return d->overlay_visible ? d->legend_reserved_px : 0.0; }

QRectF PlotView::legendEntryRect(int category) const {
    if (category < 0 || static_cast<std::size_t>(category) >= d->legend_rects.size()) return {};
    return d->legend_rects[category];
}

const PlotView::Stats& PlotView::stats() const { return d->renderer.stats(); }

void PlotView::markSceneDirty(bool reaggregate) {
    d->scene_dirty = true;
    if (reaggregate) d->renderer.markDensityDirty();
    update();
}

// ---- GL -------------------------------------------------------------------------------

void PlotView::initializeGL() {
    if (d->gl_ready) releaseGl();
    disconnect(d->context_connection);
    d->context_connection = connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, [this] {
        makeCurrent();
        releaseGl();
        doneCurrent();
    });
    QString error;
    if (!d->renderer.initialize(context(), &error) ||
        !d->overlay.initialize_gl(context()->extraFunctions(), context()->isOpenGLES(), &error)) {
        d->gl_error = error;
        qWarning("PlotView: %s", qPrintable(error));
        d->renderer.release();
        return;
    }
    d->overlay.set_light_style(d->theme == Theme::Light);
    d->gl_ready = true;
    markSceneDirty(true);
}

void PlotView::releaseGl() {
    d->renderer.release();
    d->overlay.release_gl();
    d->gl_ready = false;
}

void PlotView::resizeGL(int width, int height) {
    d->view.set_viewport(width, height);
    // A view the user did not move follows the widget's size (a dock opened or closed).
    if (!d->user_moved) d->fit_pending = true;
    markSceneDirty(false);
}

void PlotView::uploadPending() {
    // The density image is binned on the CPU from the cell-order data: while it is shown,
    // recolourings and reorders wait until the points are drawn again.
    if (d->renderer.upload(d->positions, d->data_generation, d->model->attributes(), densityActive(), d->batch_size,
                           d->upload_budget_ms))
        d->scene_dirty = true;  // the point layer changed (the density image is binned from the CPU data)
}

SceneRequest PlotView::sceneRequest() const {
    SceneRequest request;
    const qreal ratio = devicePixelRatioF();
    request.size = QSize(std::max(1, static_cast<int>(std::lround(width() * ratio))),
                         std::max(1, static_cast<int>(std::lround(height() * ratio))));
    request.view = d->view;
    request.ratio = ratio;
    request.point_px = effectivePointSize() * static_cast<float>(ratio);
    request.opacity = d->opacity;
    request.density = densityActive();
    request.background = d->background();
    request.reserved_right_px = legendStrip() * ratio;  // no cell under the legend
    return request;
}

void PlotView::renderScene() {
    bool resampled = false;
    d->renderer.renderScene(sceneRequest(), d->positions, d->model->attributes(), d->model->colorKind(),
                            d->model->colormap(), d->density_refresh_due, &resampled);
    d->density_refresh_due = false;
    // A zoom showed the density image resampled: bin it again once zooming pauses.
    if (resampled) d->density_refresh_timer.start();
    d->scene_dirty = false;
}

void PlotView::paintGL() {
    QElapsedTimer paint_timer;
    paint_timer.start();
    const double now_ms = static_cast<double>(d->frame_clock.nsecsElapsed()) * 1e-6;
    const double since_last = d->last_frame_ms >= 0.0 ? now_ms - d->last_frame_ms : 0.0;
    d->last_frame_ms = now_ms;
    PlotStats& stats = d->renderer.stats();
    if (since_last > 0.0 && since_last < 1000.0)
        stats.frame_interval_ms = stats.frame_interval_ms > 0.0 ? 0.8 * stats.frame_interval_ms + 0.2 * since_last : since_last;
    else
        stats.frame_interval_ms = 0.0;
    ++stats.frames;

    QOpenGLExtraFunctions* gl = context() ? context()->extraFunctions() : nullptr;
    const GLuint target = defaultFramebufferObject();
    if (!d->gl_ready) {
        if (gl) {
            gl->glClearColor(0.5f, 0.1f, 0.1f, 1.0f);
            gl->glClear(GL_COLOR_BUFFER_BIT);
        }
        return;
    }
    d->view.set_viewport(width(), height());
    if (d->fit_pending && !d->bounds.empty()) {
        // The legend sits to the right of the points, not over them.
        d->view.fit_left_of(d->fit_everything ? d->bounds : fitBounds(), d->legend_reserved_px);
        d->fit_pending = false;
        d->scene_dirty = true;
    }
    uploadPending();

    // The overlay is built first: a legend click changes the attributes of this frame.
    if (d->overlay_visible) {
        d->overlay.new_frame(size(), devicePixelRatioF(), since_last > 0.0 ? since_last * 1e-3 : 1.0 / 60.0);
        buildOverlay();
        uploadPending();
    }
    if (d->scene_dirty || d->renderer.sceneSize().isEmpty()) renderScene();

    d->renderer.blitScene(target);
    if (d->overlay_visible) d->overlay.render(d->renderer.sceneSize());

    stats.last_paint_ms = static_cast<double>(paint_timer.nsecsElapsed()) * 1e-6;
    // Keep frames coming while batches remain or queued clicks wait for their next frame.
    if (d->renderer.uploaded(d->data_generation) < d->num_points || d->overlay.has_pending_input()) update();
    emit frameRendered();
}

double PlotView::renderFrameForBenchmark(bool redraw_scene) {
    makeCurrent();
    if (redraw_scene) markSceneDirty(true);
    QElapsedTimer timer;
    timer.start();
    QOpenGLExtraFunctions* gl = context() ? context()->extraFunctions() : nullptr;
    if (gl) gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
    paintGL();
    if (gl) gl->glFinish();
    const double elapsed = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
    doneCurrent();
    return elapsed;
}

QImage PlotView::renderLayerImage(QSize pixels, const WorldRect& world, float point_scale, QString* error) {
    const auto fail = [&](const QString& message) {
        if (error) *error = message;
        return QImage();
    };
    if (pixels.width() < 1 || pixels.height() < 1) return fail(QStringLiteral("empty image size"));
    if (world.empty() || !(world.width() > 0.0)) return fail(QStringLiteral("empty world rectangle"));
    if (!d->gl_ready || !context())
        return fail(d->gl_error.isEmpty() ? QStringLiteral("the plot has no OpenGL context yet (it was never shown)")
                                          : d->gl_error);
    makeCurrent();
    QOpenGLExtraFunctions* gl = context()->extraFunctions();
    GLint max_texture = 0, max_viewport[2] = {0, 0};
    gl->glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_texture);
    gl->glGetIntegerv(GL_MAX_VIEWPORT_DIMS, max_viewport);
    const int limit = std::min<int>(max_texture, std::min(max_viewport[0], max_viewport[1]));
    const int density_side = static_cast<int>(std::ceil(std::max(pixels.width(), pixels.height()) * (1.0 + 2.0 * k_density_margin)));
    const bool density = densityActive();
    if (pixels.width() > limit || pixels.height() > limit || (density && density_side > limit)) {
        doneCurrent();
        return fail(QStringLiteral("%1 x %2 pixels exceed this OpenGL's limit of %3 per side; lower the size or DPI")
                        .arg(pixels.width())
                        .arg(pixels.height())
                        .arg(density ? static_cast<int>(limit / (1.0 + 2.0 * k_density_margin)) : limit));
    }
    // Every position on the GPU first (uploads are otherwise spread over frames).
    d->renderer.upload(d->positions, d->data_generation, d->model->attributes(), density, d->batch_size, 1e12);

    // The image's own view: the world rectangle at the image's size, device px = image px.
    SceneRequest request;
    request.size = pixels;
    request.view.set_viewport(pixels.width(), pixels.height());
    request.view.set_center({(world.min_x + world.max_x) / 2.0, (world.min_y + world.max_y) / 2.0});
    request.view.set_pixels_per_unit(pixels.width() / world.width());
    request.ratio = 1.0;
    request.point_px = effectivePointSize() * point_scale;
    request.opacity = d->opacity;
    request.density = density;
    request.background = d->background();
    const QImage image =
        d->renderer.renderImage(request, d->positions, d->model->attributes(), d->model->colorKind(), d->model->colormap());
    gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
    markSceneDirty(true);
    doneCurrent();
    // GL rows run bottom-up; the layer is opaque (the background is part of it).
    return image.mirrored().convertToFormat(QImage::Format_RGB32);
}

// ---- overlay --------------------------------------------------------------------------

void PlotView::buildOverlay() {
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                   ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings |
                                   ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav |
                                   ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoTitleBar;
    const float margin = 8.0f;
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    d->legend_rects.assign(d->model->categories().size(), QRectF());

    if (d->model->colorKind() != ColorKind::Uniform) {
        ImGui::SetNextWindowPos(ImVec2(display.x - margin, margin), ImGuiCond_Always, ImVec2(1.0f, 0.0f));
        ImGui::SetNextWindowSizeConstraints(ImVec2(0.0f, 0.0f), ImVec2(display.x * 0.5f, display.y - 4.0f * margin));
        ImGui::SetNextWindowBgAlpha(0.80f);
        if (ImGui::Begin("##legend", nullptr, flags)) {
            // An auto-sized window is laid out off-screen on its first frame: its item
            // rectangles are only meaningful from the next frame on.
            const bool settling = ImGui::IsWindowAppearing();
            if (settling) update();
            {
                const std::string name = d->model->colorName().toStdString();
                if (d->model->colorKind() == ColorKind::Categorical) {
                    ImGui::TextUnformatted(name.c_str());
                } else {
                    // The colour bar's legend is narrow: the gene or column on its own line
                    // (elided when too long, the full name on hover), then what follows it
                    // (the value layer, "(log-normalised counts)") wrapped to the bar's width.
                    const std::size_t split = name.find(" (");
                    const std::string head = name.substr(0, split);
                    const std::string shown = elide_to_width(head, k_color_bar_legend_width);
                    ImGui::TextUnformatted(shown.c_str());
                    if (shown != head && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", name.c_str());
                    if (split != std::string::npos) {
                        ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + k_color_bar_legend_width);
                        ImGui::TextUnformatted(name.c_str() + split + 1);
                        ImGui::PopTextWrapPos();
                    }
                }
            }
            ImGui::Separator();
            if (d->model->colorKind() == ColorKind::Categorical) {
                const float swatch = ImGui::GetTextLineHeight();
                bool any_hidden = false;
                for (std::size_t category = 0; category < d->model->categories().size(); ++category) {
                    const bool visible = d->model->categoryVisible(static_cast<int>(category));
                    any_hidden |= !visible;
                    ImGui::PushID(static_cast<int>(category));
                    ImGui::ColorButton("##swatch", to_imvec4(d->model->categoryColors()[category], visible ? 1.0f : 0.25f),
                                       ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoPicker |
                                           ImGuiColorEditFlags_NoDragDrop,
                                       ImVec2(swatch, swatch));
                    ImGui::SameLine();
                    if (!visible) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
                    const std::string label = d->model->categories()[category] + "  (" +
                                              format_count(d->model->categoryCounts()[category]).toStdString() + ")";
                    const bool clicked = ImGui::Selectable(label.c_str(), false);
                    if (!visible) ImGui::PopStyleColor();
                    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
                    if (!settling) d->legend_rects[category] = QRectF(QPointF(min.x, min.y), QPointF(max.x, max.y));
                    ImGui::PopID();
                    if (clicked) setCategoryVisible(static_cast<int>(category), !visible);
                }
                if (any_hidden && ImGui::SmallButton("show all")) {
                    for (std::size_t category = 0; category < d->model->categories().size(); ++category)
                        setCategoryVisible(static_cast<int>(category), true);
                }
            } else {
                // A vertical colour bar with its ticks beside it: the legend (and so the
                // strip kept free of cells) is only as wide as the bar, its labels and the
                // range controls under it.
                ImDrawList* draw = ImGui::GetWindowDrawList();
                const ImVec2 origin = ImGui::GetCursorScreenPos();
                const float content_width = k_color_bar_legend_width;
                const float bar_width = 14.0f;
                const float bar_height = std::clamp(display.y * 0.3f, 60.0f, 160.0f);
                const int segments = 64;
                for (int segment = 0; segment < segments; ++segment) {
                    // Top = high end of the range.
                    const Rgba8 top = colormap_color(d->model->colormap(), 1.0f - segment / static_cast<float>(segments));
                    const Rgba8 bottom = colormap_color(d->model->colormap(), 1.0f - (segment + 1) / static_cast<float>(segments));
                    const ImU32 top_color = ImGui::ColorConvertFloat4ToU32(to_imvec4(top));
                    const ImU32 bottom_color = ImGui::ColorConvertFloat4ToU32(to_imvec4(bottom));
                    draw->AddRectFilledMultiColor(
                        ImVec2(origin.x, origin.y + bar_height * segment / segments),
                        ImVec2(origin.x + bar_width, origin.y + bar_height * (segment + 1) / segments), top_color,
                        top_color, bottom_color, bottom_color);
                }
                const float low_value = d->model->valueRange().first, high_value = d->model->valueRange().second;
                const ImU32 text_color = ImGui::GetColorU32(ImGuiCol_Text);
                const float line = ImGui::GetTextLineHeight();
                for (int tick = 0; tick <= 2; ++tick) {
                    const float fraction = tick / 2.0f;  // 0 = top
                    const float y = origin.y + bar_height * fraction;
                    draw->AddLine(ImVec2(origin.x + bar_width, y), ImVec2(origin.x + bar_width + 4.0f, y), text_color);
                    char label[32];
                    std::snprintf(label, sizeof label, "%.3g", static_cast<double>(high_value + (low_value - high_value) * fraction));
                    const float label_y = std::clamp(y - line * 0.5f, origin.y, origin.y + bar_height - line);
                    draw->AddText(ImVec2(origin.x + bar_width + 6.0f, label_y), text_color, label);
                }
                ImGui::Dummy(ImVec2(content_width, bar_height));
                float low = low_value, high = high_value;
                const float speed = std::max(1e-6f, (d->model->dataRange().second - d->model->dataRange().first) / 200.0f);
                ImGui::SetNextItemWidth(content_width);
                if (ImGui::DragFloatRange2("##range", &low, &high, speed, d->model->dataRange().first, d->model->dataRange().second, "%.3g", "%.3g"))
                    setValueRange(low, high);
                ImGui::SetNextItemWidth(content_width);
                if (ImGui::BeginCombo("##colormap", colormap_name(d->model->colormap()))) {
                    for (Colormap colormap : k_all_colormaps)
                        if (ImGui::Selectable(colormap_name(colormap), colormap == d->model->colormap())) setColormap(colormap);
                    ImGui::EndCombo();
                }
                if (ImGui::SmallButton("reset")) resetValueRange();
            }
            const ImVec2 position = ImGui::GetWindowPos(), extent = ImGui::GetWindowSize();
            if (!settling) d->legend_rect = QRectF(position.x, position.y, extent.x, extent.y);
        }
        ImGui::End();
    }
    const double wanted = d->model->colorKind() == ColorKind::Uniform || d->legend_rect.isEmpty()
                              ? 0.0
                              : d->legend_rect.width() + 2.0 * margin;
    if (d->model->colorKind() == ColorKind::Uniform) d->legend_rect = QRectF();
    if (std::abs(wanted - d->legend_reserved_px) > 1.0) {
        // A legend of another width: refit unless the user moved the view.
        d->legend_reserved_px = wanted;
        if (!d->user_moved) {
            d->fit_pending = true;
            update();
        }
    }

    if (d->num_points == 0 && !d->empty_hint.isEmpty()) {
        // Nothing to draw: say what would put something here.
        ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
        ImGui::SetNextWindowBgAlpha(0.80f);
        if (ImGui::Begin("##empty", nullptr, flags | ImGuiWindowFlags_NoInputs))
            ImGui::TextUnformatted(d->empty_hint.toUtf8().constData());
        ImGui::End();
    }

    // Frame time and visible points (nothing while there are no points).
    if (d->num_points > 0) {
        // Inside the plot area left of the legend's strip: a line too long for it is elided,
        // so the text never runs under the legend.
        const float padding = ImGui::GetStyle().WindowPadding.x;
        const float text_width =
            std::max(24.0f, display.x - static_cast<float>(legendStrip()) - 2.0f * margin - 2.0f * padding);
        ImGui::SetNextWindowPos(ImVec2(margin, display.y - margin), ImGuiCond_Always, ImVec2(0.0f, 1.0f));
        ImGui::SetNextWindowBgAlpha(0.65f);
        if (ImGui::Begin("##stats", nullptr, flags | ImGuiWindowFlags_NoInputs)) {
            const auto line = [&](const char* format, auto... args) {
                char text[256];
                std::snprintf(text, sizeof text, format, args...);
                ImGui::TextUnformatted(elide_to_width(text, text_width).c_str());
            };
            const PlotStats& stats = d->renderer.stats();
            const double frame_ms = stats.frame_interval_ms > 0.0 ? stats.frame_interval_ms : stats.last_paint_ms;
            line("%s / %s cells  |  frame %.1f ms  |  %s", format_count(d->model->visibleCount()).toUtf8().constData(),
                 format_count(d->num_points).toUtf8().constData(), frame_ms, densityActive() ? "density" : "points");
            if (!d->model->selection()->empty())
                line("%s selected", format_count(static_cast<std::int64_t>(d->model->selection()->size())).toUtf8().constData());
            if (const std::int64_t uploaded = d->renderer.uploaded(d->data_generation); uploaded < d->num_points)
                line("uploading %.0f%%", 100.0 * static_cast<double>(uploaded) / std::max<std::int64_t>(1, d->num_points));
            const ImVec2 position = ImGui::GetWindowPos(), extent = ImGui::GetWindowSize();
            d->stats_rect = QRectF(position.x, position.y, extent.x, extent.y);
        }
        ImGui::End();
    }

    if (d->gesture_active && !d->gesture_points.isEmpty()) {
        ImDrawList* draw = ImGui::GetForegroundDrawList();
        const ImU32 color = d->theme == Theme::Dark ? IM_COL32(255, 255, 255, 230) : IM_COL32(20, 20, 20, 230);
        if (d->tool == Tool::Rectangle) {
            const QRectF rect = QRectF(d->gesture_points.front(), d->gesture_points.back()).normalized();
            draw->AddRect(ImVec2(static_cast<float>(rect.left()), static_cast<float>(rect.top())),
                          ImVec2(static_cast<float>(rect.right()), static_cast<float>(rect.bottom())), color, 0.0f, 0, 1.5f);
        } else {
            std::vector<ImVec2> points;
            points.reserve(static_cast<std::size_t>(d->gesture_points.size()));
            for (const QPointF& point : d->gesture_points)
                points.emplace_back(static_cast<float>(point.x()), static_cast<float>(point.y()));
            draw->AddPolyline(points.data(), static_cast<int>(points.size()), color, ImDrawFlags_Closed, 1.5f);
        }
    }

    if (d->hovered >= 0 && !d->dragging && !d->gesture_active) {
        ImGui::BeginTooltip();
        ImGui::TextUnformatted(hoverText().toUtf8().constData());
        ImGui::EndTooltip();
    }
}

// ---- input ----------------------------------------------------------------------------

static int imgui_button_of(Qt::MouseButton button) {
    switch (button) {
        case Qt::LeftButton: return 0;
        case Qt::RightButton: return 1;
        case Qt::MiddleButton: return 2;
        default: return -1;
    }
}

void PlotView::mousePressEvent(QMouseEvent* event) {
    const QPointF position = event->position();
    d->overlay.mouse_button(imgui_button_of(event->button()), true, position);
    if (d->overlay.wants_mouse()) {
        update();
        return;
    }
    if (event->button() == Qt::LeftButton && d->tool != Tool::Pan) {
        const Qt::KeyboardModifiers modifiers = event->modifiers();
        d->gesture_active = true;
        d->gesture_mode = modifiers & Qt::ShiftModifier                              ? SelectionMode::Add
                          : modifiers & (Qt::AltModifier | Qt::ControlModifier) ? SelectionMode::Subtract
                                                                                     : d->selection_mode;
        d->gesture_points = QPolygonF{position};
        if (d->hovered >= 0) {
            d->hovered = -1;
            emit hoveredCellChanged(-1);
        }
    } else if (event->button() == Qt::LeftButton || event->button() == Qt::MiddleButton) {
        d->dragging = true;
        d->drag_last = position;
    }
    update();
}

void PlotView::mouseReleaseEvent(QMouseEvent* event) {
    d->overlay.mouse_button(imgui_button_of(event->button()), false, event->position());
    if (event->button() == Qt::LeftButton && d->gesture_active) {
        if (d->tool == Tool::Rectangle) {
            d->gesture_points.resize(1);
            d->gesture_points.append(event->position());
        }
        finishSelectionGesture();
    }
    if (event->button() == Qt::LeftButton || event->button() == Qt::MiddleButton) d->dragging = false;
    update();
}

void PlotView::mouseMoveEvent(QMouseEvent* event) {
    const QPointF position = event->position();
    d->mouse_position = position;
    d->overlay.mouse_moved(position);
    if (d->gesture_active) {
        if (d->tool == Tool::Rectangle) {
            d->gesture_points.resize(1);
            d->gesture_points.append(position);
        } else {
            const QPointF step = position - d->gesture_points.back();
            if (std::hypot(step.x(), step.y()) >= k_lasso_step_px) d->gesture_points.append(position);
        }
    } else if (d->dragging) {
        const QPointF delta = position - d->drag_last;
        d->drag_last = position;
        if (!delta.isNull()) {
            d->view.pan_pixels(delta.x(), delta.y());
            d->user_moved = true;
            markSceneDirty(false);
            emit viewChanged();
        }
    } else {
        updateHover(position);
    }
    update();
}

void PlotView::mouseDoubleClickEvent(QMouseEvent* event) {
    d->overlay.mouse_button(imgui_button_of(event->button()), true, event->position());
    if (!d->overlay.wants_mouse() && event->button() == Qt::LeftButton && d->tool == Tool::Pan) resetView();
    update();
}

void PlotView::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    d->overlay.mouse_wheel(static_cast<float>(steps), static_cast<float>(event->angleDelta().x() / 120.0));
    if (!d->overlay.wants_mouse() && steps != 0.0) {
        const QPointF position = event->position();
        d->view.zoom_at({position.x(), position.y()}, std::pow(2.0, steps / 4.0));
        d->user_moved = true;
        markSceneDirty(false);
        emit viewChanged();
    }
    event->accept();
    update();
}

void PlotView::keyPressEvent(QKeyEvent* event) {
    const Qt::KeyboardModifiers modifiers = event->modifiers();
    d->overlay.key(event->key(), true, modifiers & Qt::ControlModifier, modifiers & Qt::ShiftModifier,
                   modifiers & Qt::AltModifier, event->text());
    if (!d->overlay.wants_keyboard()) {
        switch (event->key()) {
            case Qt::Key_R: resetView(); break;
            case Qt::Key_A: fitAll(); break;
            case Qt::Key_D:
                setDensityMode(densityActive() ? DensityMode::Off : DensityMode::On);
                break;
            case Qt::Key_Plus:
            case Qt::Key_Equal: setPointSize(effectivePointSize() + 1.0f); break;
            case Qt::Key_Minus: setPointSize(effectivePointSize() - 1.0f); break;
            default: QOpenGLWidget::keyPressEvent(event); break;
        }
    }
    update();
}

void PlotView::keyReleaseEvent(QKeyEvent* event) {
    const Qt::KeyboardModifiers modifiers = event->modifiers();
    d->overlay.key(event->key(), false, modifiers & Qt::ControlModifier, modifiers & Qt::ShiftModifier,
                   modifiers & Qt::AltModifier, QString());
    update();
}

void PlotView::leaveEvent(QEvent* event) {
    d->overlay.mouse_left();
    if (d->hovered >= 0) {
        d->hovered = -1;
        emit hoveredCellChanged(-1);
    }
    update();
    QOpenGLWidget::leaveEvent(event);
}

void PlotView::updateHover(QPointF position) {
    const double radius = std::max(4.0, effectivePointSize() / 2.0 + 2.0);
    const std::int64_t cell = d->overlay.wants_mouse() ? -1 : pickCell(position, radius);
    if (cell != d->hovered) {
        d->hovered = cell;
        emit hoveredCellChanged(cell);
    }
}

}  // namespace fathom::ui
