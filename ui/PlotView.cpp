#include "ui/PlotView.hpp"

#include <imgui.h>

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QOpenGLShaderProgram>
#include <QSurfaceFormat>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "core/backend/GlBufferWriter.hpp"
#include "ui/DensityImage.hpp"
#include "ui/GlShaders.hpp"
#include "ui/ImGuiLayer.hpp"
#include "ui/SpatialGrid.hpp"

#ifndef GL_PROGRAM_POINT_SIZE
#define GL_PROGRAM_POINT_SIZE 0x8642
#endif

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
// The density aggregation covers the viewport plus this fraction of it on every side.
constexpr double k_density_margin = 0.35;
// After a zoom the density image is resampled until zooming pauses this long.
constexpr int k_density_refresh_ms = 150;
// A lasso records a new vertex once the pointer moved this far (pixels).
constexpr double k_lasso_step_px = 2.0;

ImVec4 to_imvec4(Rgba8 color, float alpha = 1.0f) {
    return {color.r / 255.0f, color.g / 255.0f, color.b / 255.0f, alpha};
}

QString format_count(std::int64_t value) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(value)); }

/// Writes into the GL_ARRAY_BUFFER `buffer` (bound): through the accelerator's GL
/// interop when the application installed one (gpu/gl_interop.hpp, CUDA; untested on a
/// real GPU display), else, or when it declines, by glBufferSubData.
void write_array_buffer(QOpenGLExtraFunctions* gl, GlBufferWriter* writer, GLuint buffer, GLintptr offset, GLsizeiptr bytes,
                        const void* data) {
    if (writer == nullptr || !writer->write(buffer, static_cast<std::size_t>(offset), data, static_cast<std::size_t>(bytes)))
        gl->glBufferSubData(GL_ARRAY_BUFFER, offset, bytes, data);
}

}  // namespace

struct PlotView::Private {
    // ---- CPU data ----
    std::vector<float> positions;  // num_points * 2
    std::int64_t num_points = 0;
    WorldRect bounds;
    std::uint64_t data_generation = 0;
    std::shared_ptr<const std::vector<std::string>> names;
    QString hover_name;
    std::vector<std::int32_t> hover_codes;
    std::vector<std::string> hover_categories;

    PlotModel* model = nullptr;  // owned by the widget (a child QObject)

    DrawOrder order = DrawOrder::File;
    std::uint64_t order_seed = 0;
    std::vector<std::uint32_t> draw_indices;  // cell drawn at each buffer slot; empty = identity
    bool order_identity = true;
    bool order_dirty = false;                 // the GPU buffers are in an older order
    std::vector<std::uint32_t> random_order;  // make_draw_order(Random) for the key below
    std::uint64_t random_order_seed = 0;

    mutable SpatialGrid grid;
    mutable bool grid_dirty = true;

    // ---- view ----
    ViewTransform view;
    bool fit_pending = true;
    double legend_reserved_px = 0.0;  ///< right strip kept free of points for the legend (last frame's width)
    QRectF legend_rect;               ///< the legend as drawn in the last frame (widget coordinates)
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
    QOpenGLExtraFunctions* gl = nullptr;
    QMetaObject::Connection context_connection;
    bool gles = false;
    bool gl_ready = false;
    QString gl_error;
    GLuint vertex_array = 0, position_buffer = 0, attribute_buffer = 0;
    std::unique_ptr<GlBufferWriter> buffer_writer;  // accelerator GL interop, or null
    GLuint empty_vertex_array = 0;
    std::int64_t gpu_capacity = -1;
    std::uint64_t gpu_generation = ~0ULL;
    std::int64_t uploaded = 0;       // positions of the current generation on the GPU
    std::int64_t drawable = 0;       // points with valid (possibly older) positions on the GPU
    bool attributes_follow_batches = false;
    bool attributes_dirty = true;
    std::vector<float> position_staging;            // one batch of positions in draw order
    std::vector<PointAttribute> attribute_staging;  // the attributes in draw order
    QOpenGLShaderProgram points_program, resolve_program;
    GLuint scene_framebuffer = 0, scene_texture = 0;
    QSize scene_size;
    bool scene_dirty = true;
    GLuint density_texture = 0;
    QSize density_size;
    bool density_dirty = true;
    std::vector<Rgba8> density_pixels;  // the last density image (texture rows)
    DensityScratch density_scratch;
    int density_downsample = 1;
    Vec2 density_center;          // world point at the aggregation texture's centre
    double density_scale = 0.0;   // device px per world unit when aggregated
    QTimer density_refresh_timer; // re-aggregation after a zoom pauses
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

