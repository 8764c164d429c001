#include "ui/GlShaders.hpp"

#include <QFile>
#include <QOpenGLShaderProgram>

// The resource file is compiled into the fathom_ui static library; a static library's
// resources must be registered explicitly (Qt's Q_INIT_RESOURCE, outside any namespace).
static void fathom_register_shader_resources() { Q_INIT_RESOURCE(fathom); }

namespace fathom::ui {

QString shader_source(const QString& name) {
    static const bool registered = (fathom_register_shader_resources(), true);
    (void)registered;
    QFile file(QStringLiteral(":/shaders/") + name);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(file.readAll());
}

bool build_program(QOpenGLShaderProgram& program, const QString& vertex, const QString& fragment, bool gles,
                   QString* error) {
    const QString prefix = gles ? QStringLiteral("#version 300 es\nprecision highp float;\nprecision highp int;\n")
                                : QStringLiteral("#version 330 core\n");
    auto fail = [&](const QString& what) {
        if (error) *error = what;
        return false;
    };
    const QString vertex_source = shader_source(vertex);
    const QString fragment_source = shader_source(fragment);
    if (vertex_source.isEmpty()) return fail(QStringLiteral("missing shader resource :/shaders/") + vertex);
    if (fragment_source.isEmpty()) return fail(QStringLiteral("missing shader resource :/shaders/") + fragment);
    if (!program.addShaderFromSourceCode(QOpenGLShader::Vertex, prefix + vertex_source))
        return fail(vertex + QStringLiteral(": ") + program.log());
    if (!program.addShaderFromSourceCode(QOpenGLShader::Fragment, prefix + fragment_source))
        return fail(fragment + QStringLiteral(": ") + program.log());
    if (!program.link()) return fail(vertex + QStringLiteral(" + ") + fragment + QStringLiteral(": ") + program.log());
    return true;
}

}  // namespace fathom::ui
