#pragma once
/// Writing plot data into OpenGL buffer objects through an accelerator's graphics
/// interop (the CUDA backend's cudaGraphicsGLRegisterBuffer path, gpu/gl_interop.hpp),
/// without the renderer depending on the accelerator's API. The application installs a
/// factory at start-up; the renderer asks for a writer once its GL context exists and
/// falls back to glBufferSubData whenever there is none or a write declines.
#include <cstddef>
#include <functional>
#include <memory>

namespace fathom {

/// Copies bytes into a GL buffer object of the GL context current on the calling
/// thread. One writer per GL context; used on that context's thread only.
class GlBufferWriter {
public:
    virtual ~GlBufferWriter() = default;
    /// Copies `bytes` bytes from `source` (host memory, or device memory of the
    /// writer's device) into GL buffer object `buffer` at byte `offset`; the buffer's
    /// storage must already hold offset + bytes bytes. Returns false, changing nothing,
    /// when it cannot (the caller then uploads through GL). Never throws.
    virtual bool write(unsigned int buffer, std::size_t offset, const void* source, std::size_t bytes) noexcept = 0;
};

/// Makes a writer for the GL context current on the calling thread, or null when the
/// context's GPU has no such path (e.g. a software renderer).
using GlBufferWriterFactory = std::function<std::unique_ptr<GlBufferWriter>()>;

/// Installs the factory (thread-safe; an empty function removes it).
void set_gl_buffer_writer_factory(GlBufferWriterFactory factory);

/// A writer from the installed factory, or null (no factory, or the factory declined).
std::unique_ptr<GlBufferWriter> make_gl_buffer_writer();

}  // namespace fathom