    // ---- off-screen layer export (renderLayerImage) ----
    bool exporting = false;       // renderScene draws into an export-sized target
    QSize export_size;            // device px of that target
    float export_point_px = 0.0f; // point size in export px
    bool export_density = false;  // the on-screen points-or-density choice

    Stats stats;
    QElapsedTimer frame_clock;
    double last_frame_ms = -1.0;

    Rgba8 background() const { return theme == Theme::Dark ? k_dark_background : k_light_background; }
    Rgba8 uniform_color() const { return theme == Theme::Dark ? k_dark_uniform : k_light_uniform; }

    // Keeps the cells out of the legend's strip on screen (an export has its own layout):
    // however the view is panned or zoomed, no cell is drawn under the legend.
    void begin_legend_clip(QOpenGLExtraFunctions* gl, qreal ratio) const {
        if (exporting || legend_reserved_px <= 0.0) return;
        const int keep = std::max(1, scene_size.width() - static_cast<int>(std::lround(legend_reserved_px * ratio)));
        gl->glEnable(GL_SCISSOR_TEST);
        gl->glScissor(0, 0, keep, scene_size.height());
    }

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
    WorldRect bounds{HUGE_VAL, HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (std::int64_t cell = 0; cell < count; ++cell) {
        const float x = d->positions[2 * cell], y = d->positions[2 * cell + 1];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        bounds.min_x = std::min(bounds.min_x, double{x});
        bounds.max_x = std::max(bounds.max_x, double{x});
        bounds.min_y = std::min(bounds.min_y, double{y});
        bounds.max_y = std::max(bounds.max_y, double{y});
    }
    d->bounds = bounds.empty() ? WorldRect{} : bounds;
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
    d->attributes_dirty = true;
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
    return d->grid.points_in_polygon(polygon, [this](std::int64_t cell) {
        return static_cast<std::size_t>(cell) < d->model->attributes().size() && d->model->attributes()[cell].color.a != 0;
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
    if (order == d->order && seed == d->order_seed) return;
    d->order = order;
    d->order_seed = seed;
    rebuildDrawOrder();
}

DrawOrder PlotView::drawOrder() const { return d->order; }

void PlotView::rebuildDrawOrder() {
    std::vector<float> keys;
    if (d->order == DrawOrder::ByValue) {
        keys = d->model->orderKeys();
    }
    bool identity = d->order == DrawOrder::File || (d->order == DrawOrder::ByValue && keys.empty());
    std::vector<std::uint32_t> indices;
    if (d->order == DrawOrder::Random) {
        // Every recolouring comes through here: the shuffle is kept for its seed and size.
        if (static_cast<std::int64_t>(d->random_order.size()) != d->num_points || d->random_order_seed != d->order_seed) {
            d->random_order = make_draw_order(DrawOrder::Random, d->num_points, d->order_seed);
            d->random_order_seed = d->order_seed;
        }
        indices = d->random_order;
    } else if (!identity) {
        indices = make_draw_order(d->order, d->num_points, d->order_seed, keys);
    }
    if (d->model->maskStyle() == MaskStyle::Dim && !d->model->cellMask().empty()) {
        // Dimmed cells first, so that the matching ones are drawn over them.
        if (identity) indices = make_draw_order(DrawOrder::File, d->num_points, 0);
        identity = false;
        std::stable_partition(indices.begin(), indices.end(), [this](std::uint32_t cell) {
            return cell >= d->model->cellMask().size() || d->model->cellMask()[cell] == 0;
        });
    }
    if (!d->model->selectedFlags().empty()) {
        // The selection is drawn on top of the dimmed cells.
        indices = selected_last(indices, d->model->selectedFlags());
        identity = false;
    }
    // Only a different order rewrites the GPU buffers (a recolouring in file or random
    // order keeps the positions where they are).
    if (identity == d->order_identity && indices == d->draw_indices) return;
    d->order_identity = identity;
    d->draw_indices = std::move(indices);
    d->order_dirty = true;
    markSceneDirty(false);
}

// ---- view -----------------------------------------------------------------------------

void PlotView::resetView() {
    d->fit_pending = true;
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
    update();
}

bool PlotView::overlayVisible() const { return d->overlay_visible; }

void PlotView::setBatchSize(std::int64_t points) { d->batch_size = std::max<std::int64_t>(points, 1); }
std::int64_t PlotView::batchSize() const { return d->batch_size; }
void PlotView::setUploadBudgetMs(double milliseconds) { d->upload_budget_ms = std::max(0.0, milliseconds); }
std::int64_t PlotView::uploadedPoints() const {
    return d->gpu_generation == d->data_generation ? d->uploaded : 0;
}
bool PlotView::uploadComplete() const {
    return d->gl_ready && d->gpu_generation == d->data_generation && d->uploaded == d->num_points;
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
    const double plot_right = d->legend_reserved_px > 0.0 ? width() - d->legend_reserved_px : HUGE_VAL;
    return d->grid.nearest(world, radius, [this, plot_right](std::int64_t cell) {
        const auto& attributes = d->model->attributes();
        if (static_cast<std::size_t>(cell) >= attributes.size() || attributes[cell].color.a == 0) return false;
        return d->view.world_to_screen({d->positions[2 * cell], d->positions[2 * cell + 1]}).x < plot_right;
    });
}

QRectF PlotView::legendRect() const { return d->legend_rect; }

QRectF PlotView::legendEntryRect(int category) const {
    if (category < 0 || static_cast<std::size_t>(category) >= d->legend_rects.size()) return {};
    return d->legend_rects[category];
}

const PlotView::Stats& PlotView::stats() const { return d->stats; }

void PlotView::markSceneDirty(bool reaggregate) {
    d->scene_dirty = true;
    if (reaggregate) d->density_dirty = true;
    update();
}

// ---- GL -------------------------------------------------------------------------------

void PlotView::initializeGL() {
    if (d->gl_ready) releaseGl();
    d->gl = context()->extraFunctions();
    d->gles = context()->isOpenGLES();
    disconnect(d->context_connection);
    d->context_connection = connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, [this] {
        makeCurrent();
        releaseGl();
        doneCurrent();
    });
    const QSurfaceFormat format = context()->format();
    const bool version_ok = d->gles ? format.majorVersion() >= 3
                                    : (format.majorVersion() > 3 || (format.majorVersion() == 3 && format.minorVersion() >= 3));
    if (!version_ok) {
        d->gl_error = QStringLiteral("PlotView needs OpenGL 3.3 or OpenGL ES 3.0; the context is %1.%2")
                          .arg(format.majorVersion())
                          .arg(format.minorVersion());
        qWarning("%s", qPrintable(d->gl_error));
        return;
    }
    QString error;
    if (!build_program(d->points_program, QStringLiteral("points.vert"), QStringLiteral("points.frag"), d->gles, &error) ||
        !build_program(d->resolve_program, QStringLiteral("fullscreen.vert"), QStringLiteral("density_resolve.frag"),
                       d->gles, &error) ||
        !d->overlay.initialize_gl(d->gl, d->gles, &error)) {
        d->gl_error = error;
        qWarning("PlotView: %s", qPrintable(error));
        return;
    }
    QOpenGLExtraFunctions* gl = d->gl;
    gl->glGenVertexArrays(1, &d->vertex_array);
    gl->glGenVertexArrays(1, &d->empty_vertex_array);
    gl->glGenBuffers(1, &d->position_buffer);
    gl->glGenBuffers(1, &d->attribute_buffer);
    gl->glBindVertexArray(d->vertex_array);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
    gl->glEnableVertexAttribArray(0);
    gl->glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 2 * sizeof(float), nullptr);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
    gl->glEnableVertexAttribArray(1);
    gl->glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(PointAttribute), nullptr);
    // (PointAttribute::value is for the CPU side: the density binning averages it.)
    gl->glBindVertexArray(0);
    d->gpu_capacity = -1;
    d->gpu_generation = ~0ULL;
    d->uploaded = d->drawable = 0;
    d->attributes_dirty = true;
    d->order_dirty = false;  // the first upload is in the current order
    d->scene_size = d->density_size = QSize();
    d->overlay.set_light_style(d->theme == Theme::Light);
    d->buffer_writer = make_gl_buffer_writer();
    d->gl_ready = true;
    markSceneDirty(true);
}

