#pragma once
/// The CUDA backend: one row shard resident in one GPU's memory (CSR with int64 row
/// offsets, int32 gene indices, float32 values). Implements every Backend primitive
/// with the kernels of gpu/kernels.cu (arithmetic shared with host loops in
/// gpu/shard_kernels.hpp) and cuBLAS / cuSPARSE for the products: the Gram matrix by
/// DSYRK on dense standardised row tiles of bounded size; the projection by cuSPARSE
/// SpMM on the stored entries when unclipped (the CPU's arithmetic), by DGEMM on dense
/// tiles when clipped.
///
/// Public header: compiles without nvcc. Only usable in a build with FATHOM_HAVE_CUDA.
/// Every CUDA / cuBLAS call is checked (gpu::CudaError); a failed device allocation
/// throws gpu::OutOfMemory (a DeviceOutOfMemory). Results are bit-identical run to run:
/// reductions over rows use fixed lanes and no floating-point atomics.
#include <cstdint>
#include <memory>
#include <span>

#include "core/backend/Backend.hpp"
#include "core/backend/DeviceProvider.hpp"

namespace fathom::gpu {

/// One shard on one CUDA device. The host keeps only the row offsets (8 bytes per row).
class CudaBackend final : public Backend {
public:
    /// Uploads a host shard to `device`; throws std::invalid_argument when the shard
    /// breaks CsrShard's invariants (same checks and messages as CpuBackend).
    CudaBackend(const CsrShard& shard, int device);
    /// Loads rows `range` of a matrix straight to `device` in blocks of rows read by
    /// `read`, through a small pinned staging buffer (DeviceProvider::load).
    static std::unique_ptr<CudaBackend> load(const RowBlockReader& read, const RowRange& range,
                                             std::span<const std::int64_t> global_row_offsets, std::int64_t num_genes,
                                             int device, JobContext& ctx);
    ~CudaBackend() override;

    std::string name() const override;
    BackendKind kind() const noexcept override { return BackendKind::Cuda; }
    std::int64_t row_begin() const noexcept override;
    std::int64_t num_rows() const noexcept override;
    std::int64_t num_genes() const noexcept override;
    std::int64_t nnz() const noexcept override;
    std::unique_ptr<Backend> clone() const override;
    std::unique_ptr<Backend> clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const override;
    CsrShard to_host() const override;
    /// One pass over the values on the device; only a flag comes back.
    bool values_are_counts(JobContext& ctx) const override;

    RowStats row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const override;
    ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const override;
    GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                        const ColumnStatsRequest& request, JobContext& ctx) const override;
    std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const override;

    GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const override;
    DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const override;

    void scale_rows(std::span<const double> factors, JobContext& ctx) override;
    void log1p(JobContext& ctx) override;
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) override;
    void subset_rows(std::span<const std::uint8_t> keep, std::int64_t new_row_begin, JobContext& ctx) override;

    /// The CUDA device index.
    int device() const noexcept;
    /// Device bytes this shard holds (offsets, gene indices, values).
    std::int64_t device_bytes() const noexcept;

    struct Impl;  ///< device state (gpu/CudaBackend.cpp)

private:
    explicit CudaBackend(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace fathom::gpu
