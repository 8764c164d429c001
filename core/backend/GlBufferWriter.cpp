#include "core/backend/GlBufferWriter.hpp"

#include <mutex>

namespace fathom {

namespace {

std::mutex g_factory_mutex;
GlBufferWriterFactory g_factory;

}  // namespace

void set_gl_buffer_writer_factory(GlBufferWriterFactory factory) {
    const std::lock_guard lock(g_factory_mutex);
    g_factory = std::move(factory);
}

std::unique_ptr<GlBufferWriter> make_gl_buffer_writer() {
    GlBufferWriterFactory factory;
    {
        const std::lock_guard lock(g_factory_mutex);
        factory = g_factory;
    }
    if (!factory) return nullptr;
    return factory();
}

}  // namespace fathom
