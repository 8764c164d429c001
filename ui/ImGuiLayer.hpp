#pragma once
/// Dear ImGui (1.86, legacy input API) inside a QOpenGLWidget: one ImGui context, Qt
/// input mapped onto ImGuiIO, and a small renderer of ImGui's draw lists on our own GL
/// code (shaders from resources/shaders/imgui.*).
///
/// Input events are queued and applied at the next frame, at most one press/release
/// per mouse button per frame, so that a click whose press and release arrive between
/// two frames still registers (ImGui sees "down" on one frame and "up" on the next).
#include <QPointF>
#include <QSize>
#include <QString>
#include <memory>

class QOpenGLExtraFunctions;
struct ImGuiContext;

namespace fathom::ui {

/// The overlay's ImGui state and renderer. Methods touching GL need the widget's
/// context current (initialize_gl, render, release_gl).
class ImGuiLayer {
public:
    ImGuiLayer();
    ~ImGuiLayer();
    ImGuiLayer(const ImGuiLayer&) = delete;
    ImGuiLayer& operator=(const ImGuiLayer&) = delete;

    /// Creates the font texture, shader program and buffers. False (with `error`) on failure.
    bool initialize_gl(QOpenGLExtraFunctions* gl, bool gles, QString* error = nullptr);
    /// Frees the GL objects (the context is about to go away).
    void release_gl();
    bool gl_ready() const noexcept;

    /// Mouse position in logical pixels (widget coordinates).
    void mouse_moved(QPointF position);
    /// `button`: 0 left, 1 right, 2 middle.
    void mouse_button(int button, bool down, QPointF position);
    /// Wheel steps (one notch = 1.0; positive = away from the user).
    void mouse_wheel(float vertical_steps, float horizontal_steps);
    void mouse_left();
    /// A Qt key (Qt::Key) going down or up, with the modifiers and the typed text.
    void key(int qt_key, bool down, bool ctrl, bool shift, bool alt, const QString& text);

    /// Input still queued for later frames (the widget should schedule another frame).
    bool has_pending_input() const noexcept;
    /// ImGui wants the mouse / keyboard (as of the last frame): do not pan or zoom.
    bool wants_mouse() const noexcept;
    bool wants_keyboard() const noexcept;

    /// Starts a frame: makes this layer's ImGui context current, applies queued input.
    void new_frame(QSize logical_size, double device_pixel_ratio, double delta_seconds);
    /// Ends the frame and draws it into the currently bound framebuffer.
    void render(QSize framebuffer_size);
    /// Use the light or the dark ImGui style.
    void set_light_style(bool light);

    ImGuiContext* context() const noexcept;

private:
    struct Private;
    std::unique_ptr<Private> d;
};

}  // namespace fathom::ui
