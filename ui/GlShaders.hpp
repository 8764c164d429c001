#pragma once
/// Loads the GLSL shaders compiled into the binary from resources/fathom.qrc.
#include <QString>

class QOpenGLShaderProgram;

namespace fathom::ui {

/// Compiles and links `program` from the resource files ":/shaders/<vertex>" and
/// ":/shaders/<fragment>". The files carry no #version line: "#version 330 core" (desktop
/// GL) or "#version 300 es" with default precision (GLES) is prepended. On failure
/// returns false and, when `error` is given, the shader log naming the file.
bool build_program(QOpenGLShaderProgram& program, const QString& vertex, const QString& fragment, bool gles,
                   QString* error = nullptr);

/// The text of resource ":/shaders/<name>" (empty when missing).
QString shader_source(const QString& name);

}  // namespace fathom::ui