void PlotView::releaseGl() {
    if (!d->gl) return;
    QOpenGLExtraFunctions* gl = d->gl;
    auto delete_buffer = [&](GLuint& buffer) {
        if (buffer) gl->glDeleteBuffers(1, &buffer);
        buffer = 0;
    };
    auto delete_texture = [&](GLuint& texture) {
        if (texture) gl->glDeleteTextures(1, &texture);
        texture = 0;
    };
    auto delete_framebuffer = [&](GLuint& framebuffer) {
        if (framebuffer) gl->glDeleteFramebuffers(1, &framebuffer);
        framebuffer = 0;
    };
    delete_buffer(d->position_buffer);
    delete_buffer(d->attribute_buffer);
    if (d->vertex_array) gl->glDeleteVertexArrays(1, &d->vertex_array);
    if (d->empty_vertex_array) gl->glDeleteVertexArrays(1, &d->empty_vertex_array);
    d->vertex_array = d->empty_vertex_array = 0;
    delete_texture(d->scene_texture);
    delete_texture(d->density_texture);
    delete_framebuffer(d->scene_framebuffer);
    d->points_program.removeAllShaders();
    d->resolve_program.removeAllShaders();
    d->overlay.release_gl();
    d->gl_ready = false;
    d->gl = nullptr;
}

