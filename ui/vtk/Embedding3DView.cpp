#include "ui/vtk/Embedding3DView.hpp"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QPainter>
#include <QSurface>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstring>

#include <vtkActor.h>
#include <vtkCallbackCommand.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCommand.h>
#include <vtkFloatArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkIdTypeArray.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>

namespace fathom::ui {

namespace {

/// Colour of cells before any colouring arrives (PlotView's dark-theme default).
constexpr Rgba8 k_default_point_color{99, 166, 235, 255};
constexpr Rgba8 k_default_background{22, 24, 29, 255};

/// Grey that reads on `background` (light on dark, dark on light).
Rgba8 axis_color(Rgba8 background) {
    const int luminance = (299 * background.r + 587 * background.g + 114 * background.b) / 1000;
    return luminance < 128 ? Rgba8{170, 175, 185, 255} : Rgba8{90, 90, 100, 255};
}

/// The axis names of an obsm key: X_umap -> UMAP1..3, X_pca -> PC1..3, X_tsne ->
/// tSNE1..3, another key -> key1..3 (without the "X_").
QStringList axis_names_of(const QString& key) {
    QString stem = key.startsWith(QStringLiteral("X_")) ? key.mid(2) : key;
    if (stem == QStringLiteral("umap")) stem = QStringLiteral("UMAP");
    else if (stem == QStringLiteral("pca")) stem = QStringLiteral("PC");
    else if (stem == QStringLiteral("tsne")) stem = QStringLiteral("tSNE");
    if (stem.isEmpty()) return {};
    return {stem + QLatin1Char('1'), stem + QLatin1Char('2'), stem + QLatin1Char('3')};
}

}  // namespace

/// Axis names at the ends of the axes, drawn by Qt over the VTK frame (a child widget,
/// composited on top; mouse events pass through to the view).
class Embedding3DAxisLabels : public QWidget {
public:
    explicit Embedding3DAxisLabels(Embedding3DView* view) : QWidget(view), m_view(view) {
        setAttribute(Qt::WA_TransparentForMouseEvents);
        setAttribute(Qt::WA_NoSystemBackground);
        setAttribute(Qt::WA_TranslucentBackground);
        setAutoFillBackground(false);
    }

protected:
    void paintEvent(QPaintEvent*) override {
        const QStringList names = m_view->axisNames();
        const auto ends = m_view->axisLabelPositions();
        if (names.size() != 3 || ends.size() != 3) return;
        QPainter painter(this);
        const Rgba8 ink = axis_color(m_view->backgroundColor());
        painter.setPen(QColor(ink.r, ink.g, ink.b));
        for (int axis = 0; axis < 3; ++axis) painter.drawText(ends[static_cast<std::size_t>(axis)] + QPointF(4, -4), names[axis]);
    }

private:
    Embedding3DView* m_view;
};

struct Embedding3DView::Private {
    Embedding3DView* self = nullptr;
    vtkNew<vtkGenericOpenGLRenderWindow> window;
    vtkNew<vtkGenericRenderWindowInteractor> interactor;
    vtkNew<vtkInteractorStyleTrackballCamera> style;
    vtkNew<vtkRenderer> renderer;
    vtkNew<vtkPolyData> cloud;
    vtkNew<vtkPolyDataMapper> mapper;
    vtkNew<vtkActor> actor;
    vtkNew<vtkPolyData> axes;  // three lines from the points' minimum corner along x, y, z
    vtkNew<vtkPolyDataMapper> axes_mapper;
    vtkNew<vtkActor> axes_actor;
    std::array<std::array<double, 3>, 4> axis_points{};  // the corner, then the x, y and z ends
    bool have_axes = false;
    QStringList axis_names;
    Embedding3DAxisLabels* labels = nullptr;
    std::vector<unsigned long> window_observers;
    unsigned long render_observer = 0;

    // The context and surface VTK renders with: the widget's, captured in initializeGL.
    QOpenGLContext* context = nullptr;
    QSurface* surface = nullptr;
    bool gl_ready = false;

    std::vector<float> xyz;
    std::vector<Rgba8> colors;          // one per cell; alpha 0 = hidden
    std::int64_t num_points = 0;
    std::int64_t visible = 0;
    bool positions_dirty = false;
    bool colors_dirty = false;
    bool fit_pending = true;
    QString source_name;
    Rgba8 background = k_default_background;
    float point_size = 3.0f;
    std::int64_t renders = 0;

