#include "ui/ImGuiLayer.hpp"

#include <imgui.h>

#include <QOpenGLExtraFunctions>
#include <QOpenGLShaderProgram>
#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "ui/GlShaders.hpp"

namespace fathom::ui {

namespace {

struct QueuedButton {
    int button;
    bool down;
};

// Qt key -> ImGuiKey_ (the legacy API indexes io.KeysDown by our own "native" code;
// we use the ImGuiKey_ value itself as that code).
int imgui_key_of(int qt_key) {
    switch (qt_key) {
        case Qt::Key_Tab: return ImGuiKey_Tab;
        case Qt::Key_Left: return ImGuiKey_LeftArrow;
        case Qt::Key_Right: return ImGuiKey_RightArrow;
        case Qt::Key_Up: return ImGuiKey_UpArrow;
        case Qt::Key_Down: return ImGuiKey_DownArrow;
        case Qt::Key_PageUp: return ImGuiKey_PageUp;
        case Qt::Key_PageDown: return ImGuiKey_PageDown;
        case Qt::Key_Home: return ImGuiKey_Home;
        case Qt::Key_End: return ImGuiKey_End;
        case Qt::Key_Insert: return ImGuiKey_Insert;
        case Qt::Key_Delete: return ImGuiKey_Delete;
        case Qt::Key_Backspace: return ImGuiKey_Backspace;
        case Qt::Key_Space: return ImGuiKey_Space;
        case Qt::Key_Return: return ImGuiKey_Enter;
        case Qt::Key_Enter: return ImGuiKey_KeyPadEnter;
        case Qt::Key_Escape: return ImGuiKey_Escape;
        case Qt::Key_A: return ImGuiKey_A;
        case Qt::Key_C: return ImGuiKey_C;
        case Qt::Key_V: return ImGuiKey_V;
        case Qt::Key_X: return ImGuiKey_X;
        case Qt::Key_Y: return ImGuiKey_Y;
        case Qt::Key_Z: return ImGuiKey_Z;
        default: return -1;
    }
}

}  // namespace

struct ImGuiLayer::Private {
    ImGuiContext* context = nullptr;
    QOpenGLExtraFunctions* gl = nullptr;
    QOpenGLShaderProgram program;
    GLuint font_texture = 0;
    GLuint vertex_array = 0;
    GLuint vertex_buffer = 0;
    GLuint index_buffer = 0;
    bool ready = false;

    QPointF mouse_position{-1.0, -1.0};
    bool mouse_inside = false;
    bool button_down[3] = {false, false, false};
    std::deque<QueuedButton> buttons;
    float wheel = 0.0f, wheel_horizontal = 0.0f;
    struct QueuedKey {
        int key;
        bool down;
    };
    std::deque<QueuedKey> keys;
    QString text;
    bool ctrl = false, shift = false, alt = false;
    bool wants_mouse = false, wants_keyboard = false;

    struct ContextScope {
        ImGuiContext* previous;
        explicit ContextScope(ImGuiContext* context) : previous(ImGui::GetCurrentContext()) {
            ImGui::SetCurrentContext(context);
        }
        ~ContextScope() { ImGui::SetCurrentContext(previous); }
    };
};

ImGuiLayer::ImGuiLayer() : d(std::make_unique<Private>()) {
    ImGuiContext* previous = ImGui::GetCurrentContext();
    d->context = ImGui::CreateContext();
    ImGui::SetCurrentContext(d->context);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // no imgui.ini next to the user's files
    io.LogFilename = nullptr;
    io.BackendPlatformName = "fathom_qt";
    io.BackendRendererName = "fathom_gl";
    for (int key = 0; key < ImGuiKey_COUNT; ++key) io.KeyMap[key] = key;
    ImGui::StyleColorsDark();
    ImGui::GetStyle().WindowRounding = 4.0f;
    ImGui::GetStyle().WindowBorderSize = 0.0f;
    ImGui::SetCurrentContext(previous);
}

ImGuiLayer::~ImGuiLayer() {
    // GL objects must have been released by the owner (with its context current).
    ImGui::DestroyContext(d->context);
}

ImGuiContext* ImGuiLayer::context() const noexcept { return d->context; }
bool ImGuiLayer::gl_ready() const noexcept { return d->ready; }
bool ImGuiLayer::wants_mouse() const noexcept { return d->wants_mouse; }
bool ImGuiLayer::wants_keyboard() const noexcept { return d->wants_keyboard; }
bool ImGuiLayer::has_pending_input() const noexcept { return !d->buttons.empty() || !d->keys.empty(); }

void ImGuiLayer::set_light_style(bool light) {
    Private::ContextScope scope(d->context);
    if (light) ImGui::StyleColorsLight();
    else ImGui::StyleColorsDark();
    ImGui::GetStyle().WindowRounding = 4.0f;
    ImGui::GetStyle().WindowBorderSize = light ? 1.0f : 0.0f;
}

bool ImGuiLayer::initialize_gl(QOpenGLExtraFunctions* gl, bool gles, QString* error) {
    release_gl();
    d->gl = gl;
    if (!build_program(d->program, QStringLiteral("imgui.vert"), QStringLiteral("imgui.frag"), gles, error))
        return false;
    Private::ContextScope scope(d->context);
    ImGuiIO& io = ImGui::GetIO();
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);
    gl->glGenTextures(1, &d->font_texture);
    gl->glBindTexture(GL_TEXTURE_2D, d->font_texture);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    gl->glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    gl->glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    gl->glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(static_cast<std::uintptr_t>(d->font_texture)));

    gl->glGenVertexArrays(1, &d->vertex_array);
    gl->glGenBuffers(1, &d->vertex_buffer);
    gl->glGenBuffers(1, &d->index_buffer);
    gl->glBindVertexArray(d->vertex_array);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->vertex_buffer);
    gl->glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, d->index_buffer);
    gl->glEnableVertexAttribArray(0);
    gl->glEnableVertexAttribArray(1);
    gl->glEnableVertexAttribArray(2);
    const GLsizei stride = sizeof(ImDrawVert);
    gl->glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, stride,
                              reinterpret_cast<const void*>(offsetof(ImDrawVert, pos)));
    gl->glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, stride,
                              reinterpret_cast<const void*>(offsetof(ImDrawVert, uv)));
    gl->glVertexAttribPointer(2, 4, GL_UNSIGNED_BYTE, GL_TRUE, stride,
                              reinterpret_cast<const void*>(offsetof(ImDrawVert, col)));
    gl->glBindVertexArray(0);
    d->ready = true;
    return true;
}