void PlotView::resizeGL(int width, int height) {
    d->view.set_viewport(width, height);
    // A view the user did not move follows the widget's size (a dock opened or closed).
    if (!d->user_moved) d->fit_pending = true;
    markSceneDirty(false);
}

void PlotView::uploadPending() {
    QOpenGLExtraFunctions* gl = d->gl;
    const std::int64_t count = d->num_points;
    if (d->gpu_generation != d->data_generation) {
        if (count != d->gpu_capacity) {
            // New cell count: reallocate both buffers; attributes then follow the batches,
            // which are in the current draw order from the start.
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
            gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(count) * 2 * sizeof(float), nullptr, GL_DYNAMIC_DRAW);
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
            gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(count) * sizeof(PointAttribute), nullptr,
                             GL_DYNAMIC_DRAW);
            d->gpu_capacity = count;
            d->drawable = 0;
            d->attributes_follow_batches = true;
            d->attributes_dirty = false;
            d->order_dirty = false;
        }
        d->uploaded = 0;
        d->gpu_generation = d->data_generation;
    }
    // The density image is made on the CPU from the cell-order data: while it is shown
    // and every position is on the GPU, recolourings and reorders wait on the CPU until
    // the points are drawn again (only the density texture is uploaded meanwhile).
    if (densityActive() && d->uploaded == count && !d->attributes_follow_batches) return;
    const bool permuted = !d->order_identity && static_cast<std::int64_t>(d->draw_indices.size()) == count;
    // A new draw order rewrites every position once, in that order, within this frame (a
    // buffer half in one order and half in another would pair positions with the wrong
    // colours), and the attributes with them.
    bool upload_all = false;
    if (d->order_dirty) {
        d->order_dirty = false;
        if (count > 0) {
            d->uploaded = 0;
            upload_all = true;
            ++d->stats.position_reorders;
            if (!d->attributes_follow_batches) d->attributes_dirty = true;
        }
    }
    if (d->attributes_dirty && count > 0 && static_cast<std::int64_t>(d->model->attributes().size()) == count) {
        // A colouring or filter change: rewrite the whole attribute buffer, nothing else.
        const PointAttribute* source = d->model->attributes().data();
        if (permuted) {
            d->attribute_staging.resize(static_cast<std::size_t>(count));
            gather_in_draw_order(d->model->attributes(), d->draw_indices, d->attribute_staging);
            source = d->attribute_staging.data();
        }
        gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
        write_array_buffer(gl, d->buffer_writer.get(), d->attribute_buffer, 0,
                           static_cast<GLsizeiptr>(count) * sizeof(PointAttribute), source);
        d->stats.attribute_bytes += count * static_cast<std::int64_t>(sizeof(PointAttribute));
        d->attributes_follow_batches = false;
    }
    d->attributes_dirty = false;
    if (d->uploaded < count) {
        QElapsedTimer budget;
        budget.start();
        do {
            const std::int64_t begin = d->uploaded;
            const std::int64_t batch = std::min(d->batch_size, count - begin);
            const float* positions = d->positions.data() + 2 * begin;
            const PointAttribute* attributes = d->model->attributes().data() + begin;
            if (permuted) {
                const auto order = std::span<const std::uint32_t>(d->draw_indices).subspan(
                    static_cast<std::size_t>(begin), static_cast<std::size_t>(batch));
                d->position_staging.resize(static_cast<std::size_t>(batch) * 2);
                gather_in_draw_order(d->positions, order, d->position_staging);
                positions = d->position_staging.data();
                if (d->attributes_follow_batches) {
                    d->attribute_staging.resize(static_cast<std::size_t>(batch));
                    gather_in_draw_order(d->model->attributes(), order, d->attribute_staging);
                    attributes = d->attribute_staging.data();
                }
            }
            gl->glBindBuffer(GL_ARRAY_BUFFER, d->position_buffer);
            write_array_buffer(gl, d->buffer_writer.get(), d->position_buffer, static_cast<GLintptr>(begin) * 2 * sizeof(float),
                               static_cast<GLsizeiptr>(batch) * 2 * sizeof(float), positions);
            d->stats.position_bytes += batch * 2 * static_cast<std::int64_t>(sizeof(float));
            ++d->stats.position_batches;
            if (d->attributes_follow_batches) {
                gl->glBindBuffer(GL_ARRAY_BUFFER, d->attribute_buffer);
                write_array_buffer(gl, d->buffer_writer.get(), d->attribute_buffer, static_cast<GLintptr>(begin) * sizeof(PointAttribute),
                                   static_cast<GLsizeiptr>(batch) * sizeof(PointAttribute), attributes);
                d->stats.attribute_bytes += batch * static_cast<std::int64_t>(sizeof(PointAttribute));
            }
            d->uploaded = begin + batch;
            d->drawable = std::max(d->drawable, d->uploaded);
        } while (d->uploaded < count &&
                 (upload_all || (d->upload_budget_ms > 0.0 &&
                                 static_cast<double>(budget.nsecsElapsed()) * 1e-6 < d->upload_budget_ms)));
        if (d->uploaded == count) d->attributes_follow_batches = false;
        // The density image is binned from the positions on the CPU: only the point layer
        // changes with the upload.
        d->scene_dirty = true;
    }
    gl->glBindBuffer(GL_ARRAY_BUFFER, 0);
}

