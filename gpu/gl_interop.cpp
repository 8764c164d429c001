#include "gpu/gl_interop.hpp"

#include <GL/gl.h>
// GL first: cuda_gl_interop.h needs the GL types.
#include <cuda_gl_interop.h>
#include <cuda_runtime_api.h>

namespace fathom::gpu {

namespace {

/// Copies through a temporary registration of the buffer: registered, mapped, copied,
/// unmapped and unregistered on every write, so a buffer the renderer reallocates or
/// deletes (glBufferData, glDeleteBuffers) never leaves a stale registration behind.
/// Every CUDA call is checked; any failure declines (the renderer then uses GL).
class CudaGlBufferWriter final : public GlBufferWriter {
public:
    explicit CudaGlBufferWriter(int device) : m_device(device) {}

    bool write(unsigned int buffer, std::size_t offset, const void* source, std::size_t bytes) noexcept override {
        if (bytes == 0) return true;
        if (cudaSetDevice(m_device) != cudaSuccess) return fail();
        cudaGraphicsResource* resource = nullptr;
        if (cudaGraphicsGLRegisterBuffer(&resource, buffer, cudaGraphicsRegisterFlagsWriteDiscard) != cudaSuccess) return fail();
        bool copied = false;
        if (cudaGraphicsMapResources(1, &resource, nullptr) == cudaSuccess) {
            void* mapped = nullptr;
            std::size_t size = 0;
            if (cudaGraphicsResourceGetMappedPointer(&mapped, &size, resource) == cudaSuccess && offset + bytes <= size) {
                // cudaMemcpyDefault: a host source is uploaded, a device source copied
                // device to device (unified addressing tells them apart).
                copied = cudaMemcpy(static_cast<char*>(mapped) + offset, source, bytes, cudaMemcpyDefault) == cudaSuccess;
            }
            copied = cudaGraphicsUnmapResources(1, &resource, nullptr) == cudaSuccess && copied;
        }
        copied = cudaGraphicsUnregisterResource(resource) == cudaSuccess && copied;
        return copied ? true : fail();
    }

private:
    bool fail() noexcept {
        cudaGetLastError();  // clear a non-sticky error so that later CUDA calls start clean
        return false;
    }
    int m_device = 0;
};

}  // namespace

std::unique_ptr<GlBufferWriter> make_gl_buffer_writer() {
    unsigned int count = 0;
    int devices[4] = {};
    if (cudaGLGetDevices(&count, devices, 4, cudaGLDeviceListAll) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return nullptr;
    }
    return std::make_unique<CudaGlBufferWriter>(devices[0]);
}

}  // namespace fathom::gpu