void ImGuiLayer::release_gl() {
    if (!d->gl) return;
    if (d->font_texture) d->gl->glDeleteTextures(1, &d->font_texture);
    if (d->vertex_buffer) d->gl->glDeleteBuffers(1, &d->vertex_buffer);
    if (d->index_buffer) d->gl->glDeleteBuffers(1, &d->index_buffer);
    if (d->vertex_array) d->gl->glDeleteVertexArrays(1, &d->vertex_array);
    d->font_texture = d->vertex_buffer = d->index_buffer = d->vertex_array = 0;
    d->program.removeAllShaders();
    d->ready = false;
    d->gl = nullptr;
}

void ImGuiLayer::mouse_moved(QPointF position) {
    d->mouse_position = position;
    d->mouse_inside = true;
}

void ImGuiLayer::mouse_button(int button, bool down, QPointF position) {
    if (button < 0 || button > 2) return;
    d->mouse_position = position;
    d->mouse_inside = true;
    d->buttons.push_back({button, down});
}

void ImGuiLayer::mouse_wheel(float vertical_steps, float horizontal_steps) {
    d->wheel += vertical_steps;
    d->wheel_horizontal += horizontal_steps;
}

void ImGuiLayer::mouse_left() { d->mouse_inside = false; }

void ImGuiLayer::key(int qt_key, bool down, bool ctrl, bool shift, bool alt, const QString& text) {
    d->ctrl = ctrl;
    d->shift = shift;
    d->alt = alt;
    const int key = imgui_key_of(qt_key);
    if (key >= 0) d->keys.push_back({key, down});
    if (down && !text.isEmpty() && !ctrl) d->text += text;
}

void ImGuiLayer::new_frame(QSize logical_size, double device_pixel_ratio, double delta_seconds) {
    ImGui::SetCurrentContext(d->context);
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(static_cast<float>(logical_size.width()), static_cast<float>(logical_size.height()));
    io.DisplayFramebufferScale = ImVec2(static_cast<float>(device_pixel_ratio), static_cast<float>(device_pixel_ratio));
    io.DeltaTime = static_cast<float>(std::clamp(delta_seconds, 1e-4, 0.25));
    io.MousePos = d->mouse_inside ? ImVec2(static_cast<float>(d->mouse_position.x()),
                                           static_cast<float>(d->mouse_position.y()))
                                  : ImVec2(-FLT_MAX, -FLT_MAX);
    // At most one transition per button per frame: the latch for quick clicks.
    bool changed[3] = {false, false, false};
    for (auto it = d->buttons.begin(); it != d->buttons.end();) {
        if (changed[it->button]) {
            ++it;
            continue;
        }
        if (d->button_down[it->button] != it->down) changed[it->button] = true;
        d->button_down[it->button] = it->down;
        it = d->buttons.erase(it);
    }
    for (int button = 0; button < 3; ++button) io.MouseDown[button] = d->button_down[button];
    io.MouseWheel = d->wheel;
    io.MouseWheelH = d->wheel_horizontal;
    d->wheel = d->wheel_horizontal = 0.0f;
    bool key_changed[ImGuiKey_COUNT] = {};
    for (auto it = d->keys.begin(); it != d->keys.end();) {
        if (key_changed[it->key]) {
            ++it;
            continue;
        }
        key_changed[it->key] = io.KeysDown[it->key] != it->down;
        io.KeysDown[it->key] = it->down;
        it = d->keys.erase(it);
    }
    io.KeyCtrl = d->ctrl;
    io.KeyShift = d->shift;
    io.KeyAlt = d->alt;
    if (!d->text.isEmpty()) {
        io.AddInputCharactersUTF8(d->text.toUtf8().constData());
        d->text.clear();
    }
    ImGui::NewFrame();
}