/// A texture of `wanted` size and RGBA8 texels (nearest sampling), made or resized.
static void ensure_rgba8_texture(QOpenGLExtraFunctions* gl, GLuint& texture, QSize& current, QSize wanted) {
    if (texture && current == wanted) return;
    if (!texture) gl->glGenTextures(1, &texture);
    gl->glBindTexture(GL_TEXTURE_2D, texture);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    gl->glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, wanted.width(), wanted.height(), 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    current = wanted;
}

/// An RGBA8 texture of `wanted` size attached to `framebuffer`, made or resized.
static void ensure_color_target(QOpenGLExtraFunctions* gl, GLuint& framebuffer, GLuint& texture, QSize& current,
                                QSize wanted) {
    if (framebuffer && current == wanted) return;
    if (!framebuffer) gl->glGenFramebuffers(1, &framebuffer);
    current = QSize();  // (re)specify the texture
    ensure_rgba8_texture(gl, texture, current, wanted);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
    gl->glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
}

void PlotView::renderScene() {
    QOpenGLExtraFunctions* gl = d->gl;
    const qreal ratio = devicePixelRatioF();
    const QSize size = d->exporting ? d->export_size
                                    : QSize(std::max(1, static_cast<int>(std::lround(width() * ratio))),
                                            std::max(1, static_cast<int>(std::lround(height() * ratio))));
    ensure_color_target(gl, d->scene_framebuffer, d->scene_texture, d->scene_size, size);
    if (d->exporting ? d->export_density : densityActive()) renderDensity();
    else renderPoints();
    gl->glDisable(GL_SCISSOR_TEST);
    ++d->stats.scene_renders;
    d->scene_dirty = false;
}

void PlotView::renderPoints() {
    QOpenGLExtraFunctions* gl = d->gl;
    const Rgba8 background = d->background();
    gl->glBindFramebuffer(GL_FRAMEBUFFER, d->scene_framebuffer);
    gl->glViewport(0, 0, d->scene_size.width(), d->scene_size.height());
    gl->glClearColor(background.r / 255.0f, background.g / 255.0f, background.b / 255.0f, 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);
    d->begin_legend_clip(gl, devicePixelRatioF());
    d->stats.drawn_points = 0;
    if (d->drawable == 0) return;
    const float size = d->exporting ? d->export_point_px : effectivePointSize() * static_cast<float>(devicePixelRatioF());
    if (!d->gles) gl->glEnable(GL_PROGRAM_POINT_SIZE);
    if (d->opacity < 1.0f) {
        gl->glEnable(GL_BLEND);
        gl->glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    } else {
        gl->glDisable(GL_BLEND);
    }
    const auto transform = d->view.ndc_scale_offset();
    d->points_program.bind();
    gl->glUniform4f(d->points_program.uniformLocation("u_transform"), transform[0], transform[1], transform[2],
                    transform[3]);
    gl->glUniform1f(d->points_program.uniformLocation("u_point_size"), size);
    gl->glUniform1f(d->points_program.uniformLocation("u_opacity"), d->opacity);
    gl->glUniform1i(d->points_program.uniformLocation("u_round"), size >= 3.0f ? 1 : 0);
    gl->glBindVertexArray(d->vertex_array);
    gl->glDrawArrays(GL_POINTS, 0, static_cast<GLsizei>(d->drawable));  // the buffers are in draw order
    gl->glBindVertexArray(0);
    d->points_program.release();
    gl->glDisable(GL_BLEND);
    d->stats.drawn_points = d->drawable;
}