    /// vtkGenericOpenGLRenderWindow leaves context handling to its owner: it asks through
    /// these events. The context is made current with QOpenGLContext::makeCurrent on
    /// the widget's own surface (QOpenGLWidget::makeCurrent would also rebind the
    /// widget's framebuffer behind VTK's back).
    void onWindowEvent(vtkObject*, unsigned long event, void* call_data) {
        switch (event) {
            case vtkCommand::WindowMakeCurrentEvent:
                if (context && surface && !isCurrent()) context->makeCurrent(surface);
                break;
            case vtkCommand::WindowIsCurrentEvent:
                *static_cast<bool*>(call_data) = isCurrent();
                break;
            default:
                break;
        }
    }

    bool isCurrent() const {
        const QOpenGLContext* current = QOpenGLContext::currentContext();
        return context && current == context && current->surface() == surface;
    }

    /// The interactor's render requests (trackball moves) become repaints: VTK renders
    /// only inside paintGL, where the widget's context and framebuffer are ready.
    void onInteractorRender(vtkObject*, unsigned long, void*) { self->update(); }
};

Embedding3DView::Embedding3DView(QWidget* parent) : QOpenGLWidget(parent), d(std::make_unique<Private>()) {
    d->self = this;
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(120, 120);

    auto& window = d->window;
    window->SetReadyForRendering(false);  // until initializeGL has a context
    window->SetOwnContext(false);
    // Frame() stops at VTK's display framebuffer; paintGL blits it into the widget's.
    window->SetFrameBlitModeToNoBlit();
    window->SetMultiSamples(0);
    for (const unsigned long event : {vtkCommand::WindowMakeCurrentEvent, vtkCommand::WindowIsCurrentEvent})
        d->window_observers.push_back(window->AddObserver(event, d.get(), &Private::onWindowEvent));

    d->renderer->SetBackground(d->background.r / 255.0, d->background.g / 255.0, d->background.b / 255.0);
    window->AddRenderer(d->renderer);

    d->mapper->SetInputData(d->cloud);
    d->mapper->SetScalarModeToUsePointData();
    d->mapper->SetColorModeToDirectScalars();
    d->mapper->ScalarVisibilityOn();
    d->actor->SetMapper(d->mapper);
    d->actor->GetProperty()->SetPointSize(d->point_size);
    d->actor->GetProperty()->LightingOff();  // flat colours, exactly the 2-D view's
    d->renderer->AddActor(d->actor);
    d->axes_mapper->SetInputData(d->axes);
    d->axes_actor->SetMapper(d->axes_mapper);
    d->axes_actor->GetProperty()->LightingOff();
    d->axes_actor->GetProperty()->SetLineWidth(1.5f);
    d->axes_actor->VisibilityOff();
    d->renderer->AddActor(d->axes_actor);
    auto* camera = d->renderer->GetActiveCamera();
    camera->SetPosition(0.0, 0.0, 1.0);
    camera->SetFocalPoint(0.0, 0.0, 0.0);
    camera->SetViewUp(0.0, 1.0, 0.0);
    d->labels = new Embedding3DAxisLabels(this);
    connect(this, &Embedding3DView::frameRendered, d->labels, [this] { d->labels->update(); });

    d->interactor->SetRenderWindow(window);
    d->interactor->EnableRenderOff();
    d->render_observer = d->interactor->AddObserver(vtkCommand::RenderEvent, d.get(), &Private::onInteractorRender);
    d->interactor->SetInteractorStyle(d->style);
    d->interactor->Initialize();
}

Embedding3DView::~Embedding3DView() {
    if (d->gl_ready) {
        makeCurrent();
        releaseGl();
        doneCurrent();
    }
    d->interactor->RemoveObserver(d->render_observer);
    for (const unsigned long id : d->window_observers) d->window->RemoveObserver(id);
    d->window_observers.clear();
    d->context = nullptr;
    d->surface = nullptr;
}

// ---- data -----------------------------------------------------------------------------

void Embedding3DView::setPositions(std::vector<float> xyz, bool fit_camera) {
    const auto count = static_cast<std::int64_t>(xyz.size() / 3);
    xyz.resize(static_cast<std::size_t>(count) * 3);
    const bool same_cells = count == d->num_points;
    d->xyz = std::move(xyz);
    d->num_points = count;
    d->positions_dirty = true;
    if (!same_cells) {
        d->colors.assign(static_cast<std::size_t>(count), k_default_point_color);
        d->visible = count;
        d->colors_dirty = true;
    }
    if (!same_cells || fit_camera) d->fit_pending = true;
    update();
}

bool Embedding3DView::setAttributes(std::span<const PointAttribute> attributes) {
    if (static_cast<std::int64_t>(attributes.size()) != d->num_points) return false;
    std::int64_t visible = 0;
    for (std::size_t cell = 0; cell < attributes.size(); ++cell) {
        d->colors[cell] = attributes[cell].color;
        visible += attributes[cell].color.a != 0 ? 1 : 0;
    }
    d->visible = visible;
    d->colors_dirty = true;
    update();
    return true;
}

void Embedding3DView::setSourceName(const QString& name) {
    d->source_name = name;
    d->axis_names = axis_names_of(name);
    d->labels->update();
}

QStringList Embedding3DView::axisNames() const { return d->have_axes ? d->axis_names : QStringList(); }

std::vector<QPointF> Embedding3DView::axisLabelPositions() const {
    if (!d->have_axes) return {};
    const double ratio = devicePixelRatioF();
    std::vector<QPointF> ends;
    for (std::size_t axis = 1; axis <= 3; ++axis) {
        const auto& point = d->axis_points[axis];
        d->renderer->SetWorldPoint(point[0], point[1], point[2], 1.0);
        d->renderer->WorldToDisplay();
        const double* display = d->renderer->GetDisplayPoint();  // device px, origin bottom-left
        ends.emplace_back(display[0] / ratio, height() - display[1] / ratio);
    }
    return ends;
}
QString Embedding3DView::sourceName() const { return d->source_name; }
std::int64_t Embedding3DView::numPoints() const { return d->num_points; }
std::int64_t Embedding3DView::visiblePoints() const { return d->visible; }

void Embedding3DView::setBackgroundColor(Rgba8 color) {
    d->background = color;
    d->renderer->SetBackground(color.r / 255.0, color.g / 255.0, color.b / 255.0);
    const Rgba8 ink = axis_color(color);
    d->axes_actor->GetProperty()->SetColor(ink.r / 255.0, ink.g / 255.0, ink.b / 255.0);
    update();
}

Rgba8 Embedding3DView::backgroundColor() const { return d->background; }

void Embedding3DView::setPointSize(float pixels) {
    d->point_size = std::clamp(pixels, 1.0f, 64.0f);
    d->actor->GetProperty()->SetPointSize(d->point_size);
    update();
}

float Embedding3DView::pointSize() const { return d->point_size; }

void Embedding3DView::resetCamera() {
    d->fit_pending = true;
    update();
}

std::array<double, 3> Embedding3DView::cameraPosition() const {
    const double* position = d->renderer->GetActiveCamera()->GetPosition();
    return {position[0], position[1], position[2]};
}

std::array<double, 3> Embedding3DView::cameraFocalPoint() const {
    const double* focal = d->renderer->GetActiveCamera()->GetFocalPoint();
    return {focal[0], focal[1], focal[2]};
}

std::int64_t Embedding3DView::renderCount() const { return d->renders; }
QSize Embedding3DView::sizeHint() const { return {360, 320}; }

/// Moves the stored positions and colours into the VTK poly data: all cells are points,
/// only the visible ones get a vertex cell (so hidden cells are not drawn at all).
void Embedding3DView::syncScene() {
    if (d->positions_dirty) {
        vtkNew<vtkFloatArray> coordinates;
        coordinates->SetNumberOfComponents(3);
        coordinates->SetNumberOfTuples(d->num_points);
        if (d->num_points > 0)
            std::memcpy(coordinates->GetPointer(0), d->xyz.data(), d->xyz.size() * sizeof(float));
        vtkNew<vtkPoints> points;
        points->SetData(coordinates);
        d->cloud->SetPoints(points);
        d->positions_dirty = false;
        updateAxes();
    }
    if (d->colors_dirty) {
        vtkNew<vtkUnsignedCharArray> rgb;
        rgb->SetName("colors");
        rgb->SetNumberOfComponents(3);
        rgb->SetNumberOfTuples(d->num_points);
        unsigned char* out = rgb->GetPointer(0);
        vtkNew<vtkIdTypeArray> vertices;
        vertices->Allocate(d->visible);
        for (std::int64_t cell = 0; cell < d->num_points; ++cell) {
            const Rgba8& color = d->colors[static_cast<std::size_t>(cell)];
            out[3 * cell] = color.r;
            out[3 * cell + 1] = color.g;
            out[3 * cell + 2] = color.b;
            if (color.a != 0) vertices->InsertNextValue(cell);
        }
        vtkNew<vtkCellArray> verts;
        verts->SetData(1, vertices);  // one point per vertex cell
        d->cloud->SetVerts(verts);
        d->cloud->GetPointData()->SetScalars(rgb);
        d->colors_dirty = false;
    }
    // (Only new arrays mark the poly data modified: a camera-only frame re-uploads nothing.)
    if (d->fit_pending && d->num_points > 0) {
        // Fit on every cell, hidden ones included, so that filtering does not move the camera.
        double bounds[6];
        d->cloud->GetPoints()->GetBounds(bounds);
        auto* camera = d->renderer->GetActiveCamera();
        camera->SetPosition(0.0, 0.0, 1.0);
        camera->SetFocalPoint(0.0, 0.0, 0.0);
        camera->SetViewUp(0.0, 1.0, 0.0);
        d->renderer->ResetCamera(bounds);
        d->fit_pending = false;
    }
}

// ---- GL -------------------------------------------------------------------------------

void Embedding3DView::initializeGL() {
    d->context = context();
    d->surface = context()->surface();
    connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &Embedding3DView::releaseGl,
            static_cast<Qt::ConnectionType>(Qt::DirectConnection | Qt::UniqueConnection));
    // A new context (first show, or the widget moved to another window): VTK loads its
    // GL entry points and builds its state for it.
    d->window->SetOwnContext(false);
    d->window->SetReadyForRendering(true);
    d->window->OpenGLInitContext();
    d->gl_ready = true;
    const QSize device = size() * devicePixelRatioF();
    d->interactor->UpdateSize(device.width(), device.height());
}

