#include "gpu/linear_algebra.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include "gpu/detail/device_array.hpp"
#include "gpu/detail/library_check.hpp"

namespace fathom::gpu {

namespace {

using detail::DeviceArray;

/// A stream, released on scope exit.
struct Stream {
    cudaStream_t stream = nullptr;
    Stream() { FATHOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
    ~Stream() {
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
};

/// A cuSOLVER dense handle on a stream, released on scope exit.
struct SolverHandle {
    cusolverDnHandle_t handle = nullptr;
    explicit SolverHandle(cudaStream_t stream) {
        FATHOM_CUSOLVER_CHECK(cusolverDnCreate(&handle));
        const cusolverStatus_t status = cusolverDnSetStream(handle, stream);
        if (status != CUSOLVER_STATUS_SUCCESS) {
            cusolverDnDestroy(handle);
            handle = nullptr;
            FATHOM_CUSOLVER_CHECK(status);
        }
    }
    ~SolverHandle() {
        if (handle != nullptr) cusolverDnDestroy(handle);
    }
    SolverHandle(const SolverHandle&) = delete;
    SolverHandle& operator=(const SolverHandle&) = delete;
};

/// y = A x by cuSPARSE SpMM (CSR, 64-bit indices, double), the matrix resident on its
/// device; the host vectors travel per product.
class CudaSparseMatrix final : public DeviceSparseMatrix {
public:
    CudaSparseMatrix(std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns,
                     std::span<const double> values, int device)
        : m_device(current(device)), m_rows(static_cast<std::int64_t>(offsets.size()) - 1),
          m_nnz(static_cast<std::int64_t>(values.size())) {
        try {
            create(offsets, columns, values);
        } catch (...) {
            release();
            throw;
        }
    }
    ~CudaSparseMatrix() override {
        cudaSetDevice(m_device);
        release();
    }
    CudaSparseMatrix(const CudaSparseMatrix&) = delete;
    CudaSparseMatrix& operator=(const CudaSparseMatrix&) = delete;

    void multiply(const double* x, double* y, int count) override;

private:
    /// Makes `device` current before the stream member is created on it.
    static int current(int device) {
        FATHOM_CUDA_CHECK(cudaSetDevice(device));
        return device;
    }
    void create(std::span<const std::int64_t> offsets, std::span<const std::int32_t> columns, std::span<const double> values) {
        const int device = m_device;
        const std::vector<std::int64_t> wide(columns.begin(), columns.end());
        m_offsets = detail::upload(offsets, device, m_stream.stream);
        m_columns = detail::upload(std::span<const std::int64_t>(wide), device, m_stream.stream);
        m_values = detail::upload(values, device, m_stream.stream);
        FATHOM_CUDA_CHECK(cudaStreamSynchronize(m_stream.stream));  // `wide` is released on return
        FATHOM_CUSPARSE_CHECK(cusparseCreate(&m_handle));
        FATHOM_CUSPARSE_CHECK(cusparseSetStream(m_handle, m_stream.stream));
        FATHOM_CUSPARSE_CHECK(cusparseCreateCsr(&m_matrix, m_rows, m_rows, m_nnz, m_offsets.data(), m_columns.data(),
                                                m_values.data(), CUSPARSE_INDEX_64I, CUSPARSE_INDEX_64I,
                                                CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    }
    void release() noexcept {
        if (m_matrix != nullptr) cusparseDestroySpMat(m_matrix);
        if (m_handle != nullptr) cusparseDestroy(m_handle);
        m_matrix = nullptr;
        m_handle = nullptr;
    }

    int m_device = 0;
    std::int64_t m_rows = 0, m_nnz = 0;
    Stream m_stream;
    DeviceArray<std::int64_t> m_offsets, m_columns;
    DeviceArray<double> m_values, m_x, m_y;
    DeviceArray<unsigned char> m_buffer;
    int m_buffer_count = -1;
    cusparseHandle_t m_handle = nullptr;
    cusparseSpMatDescr_t m_matrix = nullptr;
};

void CudaSparseMatrix::multiply(const double* x, double* y, int count) {
    {
        if (count < 1) throw std::invalid_argument("DeviceSparseMatrix::multiply: count must be >= 1");
        FATHOM_CUDA_CHECK(cudaSetDevice(m_device));
        const std::int64_t entries = m_rows * count;
        if (m_x.size() != entries) {
            m_x = DeviceArray<double>(entries, m_device);
            m_y = DeviceArray<double>(entries, m_device);
            m_buffer = DeviceArray<unsigned char>();
            m_buffer_count = -1;
        }
        const auto bytes = static_cast<std::size_t>(entries) * sizeof(double);
        if (entries > 0)
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(m_x.data(), x, bytes, cudaMemcpyHostToDevice, m_stream.stream));
        cusparseDnMatDescr_t dense_x = nullptr, dense_y = nullptr;
        FATHOM_CUSPARSE_CHECK(cusparseCreateDnMat(&dense_x, m_rows, count, std::max<std::int64_t>(1, m_rows), m_x.data(),
                                                  CUDA_R_64F, CUSPARSE_ORDER_COL));
        const cusparseStatus_t created = cusparseCreateDnMat(&dense_y, m_rows, count, std::max<std::int64_t>(1, m_rows),
                                                             m_y.data(), CUDA_R_64F, CUSPARSE_ORDER_COL);
        if (created != CUSPARSE_STATUS_SUCCESS) cusparseDestroyDnMat(dense_x);
        FATHOM_CUSPARSE_CHECK(created);
        try {
            const double one = 1.0, zero = 0.0;
            if (m_buffer_count != count) {
                std::size_t buffer_bytes = 0;
                FATHOM_CUSPARSE_CHECK(cusparseSpMM_bufferSize(m_handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                              CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m_matrix, dense_x, &zero,
                                                              dense_y, CUDA_R_64F, CUSPARSE_SPMM_CSR_ALG1, &buffer_bytes));
                m_buffer = DeviceArray<unsigned char>(static_cast<std::int64_t>(buffer_bytes), m_device);
                m_buffer_count = count;
            }
            // CSR_ALG1 (no transpose) gives the same result on every run.
            FATHOM_CUSPARSE_CHECK(cusparseSpMM(m_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                               &one, m_matrix, dense_x, &zero, dense_y, CUDA_R_64F, CUSPARSE_SPMM_CSR_ALG1,
                                               m_buffer.data()));
        } catch (...) {
            cusparseDestroyDnMat(dense_x);
            cusparseDestroyDnMat(dense_y);
            throw;
        }
        cusparseDestroyDnMat(dense_x);
        cusparseDestroyDnMat(dense_y);
        if (entries > 0)
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(y, m_y.data(), bytes, cudaMemcpyDeviceToHost, m_stream.stream));
        FATHOM_CUDA_CHECK(cudaStreamSynchronize(m_stream.stream));
    }
}

}  // namespace

void symmetric_top_eigenpairs(const double* matrix, std::int64_t n, int count, int device,
                              std::vector<double>& ascending_values, std::vector<double>& column_major_vectors,
                              JobContext& ctx) {
    if (n < 1 || n > std::numeric_limits<int>::max() || count < 1 || count > n)
        throw std::invalid_argument("gpu::symmetric_top_eigenpairs: " + std::to_string(count) + " eigenpairs of a " +
                                    std::to_string(n) + " x " + std::to_string(n) + " matrix");
    ctx.checkpoint();
    FATHOM_CUDA_CHECK(cudaSetDevice(device));
    Stream stream;
    SolverHandle solver(stream.stream);
    const int size = static_cast<int>(n);
    const auto entries = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    DeviceArray<double> a(static_cast<std::int64_t>(entries), device), w(n, device);
    DeviceArray<int> info(1, device);
    FATHOM_CUDA_CHECK(cudaMemcpyAsync(a.data(), matrix, entries * sizeof(double), cudaMemcpyHostToDevice, stream.stream));
    // Eigenvalues il..iu (1-based, ascending): the `count` largest.
    const int il = size - count + 1, iu = size;
    int found = 0, work_size = 0;
    FATHOM_CUSOLVER_CHECK(cusolverDnDsyevdx_bufferSize(solver.handle, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I,
                                                       CUBLAS_FILL_MODE_UPPER, size, a.data(), size, 0.0, 0.0, il, iu, &found,
                                                       w.data(), &work_size));
    DeviceArray<double> work(std::max(1, work_size), device);
    FATHOM_CUSOLVER_CHECK(cusolverDnDsyevdx(solver.handle, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I,
                                            CUBLAS_FILL_MODE_UPPER, size, a.data(), size, 0.0, 0.0, il, iu, &found, w.data(),
                                            work.data(), work_size, info.data()));
    int status = 0;
    FATHOM_CUDA_CHECK(cudaMemcpyAsync(&status, info.data(), sizeof(int), cudaMemcpyDeviceToHost, stream.stream));
    FATHOM_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
    if (status != 0 || found != count)
        throw CudaError("cusolverDnDsyevdx", "info " + std::to_string(status) + ", " + std::to_string(found) + " of " +
                                                std::to_string(count) + " eigenpairs",
                        status, __FILE__, __LINE__, "cuda:" + std::to_string(device));
    ascending_values.resize(static_cast<std::size_t>(count));
    column_major_vectors.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(count));
    // The eigenvectors overwrite the first `found` columns of A (lda = n).
    FATHOM_CUDA_CHECK(cudaMemcpyAsync(ascending_values.data(), w.data(), ascending_values.size() * sizeof(double),
                                      cudaMemcpyDeviceToHost, stream.stream));
    FATHOM_CUDA_CHECK(cudaMemcpyAsync(column_major_vectors.data(), a.data(), column_major_vectors.size() * sizeof(double),
                                      cudaMemcpyDeviceToHost, stream.stream));
    FATHOM_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
    ctx.checkpoint();
}

std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                         std::span<const std::int32_t> columns,
                                                         std::span<const double> values, int device) {
    if (offsets.empty() || offsets.front() != 0 || columns.size() != values.size() ||
        offsets.back() != static_cast<std::int64_t>(values.size()))
        throw std::invalid_argument("gpu::upload_sparse_matrix: offsets, columns and values do not describe one CSR matrix");
    const auto rows = static_cast<std::int64_t>(offsets.size()) - 1;
    for (const std::int32_t column : columns)
        if (column < 0 || column >= rows)
            throw std::invalid_argument("gpu::upload_sparse_matrix: column " + std::to_string(column) + " is outside [0, " +
                                        std::to_string(rows) + ")");
    return std::make_unique<CudaSparseMatrix>(offsets, columns, values, device);
}

}  // namespace fathom::gpu