void PlotView::renderDensity() {
    QOpenGLExtraFunctions* gl = d->gl;
    const double ratio = d->exporting ? 1.0 : devicePixelRatioF();  // an export view is in device px
    const int downsample = d->density_downsample;
    const double scale = d->view.pixels_per_unit() * ratio;  // device px per world unit
    const QSize screen = d->scene_size;
    // The aggregation covers the view plus a margin on every side, in world space: a pan
    // that stays inside it only moves the resolve pass's lookup (no pass over the cells).
    const QSize size(static_cast<int>(std::ceil(screen.width() * (1.0 + 2.0 * k_density_margin) / downsample)),
                     static_cast<int>(std::ceil(screen.height() * (1.0 + 2.0 * k_density_margin) / downsample)));
    // Screen pixel p (device px, GL orientation) reads aggregation texel
    // (p * lookup_scale + offset) / downsample: lookup_scale is the aggregation's scale
    // over the view's (1 unless a zoom has not been re-aggregated yet).
    auto lookup = [&](Vec2 center, double aggregated_scale) {
        const double ratio_of_scales = aggregated_scale / scale;
        return std::array<double, 3>{
            size.width() * downsample / 2.0 - screen.width() / 2.0 * ratio_of_scales +
                (d->view.center().x - center.x) * aggregated_scale,
            size.height() * downsample / 2.0 - screen.height() / 2.0 * ratio_of_scales +
                (d->view.center().y - center.y) * aggregated_scale,
            ratio_of_scales};
    };
    auto covers_screen = [&](const std::array<double, 3>& map) {
        return map[0] >= 0.0 && map[1] >= 0.0 && map[0] + screen.width() * map[2] <= size.width() * downsample &&
               map[1] + screen.height() * map[2] <= size.height() * downsample;
    };
    bool reuse = !d->density_dirty && d->density_size == size && d->density_scale > 0.0 &&
                 covers_screen(lookup(d->density_center, d->density_scale));
    if (reuse && d->density_scale != scale) {
        // A zoom: show the current aggregation resampled at once and re-aggregate when the
        // zooming pauses (each wheel step would otherwise cost a pass over every cell).
        if (d->density_refresh_due) reuse = false;
        else d->density_refresh_timer.start();
    }
    d->density_refresh_due = false;
    ensure_rgba8_texture(gl, d->density_texture, d->density_size, size);
    if (!reuse) {
        d->density_center = d->view.center();
        d->density_scale = scale;
        // Binned on the CPU from the positions and attributes in cell order (the GPU
        // buffers' draw order plays no part: the image is made of sums), then uploaded as
        // the finished picture.
        QElapsedTimer timer;
        timer.start();
        const DensityRaster raster{size.width(), size.height(), d->density_center, scale / downsample};
        const DensityColoring coloring = d->model->colorKind() == ColorKind::Categorical  ? DensityColoring::MeanColor
                                         : d->model->colorKind() == ColorKind::Continuous ? DensityColoring::MeanValue
                                                                            : DensityColoring::Count;
        const std::size_t cells = std::min(d->model->attributes().size(), d->positions.size() / 2);
        aggregate_density(std::span(d->positions).first(2 * cells), std::span(d->model->attributes()).first(cells), raster,
                          coloring, d->model->colormap(), d->background(), d->density_pixels, d->density_scratch);
        gl->glBindTexture(GL_TEXTURE_2D, d->density_texture);
        gl->glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
        gl->glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, size.width(), size.height(), GL_RGBA, GL_UNSIGNED_BYTE,
                            d->density_pixels.data());
        d->stats.last_density_ms = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
        d->density_dirty = false;
        ++d->stats.density_aggregations;
        d->stats.drawn_points = static_cast<std::int64_t>(cells);
    }
    const auto map = lookup(d->density_center, d->density_scale);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, d->scene_framebuffer);
    gl->glViewport(0, 0, screen.width(), screen.height());
    if (!d->exporting && d->legend_reserved_px > 0.0) {
        const Rgba8 background = d->background();
        gl->glClearColor(background.r / 255.0f, background.g / 255.0f, background.b / 255.0f, 1.0f);
        gl->glClear(GL_COLOR_BUFFER_BIT);
        d->begin_legend_clip(gl, devicePixelRatioF());
    }
    gl->glDisable(GL_BLEND);
    d->resolve_program.bind();
    gl->glActiveTexture(GL_TEXTURE0);
    gl->glBindTexture(GL_TEXTURE_2D, d->density_texture);
    gl->glUniform1i(d->resolve_program.uniformLocation("u_image"), 0);
    gl->glUniform1i(d->resolve_program.uniformLocation("u_downsample"), downsample);
    gl->glUniform2f(d->resolve_program.uniformLocation("u_offset"), static_cast<float>(map[0]),
                    static_cast<float>(map[1]));
    gl->glUniform1f(d->resolve_program.uniformLocation("u_lookup_scale"), static_cast<float>(map[2]));
    gl->glBindVertexArray(d->empty_vertex_array);
    gl->glDrawArrays(GL_TRIANGLES, 0, 3);
    gl->glBindVertexArray(0);
    d->resolve_program.release();
}