void Embedding3DView::releaseGl() {
    if (!d->gl_ready) return;
    // The context is still valid here (aboutToBeDestroyed, or the destructor after makeCurrent).
    d->window->Finalize();
    d->window->SetReadyForRendering(false);
    d->gl_ready = false;
}

/// Three axis lines from the points' minimum corner to their maximum along x, y and z.
void Embedding3DView::updateAxes() {
    d->have_axes = false;
    double low[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, high[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (std::int64_t cell = 0; cell < d->num_points; ++cell)
        for (int axis = 0; axis < 3; ++axis) {
            const double value = d->xyz[static_cast<std::size_t>(3 * cell + axis)];
            if (!std::isfinite(value)) continue;
            low[axis] = std::min(low[axis], value);
            high[axis] = std::max(high[axis], value);
        }
    vtkNew<vtkPoints> points;
    vtkNew<vtkCellArray> lines;
    if (low[0] <= high[0] && low[1] <= high[1] && low[2] <= high[2]) {
        d->axis_points[0] = {low[0], low[1], low[2]};
        for (int axis = 0; axis < 3; ++axis) {
            auto end = d->axis_points[0];
            end[static_cast<std::size_t>(axis)] = high[axis];
            d->axis_points[static_cast<std::size_t>(axis) + 1] = end;
        }
        for (const auto& point : d->axis_points) points->InsertNextPoint(point.data());
        for (vtkIdType axis = 1; axis <= 3; ++axis) {
            const vtkIdType ends[2] = {0, axis};
            lines->InsertNextCell(2, ends);
        }
        d->have_axes = true;
    }
    d->axes->SetPoints(points);
    d->axes->SetLines(lines);
    d->axes_actor->SetVisibility(d->have_axes ? 1 : 0);
    d->labels->update();
}

void Embedding3DView::resizeGL(int, int) {
    d->labels->setGeometry(rect());
    const QSize device = size() * devicePixelRatioF();
    d->interactor->UpdateSize(device.width(), device.height());
}

void Embedding3DView::paintGL() {
    if (!d->gl_ready) return;
    syncScene();
    const QSize device = size() * devicePixelRatioF();
    const int* window_size = d->window->GetSize();
    if (window_size[0] != device.width() || window_size[1] != device.height())
        d->interactor->UpdateSize(device.width(), device.height());
    d->window->Render();
    ++d->renders;

    // VTK's display framebuffer -> the widget's framebuffer.
    QOpenGLExtraFunctions* gl = d->context->extraFunctions();
    gl->glBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
    const GLenum attachment = GL_COLOR_ATTACHMENT0;
    gl->glDrawBuffers(1, &attachment);
    d->window->BlitDisplayFramebuffer(0, 0, 0, device.width(), device.height(), 0, 0, device.width(),
                                      device.height(), GL_COLOR_BUFFER_BIT, GL_NEAREST);
    // Opaque alpha: VTK's framebuffer may carry alpha < 1, which the window would
    // composite with whatever is behind it (Mesa).
    GLboolean mask[4];
    gl->glGetBooleanv(GL_COLOR_WRITEMASK, mask);
    GLfloat clear[4];
    gl->glGetFloatv(GL_COLOR_CLEAR_VALUE, clear);
    const GLboolean scissor = gl->glIsEnabled(GL_SCISSOR_TEST);
    gl->glDisable(GL_SCISSOR_TEST);
    gl->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
    gl->glClearColor(0.0f, 0.0f, 0.0f, 1.0f);
    gl->glClear(GL_COLOR_BUFFER_BIT);
    gl->glColorMask(mask[0], mask[1], mask[2], mask[3]);
    gl->glClearColor(clear[0], clear[1], clear[2], clear[3]);
    if (scissor) gl->glEnable(GL_SCISSOR_TEST);
    emit frameRendered();
}

// ---- interaction: Qt events -> the VTK interactor (trackball camera style) --------------

namespace {

/// Sets the interactor's event position (VTK's origin is the bottom-left) and modifiers.
void set_event_information(vtkRenderWindowInteractor* interactor, const QWidget* widget, QPointF position,
                           Qt::KeyboardModifiers modifiers, int repeat = 0) {
    const double ratio = widget->devicePixelRatioF();
    interactor->SetEventInformationFlipY(static_cast<int>(position.x() * ratio + 0.5),
                                         static_cast<int>(position.y() * ratio + 0.5),
                                         (modifiers & Qt::ControlModifier) ? 1 : 0,
                                         (modifiers & Qt::ShiftModifier) ? 1 : 0, 0, repeat);
    interactor->SetAltKey((modifiers & Qt::AltModifier) ? 1 : 0);
}

}  // namespace

void Embedding3DView::mousePressEvent(QMouseEvent* event) {
    set_event_information(d->interactor, this, event->position(), event->modifiers());
    switch (event->button()) {
        case Qt::LeftButton: d->interactor->InvokeEvent(vtkCommand::LeftButtonPressEvent); break;
        case Qt::MiddleButton: d->interactor->InvokeEvent(vtkCommand::MiddleButtonPressEvent); break;
        case Qt::RightButton: d->interactor->InvokeEvent(vtkCommand::RightButtonPressEvent); break;
        default: QOpenGLWidget::mousePressEvent(event); return;
    }
    event->accept();
}

void Embedding3DView::mouseReleaseEvent(QMouseEvent* event) {
    set_event_information(d->interactor, this, event->position(), event->modifiers());
    switch (event->button()) {
        case Qt::LeftButton: d->interactor->InvokeEvent(vtkCommand::LeftButtonReleaseEvent); break;
        case Qt::MiddleButton: d->interactor->InvokeEvent(vtkCommand::MiddleButtonReleaseEvent); break;
        case Qt::RightButton: d->interactor->InvokeEvent(vtkCommand::RightButtonReleaseEvent); break;
        default: QOpenGLWidget::mouseReleaseEvent(event); return;
    }
    event->accept();
}

void Embedding3DView::mouseMoveEvent(QMouseEvent* event) {
    set_event_information(d->interactor, this, event->position(), event->modifiers());
    d->interactor->InvokeEvent(vtkCommand::MouseMoveEvent);
    event->accept();
}

void Embedding3DView::wheelEvent(QWheelEvent* event) {
    set_event_information(d->interactor, this, event->position(), event->modifiers());
    const int delta = event->angleDelta().y();
    if (delta > 0) d->interactor->InvokeEvent(vtkCommand::MouseWheelForwardEvent);
    else if (delta < 0) d->interactor->InvokeEvent(vtkCommand::MouseWheelBackwardEvent);
    event->accept();
}

void Embedding3DView::keyPressEvent(QKeyEvent* event) {
    // Only 'r' (fit), as in VTK's own styles; VTK's other keys (wireframe, quit, stereo)
    // make no sense for a point cloud inside the application.
    if (event->key() == Qt::Key_R || event->key() == Qt::Key_Home) {
        resetCamera();
        event->accept();
        return;
    }
    QOpenGLWidget::keyPressEvent(event);
}

void Embedding3DView::enterEvent(QEnterEvent* event) {
    set_event_information(d->interactor, this, event->position(), event->modifiers());
    d->interactor->InvokeEvent(vtkCommand::EnterEvent);
    QOpenGLWidget::enterEvent(event);
}

void Embedding3DView::leaveEvent(QEvent* event) {
    d->interactor->InvokeEvent(vtkCommand::LeaveEvent);
    QOpenGLWidget::leaveEvent(event);
}

}  // namespace fathom::ui
