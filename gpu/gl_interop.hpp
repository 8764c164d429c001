#pragma once
/// CUDA-OpenGL interop for the plot (core/backend/GlBufferWriter.hpp): point positions
/// and colour attributes copied into the renderer's GL buffer objects by CUDA
/// (cudaGraphicsGLRegisterBuffer, map, cudaMemcpy, unmap) when the GL context runs on a
/// CUDA device. Public header: no CUDA or GL headers. Built with CUDA and the GUI
/// (FATHOM_HAVE_CUDA_GL); untested on a real GPU display so far: the tests exercise only
/// the declining path (software GL), and the renderer falls back to glBufferSubData on
/// any failure.
#include <memory>

#include "core/backend/GlBufferWriter.hpp"

namespace fathom::gpu {

/// A writer for the GL context current on the calling thread, or null when that
/// context is not on a CUDA device (cudaGLGetDevices finds none) or CUDA is unusable.
std::unique_ptr<GlBufferWriter> make_gl_buffer_writer();

}  // namespace fathom::gpu