void PlotView::paintGL() {
    QElapsedTimer paint_timer;
    paint_timer.start();
    const double now_ms = static_cast<double>(d->frame_clock.nsecsElapsed()) * 1e-6;
    const double since_last = d->last_frame_ms >= 0.0 ? now_ms - d->last_frame_ms : 0.0;
    d->last_frame_ms = now_ms;
    if (since_last > 0.0 && since_last < 1000.0)
        d->stats.frame_interval_ms = d->stats.frame_interval_ms > 0.0 ? 0.8 * d->stats.frame_interval_ms + 0.2 * since_last
                                                                      : since_last;
    else
        d->stats.frame_interval_ms = 0.0;
    ++d->stats.frames;

    QOpenGLExtraFunctions* gl = d->gl;
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
        d->view.fit_left_of(d->bounds, d->legend_reserved_px);
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
    if (d->scene_dirty || d->scene_size.isEmpty()) renderScene();

    gl->glBindFramebuffer(GL_READ_FRAMEBUFFER, d->scene_framebuffer);
    gl->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, target);
    gl->glBlitFramebuffer(0, 0, d->scene_size.width(), d->scene_size.height(), 0, 0, d->scene_size.width(),
                          d->scene_size.height(), GL_COLOR_BUFFER_BIT, GL_NEAREST);
    gl->glBindFramebuffer(GL_FRAMEBUFFER, target);
    if (d->overlay_visible) d->overlay.render(d->scene_size);

    d->stats.last_paint_ms = static_cast<double>(paint_timer.nsecsElapsed()) * 1e-6;
    // Keep frames coming while batches remain or queued clicks wait for their next frame.
    if (d->uploaded < d->num_points || d->overlay.has_pending_input()) update();
    emit frameRendered();
}

