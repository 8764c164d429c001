#pragma once
/// Test hook of the CUDA backend: simulated device out-of-memory. Compiles without
/// nvcc and exists in every build (gpu/errors.cpp), so tests of the fallback paths run
/// on a real device without filling its memory.
namespace fathom::gpu::testing {

/// The next `count` device allocations of the CUDA backend in this process fail as
/// cudaMalloc does when it returns cudaErrorMemoryAllocation (they throw
/// gpu::OutOfMemory and allocate nothing). count <= 0 disarms. Thread-safe.
void fail_next_device_allocations(int count);

/// Consumes one armed failure: true when the calling allocation must fail. Called by
/// the backend's allocator before every cudaMalloc.
bool take_injected_allocation_failure() noexcept;

/// Armed failures not consumed yet.
int pending_injected_allocation_failures() noexcept;

}  // namespace fathom::gpu::testing