void ImGuiLayer::render(QSize framebuffer_size) {
    ImGui::SetCurrentContext(d->context);
    ImGui::Render();
    ImGuiIO& io = ImGui::GetIO();
    d->wants_mouse = io.WantCaptureMouse;
    d->wants_keyboard = io.WantCaptureKeyboard;
    ImDrawData* data = ImGui::GetDrawData();
    if (!d->ready || !data || data->CmdListsCount == 0) return;
    QOpenGLExtraFunctions* gl = d->gl;
    const int fb_width = framebuffer_size.width(), fb_height = framebuffer_size.height();
    if (fb_width <= 0 || fb_height <= 0) return;

    gl->glEnable(GL_BLEND);
    gl->glBlendEquation(GL_FUNC_ADD);
    gl->glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    gl->glDisable(GL_CULL_FACE);
    gl->glDisable(GL_DEPTH_TEST);
    gl->glEnable(GL_SCISSOR_TEST);
    gl->glViewport(0, 0, fb_width, fb_height);

    const float left = data->DisplayPos.x, right = data->DisplayPos.x + data->DisplaySize.x;
    const float top = data->DisplayPos.y, bottom = data->DisplayPos.y + data->DisplaySize.y;
    const float projection[16] = {
        2.0f / (right - left), 0.0f, 0.0f, 0.0f,  //
        0.0f, 2.0f / (top - bottom), 0.0f, 0.0f,  //
        0.0f, 0.0f, -1.0f, 0.0f,                  //
        (right + left) / (left - right), (top + bottom) / (bottom - top), 0.0f, 1.0f,
    };
    d->program.bind();
    gl->glUniformMatrix4fv(d->program.uniformLocation("u_projection"), 1, GL_FALSE, projection);
    gl->glUniform1i(d->program.uniformLocation("u_texture"), 0);
    gl->glActiveTexture(GL_TEXTURE0);
    gl->glBindVertexArray(d->vertex_array);
    gl->glBindBuffer(GL_ARRAY_BUFFER, d->vertex_buffer);

    const ImVec2 clip_offset = data->DisplayPos;
    const ImVec2 clip_scale = data->FramebufferScale;
    for (int list_index = 0; list_index < data->CmdListsCount; ++list_index) {
        const ImDrawList* list = data->CmdLists[list_index];
        gl->glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(list->VtxBuffer.Size) * sizeof(ImDrawVert),
                         list->VtxBuffer.Data, GL_STREAM_DRAW);
        gl->glBufferData(GL_ELEMENT_ARRAY_BUFFER, static_cast<GLsizeiptr>(list->IdxBuffer.Size) * sizeof(ImDrawIdx),
                         list->IdxBuffer.Data, GL_STREAM_DRAW);
        for (int command_index = 0; command_index < list->CmdBuffer.Size; ++command_index) {
            const ImDrawCmd& command = list->CmdBuffer[command_index];
            if (command.UserCallback) {
                command.UserCallback(list, &command);
                continue;
            }
            const float clip_min_x = (command.ClipRect.x - clip_offset.x) * clip_scale.x;
            const float clip_min_y = (command.ClipRect.y - clip_offset.y) * clip_scale.y;
            const float clip_max_x = (command.ClipRect.z - clip_offset.x) * clip_scale.x;
            const float clip_max_y = (command.ClipRect.w - clip_offset.y) * clip_scale.y;
            if (clip_max_x <= clip_min_x || clip_max_y <= clip_min_y) continue;
            gl->glScissor(static_cast<GLint>(clip_min_x), static_cast<GLint>(fb_height - clip_max_y),
                          static_cast<GLsizei>(clip_max_x - clip_min_x), static_cast<GLsizei>(clip_max_y - clip_min_y));
            gl->glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(reinterpret_cast<std::uintptr_t>(command.GetTexID())));
            gl->glDrawElements(GL_TRIANGLES, static_cast<GLsizei>(command.ElemCount),
                               sizeof(ImDrawIdx) == 2 ? GL_UNSIGNED_SHORT : GL_UNSIGNED_INT,
                               reinterpret_cast<const void*>(command.IdxOffset * sizeof(ImDrawIdx)));
        }
    }
    gl->glBindVertexArray(0);
    gl->glDisable(GL_SCISSOR_TEST);
    gl->glDisable(GL_BLEND);
    d->program.release();
}

}  // namespace fathom::ui