double PlotView::renderFrameForBenchmark(bool redraw_scene) {
    makeCurrent();
    if (redraw_scene) markSceneDirty(true);
    QElapsedTimer timer;
    timer.start();
    if (d->gl) d->gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
    paintGL();
    if (d->gl) d->gl->glFinish();
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
    QOpenGLExtraFunctions* gl = d->gl;
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
    const double budget = d->upload_budget_ms;
    d->upload_budget_ms = 1e12;
    uploadPending();
    d->upload_budget_ms = budget;

    // Swap in the export target and view; buffers, colours and order are shared.
    const ViewTransform saved_view = d->view;
    const GLuint saved_framebuffer = d->scene_framebuffer, saved_texture = d->scene_texture;
    const QSize saved_size = d->scene_size;
    d->export_point_px = effectivePointSize() * point_scale;
    d->export_density = density;
    d->export_size = pixels;
    d->exporting = true;
    d->scene_framebuffer = d->scene_texture = 0;
    d->scene_size = QSize();
    d->view.set_viewport(pixels.width(), pixels.height());
    d->view.set_center({(world.min_x + world.max_x) / 2.0, (world.min_y + world.max_y) / 2.0});
    d->view.set_pixels_per_unit(pixels.width() / world.width());
    d->density_dirty = true;
    renderScene();

    QImage image(pixels, QImage::Format_RGBA8888);
    gl->glBindFramebuffer(GL_READ_FRAMEBUFFER, d->scene_framebuffer);
    gl->glPixelStorei(GL_PACK_ALIGNMENT, 4);
    gl->glReadPixels(0, 0, pixels.width(), pixels.height(), GL_RGBA, GL_UNSIGNED_BYTE, image.bits());
    gl->glBindFramebuffer(GL_FRAMEBUFFER, defaultFramebufferObject());
    gl->glDeleteFramebuffers(1, &d->scene_framebuffer);
    gl->glDeleteTextures(1, &d->scene_texture);

    d->exporting = false;
    d->scene_framebuffer = saved_framebuffer;
    d->scene_texture = saved_texture;
    d->scene_size = saved_size;
    d->view = saved_view;
    d->density_size = QSize();  // the density target was sized for the export
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
            ImGui::TextUnformatted(d->model->colorName().toUtf8().constData());
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
                ImDrawList* draw = ImGui::GetWindowDrawList();
                const ImVec2 origin = ImGui::GetCursorScreenPos();
                const float bar_width = 180.0f, bar_height = 14.0f;
                const int segments = 64;
                for (int segment = 0; segment < segments; ++segment) {
                    const Rgba8 left = colormap_color(d->model->colormap(), segment / static_cast<float>(segments));
                    const Rgba8 right = colormap_color(d->model->colormap(), (segment + 1) / static_cast<float>(segments));
                    const ImU32 left_color = ImGui::ColorConvertFloat4ToU32(to_imvec4(left));
                    const ImU32 right_color = ImGui::ColorConvertFloat4ToU32(to_imvec4(right));
                    draw->AddRectFilledMultiColor(
                        ImVec2(origin.x + bar_width * segment / segments, origin.y),
                        ImVec2(origin.x + bar_width * (segment + 1) / segments, origin.y + bar_height), left_color,
                        right_color, right_color, left_color);
                }
                ImGui::Dummy(ImVec2(bar_width, bar_height));
                ImGui::Text("%.3g", static_cast<double>(d->model->valueRange().first));
                ImGui::SameLine(bar_width - ImGui::CalcTextSize("0.000").x);
                ImGui::Text("%.3g", static_cast<double>(d->model->valueRange().second));
                float low = d->model->valueRange().first, high = d->model->valueRange().second;
                const float speed = std::max(1e-6f, (d->model->dataRange().second - d->model->dataRange().first) / 200.0f);
                ImGui::SetNextItemWidth(bar_width);
                if (ImGui::DragFloatRange2("##range", &low, &high, speed, d->model->dataRange().first, d->model->dataRange().second, "%.3g", "%.3g"))
                    setValueRange(low, high);
                ImGui::SetNextItemWidth(bar_width * 0.6f);
                if (ImGui::BeginCombo("##colormap", colormap_name(d->model->colormap()))) {
                    for (Colormap colormap : k_all_colormaps)
                        if (ImGui::Selectable(colormap_name(colormap), colormap == d->model->colormap())) setColormap(colormap);
                    ImGui::EndCombo();
                }
                ImGui::SameLine();
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
        ImGui::SetNextWindowPos(ImVec2(margin, display.y - margin), ImGuiCond_Always, ImVec2(0.0f, 1.0f));
        ImGui::SetNextWindowBgAlpha(0.65f);
        if (ImGui::Begin("##stats", nullptr, flags | ImGuiWindowFlags_NoInputs)) {
            const double frame_ms = d->stats.frame_interval_ms > 0.0 ? d->stats.frame_interval_ms : d->stats.last_paint_ms;
            ImGui::Text("%s / %s cells  |  frame %.1f ms  |  %s", format_count(d->model->visibleCount()).toUtf8().constData(),
                        format_count(d->num_points).toUtf8().constData(), frame_ms,
                        densityActive() ? "density" : "points");
            if (!d->model->selection()->empty())
                ImGui::Text("%s selected", format_count(static_cast<std::int64_t>(d->model->selection()->size())).toUtf8().constData());
            if (d->uploaded < d->num_points)
                ImGui::Text("uploading %.0f%%", 100.0 * static_cast<double>(d->uploaded) / std::max<std::int64_t>(1, d->num_points));
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
