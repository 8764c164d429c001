#include "gpu/CudaBackend.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/projection.hpp"
#include "core/backend/shard_checks.hpp"
#include "gpu/detail/cuda_check.hpp"
#include "gpu/detail/launch.hpp"
#include "gpu/detail/device_array.hpp"
#include "gpu/detail/library_check.hpp"
#include "gpu/shard_kernels.hpp"

namespace fathom::gpu {

namespace {

using backend_checks::block_map;
using backend_checks::check_size;
using backend_checks::check_standardization;

/// Bytes of one dense standardised tile (Gram, projection): bounds the rows per tile.
constexpr std::int64_t kTileBytes = std::int64_t{256} << 20;
/// Entries per pinned staging buffer when loading from a file (two buffers, 8 bytes
/// per entry each: 2 x 32 MiB).
constexpr std::int64_t kStagingEntries = std::int64_t{1} << 22;
/// Stored entries per block read from the file.
constexpr std::int64_t kReadBlockEntries = std::int64_t{1} << 24;

std::string device_name(int device) { return "cuda:" + std::to_string(device); }

/// Makes `device` current for the calling thread (calls may come from any thread).
void use_device(int device) { FATHOM_CUDA_CHECK(cudaSetDevice(device)); }

using detail::DeviceArray;
using detail::download;
using detail::upload;

/// Pinned host memory (page-locked, for asynchronous copies).
template <typename T>
class PinnedArray {
public:
    explicit PinnedArray(std::int64_t count) {
        FATHOM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_data), static_cast<std::size_t>(count) * sizeof(T)));
    }
    ~PinnedArray() {
        if (m_data != nullptr) cudaFreeHost(m_data);
    }
    PinnedArray(const PinnedArray&) = delete;
    PinnedArray& operator=(const PinnedArray&) = delete;
    T* data() noexcept { return m_data; }

private:
    T* m_data = nullptr;
};

kernels::ValueRequest value_request(const ColumnStatsRequest& request, const DeviceArray<double>& row_scale,
                                    const DeviceArray<double>& column_max) {
    kernels::ValueRequest out;
    out.row_scale = request.row_scale.empty() ? nullptr : row_scale.data();
    out.column_max = request.column_max.empty() ? nullptr : column_max.data();
    switch (request.transform) {
        case ElementTransform::None: out.transform = kernels::kTransformNone; break;
        case ElementTransform::Log1p: out.transform = kernels::kTransformLog1p; break;
        case ElementTransform::Expm1: out.transform = kernels::kTransformExpm1; break;
    }
    return out;
}

/// Runs `on_device`; when the device runs out of memory for the primitive's
/// temporaries, runs `on_host` on a host copy of the shard (the CPU backend) instead
/// and says so in the job's progress message. The shard stays on the device.
template <typename Result, typename Device, typename Host>
Result device_or_host(const CudaBackend& self, const char* primitive, JobContext& ctx, Device&& on_device, Host&& on_host) {
    try {
        return on_device();
    } catch (const OutOfMemory& error) {
        ctx.report(ctx.progress().fraction, std::string(error.what()) + "; " + primitive + " ran on the CPU instead");
        const CpuBackend host(self.to_host(), self.device());
        return on_host(host);
    }
}

}  // namespace

/// Device state of one shard. Every member function first makes the device current.
struct CudaBackend::Impl {
    int device = 0;
    std::int64_t row_begin = 0;
    std::int64_t num_genes = 0;
    std::vector<std::int64_t> host_offsets{0};  ///< the row offsets, also kept on the host
    DeviceArray<std::int64_t> offsets;
    DeviceArray<std::int32_t> genes;
    DeviceArray<float> values;
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;

    explicit Impl(int device_index) : device(device_index) {
        use_device(device);
        FATHOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        const cublasStatus_t status = cublasCreate(&cublas);
        if (status != CUBLAS_STATUS_SUCCESS) {
            cudaStreamDestroy(stream);
            FATHOM_CUBLAS_CHECK(status);
        }
        FATHOM_CUBLAS_CHECK(cublasSetStream(cublas, stream));
    }
    ~Impl() {
        cudaSetDevice(device);
        if (cublas != nullptr) cublasDestroy(cublas);
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    std::int64_t rows() const noexcept { return static_cast<std::int64_t>(host_offsets.size()) - 1; }
    std::int64_t nnz() const noexcept { return host_offsets.back(); }
    void sync() const { FATHOM_CUDA_CHECK(cudaStreamSynchronize(stream)); }
    std::string name() const { return device_name(device); }

    /// A new shard on the same device with these host offsets, its arrays allocated.
    std::unique_ptr<Impl> empty_like(std::vector<std::int64_t> new_offsets, std::int64_t genes_count) const {
        auto copy = std::make_unique<Impl>(device);
        copy->row_begin = row_begin;
        copy->num_genes = genes_count;
        copy->host_offsets = std::move(new_offsets);
        copy->offsets = upload(std::span<const std::int64_t>(copy->host_offsets), device, copy->stream);
        copy->genes = DeviceArray<std::int32_t>(copy->nnz(), device);
        copy->values = DeviceArray<float>(copy->nnz(), device);
        return copy;
    }

    /// The shard with only the kept genes, renumbered, as a new Impl (keep checked).
    std::unique_ptr<Impl> columns_kept(std::span<const std::uint8_t> keep, JobContext& ctx) const {
        ctx.checkpoint();
        std::vector<std::int32_t> renumber(keep.size(), -1);
        std::int32_t kept = 0;
        for (std::size_t gene = 0; gene < keep.size(); ++gene)
            if (keep[gene]) renumber[gene] = kept++;
        const auto renumber_device = upload(std::span<const std::int32_t>(renumber), device, stream);
        DeviceArray<std::int64_t> counts(rows(), device);
        detail::launch_count_kept(stream, offsets.data(), genes.data(), rows(), renumber_device.data(), counts.data());
        std::vector<std::int64_t> new_offsets;
        download(new_offsets, counts.data(), rows(), stream);
        sync();
        ctx.checkpoint();
        new_offsets.insert(new_offsets.begin(), 0);
        for (std::size_t row = 1; row < new_offsets.size(); ++row) new_offsets[row] += new_offsets[row - 1];
        auto out = empty_like(std::move(new_offsets), kept);
        // The copy runs on this shard's stream after the new offsets reached the device.
        out->sync();
        detail::launch_copy_kept(stream, offsets.data(), genes.data(), values.data(), rows(), renumber_device.data(),
                                 out->offsets.data(), out->genes.data(), out->values.data());
        sync();
        return out;
    }
};

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

CudaBackend::CudaBackend(const CsrShard& shard, int device) {
    backend_checks::check_shard(shard, "CudaBackend " + device_name(device));
    m_impl = std::make_unique<Impl>(device);
    auto& impl = *m_impl;
    impl.row_begin = shard.row_begin;
    impl.num_genes = shard.num_genes;
    impl.host_offsets = shard.row_offsets;
    impl.offsets = upload(std::span<const std::int64_t>(shard.row_offsets), device, impl.stream);
    impl.genes = upload(std::span<const std::int32_t>(shard.gene_indices), device, impl.stream);
    impl.values = upload(std::span<const float>(shard.values), device, impl.stream);
    impl.sync();
}

std::unique_ptr<CudaBackend> CudaBackend::load(const RowBlockReader& read, const RowRange& range,
                                               std::span<const std::int64_t> global_row_offsets, std::int64_t num_genes,
                                               int device, JobContext& ctx) {
    const std::string owner = "CudaBackend " + device_name(device);
    if (range.begin < 0 || range.end < range.begin || static_cast<std::size_t>(range.end) + 1 > global_row_offsets.size())
        throw std::invalid_argument(owner + ": rows [" + std::to_string(range.begin) + ", " + std::to_string(range.end) +
                                    ") are outside the matrix");
    auto impl = std::make_unique<Impl>(device);
    impl->row_begin = range.begin;
    impl->num_genes = num_genes;
    const std::int64_t base = global_row_offsets[static_cast<std::size_t>(range.begin)];
    impl->host_offsets.resize(static_cast<std::size_t>(range.size()) + 1);
    for (std::int64_t row = 0; row <= range.size(); ++row)
        impl->host_offsets[static_cast<std::size_t>(row)] = global_row_offsets[static_cast<std::size_t>(range.begin + row)] - base;
    impl->offsets = upload(std::span<const std::int64_t>(impl->host_offsets), device, impl->stream);
    impl->genes = DeviceArray<std::int32_t>(impl->nnz(), device);
    impl->values = DeviceArray<float>(impl->nnz(), device);

    // Two pinned staging buffers: the copy of one overlaps filling the other.
    PinnedArray<std::int32_t> staged_genes(2 * kStagingEntries);
    PinnedArray<float> staged_values(2 * kStagingEntries);
    cudaEvent_t copied[2] = {nullptr, nullptr};
    FATHOM_CUDA_CHECK(cudaEventCreateWithFlags(&copied[0], cudaEventDisableTiming));
    FATHOM_CUDA_CHECK(cudaEventCreateWithFlags(&copied[1], cudaEventDisableTiming));
    struct Events {
        cudaEvent_t* events;
        ~Events() {
            cudaEventDestroy(events[0]);
            cudaEventDestroy(events[1]);
        }
    } events_guard{copied};
    int buffer = 0;
    bool used[2] = {false, false};

    std::int64_t row = 0;
    while (row < range.size()) {
        ctx.checkpoint();
        // Rows for about kReadBlockEntries stored entries (at least one row).
        const std::int64_t end = kernels::read_block_end(impl->host_offsets, row, kReadBlockEntries);
        CsrShard block = read(range.begin + row, range.begin + end);
        backend_checks::check_shard(block, owner + " (rows " + std::to_string(range.begin + row) + " to " +
                                               std::to_string(range.begin + end) + " of the file)");
        const std::int64_t expected = impl->host_offsets[static_cast<std::size_t>(end)] - impl->host_offsets[static_cast<std::size_t>(row)];
        if (block.num_rows() != end - row || block.nnz() != expected || block.num_genes != num_genes)
            throw std::invalid_argument(owner + ": the block of rows " + std::to_string(range.begin + row) + " to " +
                                        std::to_string(range.begin + end) + " has " + std::to_string(block.nnz()) +
                                        " entries; the row offsets say " + std::to_string(expected));
        const std::int64_t destination = impl->host_offsets[static_cast<std::size_t>(row)];
        for (std::int64_t done = 0; done < block.nnz(); done += kStagingEntries) {
            const std::int64_t count = std::min(kStagingEntries, block.nnz() - done);
            if (used[buffer]) FATHOM_CUDA_CHECK(cudaEventSynchronize(copied[buffer]));
            std::int32_t* genes_buffer = staged_genes.data() + buffer * kStagingEntries;
            float* values_buffer = staged_values.data() + buffer * kStagingEntries;
            std::memcpy(genes_buffer, block.gene_indices.data() + done, static_cast<std::size_t>(count) * sizeof(std::int32_t));
            std::memcpy(values_buffer, block.values.data() + done, static_cast<std::size_t>(count) * sizeof(float));
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(impl->genes.data() + destination + done, genes_buffer,
                                              static_cast<std::size_t>(count) * sizeof(std::int32_t),
                                              cudaMemcpyHostToDevice, impl->stream));
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(impl->values.data() + destination + done, values_buffer,
                                              static_cast<std::size_t>(count) * sizeof(float), cudaMemcpyHostToDevice,
                                              impl->stream));
            FATHOM_CUDA_CHECK(cudaEventRecord(copied[buffer], impl->stream));
            used[buffer] = true;
            buffer = 1 - buffer;
        }
        row = end;
        ctx.report(static_cast<double>(row) / static_cast<double>(std::max<std::int64_t>(1, range.size())));
    }
    impl->sync();
    return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

CudaBackend::~CudaBackend() = default;

std::string CudaBackend::name() const { return m_impl->name(); }
std::int64_t CudaBackend::row_begin() const noexcept { return m_impl->row_begin; }
std::int64_t CudaBackend::num_rows() const noexcept { return m_impl->rows(); }
std::int64_t CudaBackend::num_genes() const noexcept { return m_impl->num_genes; }
std::int64_t CudaBackend::nnz() const noexcept { return m_impl->nnz(); }
int CudaBackend::device() const noexcept { return m_impl->device; }
std::int64_t CudaBackend::device_bytes() const noexcept {
    return m_impl->offsets.bytes() + m_impl->genes.bytes() + m_impl->values.bytes();
}

std::unique_ptr<Backend> CudaBackend::clone() const {
    const auto& impl = *m_impl;
    use_device(impl.device);
    auto copy = impl.empty_like(impl.host_offsets, impl.num_genes);
    copy->sync();
    if (impl.nnz() > 0) {
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(copy->genes.data(), impl.genes.data(), static_cast<std::size_t>(impl.genes.bytes()),
                                          cudaMemcpyDeviceToDevice, impl.stream));
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(copy->values.data(), impl.values.data(), static_cast<std::size_t>(impl.values.bytes()),
                                          cudaMemcpyDeviceToDevice, impl.stream));
    }
    impl.sync();
    return std::unique_ptr<Backend>(new CudaBackend(std::move(copy)));
}

std::unique_ptr<Backend> CudaBackend::clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const {
    check_size("clone_columns", "keep", keep.size(), m_impl->num_genes);
    use_device(m_impl->device);
    try {
        return std::unique_ptr<Backend>(new CudaBackend(m_impl->columns_kept(keep, ctx)));
    } catch (const OutOfMemory& error) {
        // The copy cannot live on the device: it lives on the host (a CPU shard).
        ctx.report(ctx.progress().fraction, std::string(error.what()) + "; the copy of " + name() + " is kept on the CPU");
        return CpuBackend(to_host(), device()).clone_columns(keep, ctx);
    }
}

CsrShard CudaBackend::to_host() const {
    const auto& impl = *m_impl;
    use_device(impl.device);
    CsrShard shard;
    shard.row_begin = impl.row_begin;
    shard.num_genes = impl.num_genes;
    shard.row_offsets = impl.host_offsets;
    download(shard.gene_indices, impl.genes.data(), impl.nnz(), impl.stream);
    download(shard.values, impl.values.data(), impl.nnz(), impl.stream);
    impl.sync();
    return shard;
}

bool CudaBackend::values_are_counts(JobContext& ctx) const {
    return device_or_host<bool>(*this, "values_are_counts", ctx, [&]() -> bool {
        const auto& impl = *m_impl;
        ctx.checkpoint();
        use_device(impl.device);
        DeviceArray<int> flag(1, impl.device);
        FATHOM_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0, sizeof(int), impl.stream));
        detail::launch_check_counts(impl.stream, impl.values.data(), impl.nnz(), flag.data());
        int not_counts = 0;
        FATHOM_CUDA_CHECK(cudaMemcpyAsync(&not_counts, flag.data(), sizeof(int), cudaMemcpyDeviceToHost, impl.stream));
        impl.sync();
        return not_counts == 0;
    }, [&](const CpuBackend& host) { return host.values_are_counts(ctx); });
}

RowStats CudaBackend::row_stats(std::span<const std::uint8_t> gene_mask, JobContext& ctx) const {
    return device_or_host<RowStats>(*this, "row_stats", ctx, [&]() -> RowStats {
        const auto& impl = *m_impl;
        if (!gene_mask.empty()) check_size("row_stats", "gene_mask", gene_mask.size(), impl.num_genes);
        ctx.checkpoint();
        use_device(impl.device);
        const auto mask = upload(gene_mask, impl.device, impl.stream);
        DeviceArray<double> total(impl.rows(), impl.device), subset(gene_mask.empty() ? 0 : impl.rows(), impl.device);
        DeviceArray<std::int64_t> nnz(impl.rows(), impl.device);
        detail::launch_row_stats(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), impl.rows(),
                                 gene_mask.empty() ? nullptr : mask.data(), total.data(), nnz.data(), subset.data());
        RowStats stats;
        download(stats.total, total.data(), impl.rows(), impl.stream);
        download(stats.nnz, nnz.data(), impl.rows(), impl.stream);
        if (!gene_mask.empty()) download(stats.subset_total, subset.data(), impl.rows(), impl.stream);
        impl.sync();
        return stats;
    }, [&](const CpuBackend& host) { return host.row_stats(gene_mask, ctx); });
}

ColumnStats CudaBackend::column_stats(const ColumnStatsRequest& request, JobContext& ctx) const {
    return device_or_host<ColumnStats>(*this, "column_stats", ctx, [&]() -> ColumnStats {
        const auto& impl = *m_impl;
        backend_checks::check_request("column_stats", request, impl.rows(), impl.num_genes);
        ctx.checkpoint();
        use_device(impl.device);
        const std::int64_t width = impl.num_genes;
        const auto bounds = kernels::lane_bounds(impl.host_offsets, kernels::max_lanes_for_width(width));
        const std::int64_t lanes = static_cast<std::int64_t>(bounds.size()) - 1;
        const auto bounds_device = upload(std::span<const std::int64_t>(bounds), impl.device, impl.stream);
        const auto row_scale = upload(request.row_scale, impl.device, impl.stream);
        const auto column_max = upload(request.column_max, impl.device, impl.stream);
        const auto row_mask = upload(request.row_mask, impl.device, impl.stream);
        DeviceArray<double> lane_sum(lanes * width, impl.device), lane_squares(lanes * width, impl.device);
        DeviceArray<std::int64_t> lane_nnz(lanes * width, impl.device);
        DeviceArray<double> sum(width, impl.device), squares(width, impl.device);
        DeviceArray<std::int64_t> nnz(width, impl.device);
        detail::launch_column_stats(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(),
                                    bounds_device.data(), lanes, impl.num_genes, value_request(request, row_scale, column_max),
                                    request.row_mask.empty() ? nullptr : row_mask.data(), nullptr, width, lane_sum.data(),
                                    lane_squares.data(), lane_nnz.data(), sum.data(), squares.data(), nnz.data());
        ColumnStats stats;
        download(stats.sum, sum.data(), width, impl.stream);
        download(stats.sum_squares, squares.data(), width, impl.stream);
        download(stats.nnz, nnz.data(), width, impl.stream);
        impl.sync();
        stats.num_rows = impl.rows();
        if (!request.row_mask.empty())
            stats.num_rows = std::count_if(request.row_mask.begin(), request.row_mask.end(), [](std::uint8_t flag) { return flag != 0; });
        ctx.checkpoint();
        return stats;
    }, [&](const CpuBackend& host) { return host.column_stats(request, ctx); });
}

GroupColumnStats CudaBackend::group_column_stats(std::span<const std::int32_t> labels, int num_groups,
                                                 const ColumnStatsRequest& request, JobContext& ctx) const {
    return device_or_host<GroupColumnStats>(*this, "group_column_stats", ctx, [&]() -> GroupColumnStats {
        const auto& impl = *m_impl;
        if (num_groups < 0) throw std::invalid_argument("Backend::group_column_stats: num_groups must be >= 0");
        check_size("group_column_stats", "labels", labels.size(), impl.rows());
        ColumnStatsRequest unmasked = request;
        unmasked.row_mask = {};
        backend_checks::check_request("group_column_stats", unmasked, impl.rows(), impl.num_genes);
        GroupColumnStats stats;
        stats.group_sizes.assign(static_cast<std::size_t>(num_groups), 0);
        for (std::size_t row = 0; row < labels.size(); ++row) {
            if (labels[row] < -1 || labels[row] >= num_groups)
                throw std::invalid_argument("Backend::group_column_stats: label " + std::to_string(labels[row]) + " of row " +
                                            std::to_string(row) + " is outside [-1, " + std::to_string(num_groups) + ")");
            if (labels[row] >= 0) ++stats.group_sizes[static_cast<std::size_t>(labels[row])];
        }
        ctx.checkpoint();
        use_device(impl.device);
        const std::int64_t width = static_cast<std::int64_t>(num_groups) * impl.num_genes;
        const auto bounds = kernels::lane_bounds(impl.host_offsets, kernels::max_lanes_for_width(width));
        const std::int64_t lanes = static_cast<std::int64_t>(bounds.size()) - 1;
        const auto bounds_device = upload(std::span<const std::int64_t>(bounds), impl.device, impl.stream);
        const auto labels_device = upload(labels, impl.device, impl.stream);
        const auto row_scale = upload(unmasked.row_scale, impl.device, impl.stream);
        const auto column_max = upload(unmasked.column_max, impl.device, impl.stream);
        DeviceArray<double> lane_sum(lanes * width, impl.device), lane_squares(lanes * width, impl.device);
        DeviceArray<std::int64_t> lane_nnz(lanes * width, impl.device);
        DeviceArray<double> sum(width, impl.device), squares(width, impl.device);
        DeviceArray<std::int64_t> nnz(width, impl.device);
        detail::launch_column_stats(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(),
                                    bounds_device.data(), lanes, impl.num_genes, value_request(unmasked, row_scale, column_max),
                                    nullptr, labels_device.data(), width, lane_sum.data(), lane_squares.data(), lane_nnz.data(),
                                    sum.data(), squares.data(), nnz.data());
        std::vector<double> sum_host, squares_host;
        std::vector<std::int64_t> nnz_host;
        download(sum_host, sum.data(), width, impl.stream);
        download(squares_host, squares.data(), width, impl.stream);
        download(nnz_host, nnz.data(), width, impl.stream);
        impl.sync();
        stats.sum = DenseMatrix<double>(num_groups, impl.num_genes, std::move(sum_host));
        stats.sum_squares = DenseMatrix<double>(num_groups, impl.num_genes, std::move(squares_host));
        stats.nnz = DenseMatrix<std::int64_t>(num_groups, impl.num_genes, std::move(nnz_host));
        ctx.checkpoint();
        return stats;
    }, [&](const CpuBackend& host) { return host.group_column_stats(labels, num_groups, request, ctx); });
}

std::vector<float> CudaBackend::gene_column(std::int32_t gene, JobContext& ctx) const {
    return device_or_host<std::vector<float>>(*this, "gene_column", ctx, [&]() -> std::vector<float> {
        const auto& impl = *m_impl;
        if (gene < 0 || gene >= impl.num_genes)
            throw std::invalid_argument("Backend::gene_column: gene " + std::to_string(gene) + " is outside [0, " +
                                        std::to_string(impl.num_genes) + ")");
        ctx.checkpoint();
        use_device(impl.device);
        DeviceArray<float> column(impl.rows(), impl.device);
        detail::launch_gene_column(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), impl.rows(), gene,
                                   column.data());
        std::vector<float> out;
        download(out, column.data(), impl.rows(), impl.stream);
        impl.sync();
        return out;
    }, [&](const CpuBackend& host) { return host.gene_column(gene, ctx); });
}

namespace {

/// The standardised block on the device: gene -> block column map, mean, inv_std and
/// centre, and the kernel-side description of them.
struct DeviceBlock {
    DeviceArray<std::int32_t> map;
    DeviceArray<double> mean, inv_std, center;
    kernels::BlockTransform transform;
};

DeviceBlock device_block(const std::vector<std::int32_t>& map, const Standardization& standardization,
                         std::span<const double> center, int device, cudaStream_t stream) {
    DeviceBlock block;
    block.map = upload(std::span<const std::int32_t>(map), device, stream);
    block.mean = upload(standardization.mean, device, stream);
    block.inv_std = upload(standardization.inv_std, device, stream);
    block.center = upload(center, device, stream);
    block.transform.block_column = block.map.data();
    block.transform.mean = block.mean.data();
    block.transform.inv_std = block.inv_std.data();
    block.transform.center = center.empty() ? nullptr : block.center.data();
    block.transform.has_max = standardization.max_value.has_value();
    block.transform.max_value = standardization.max_value.value_or(0.0);
    block.transform.has_min = standardization.min_value.has_value();
    block.transform.min_value = standardization.min_value.value_or(0.0);
    return block;
}

/// A cuSPARSE handle on a stream and the descriptors of one product, released on scope
/// exit (every call checked).
struct SparseProduct {
    cusparseHandle_t handle = nullptr;
    cusparseSpMatDescr_t tile = nullptr;
    cusparseDnMatDescr_t weights = nullptr, scores = nullptr;
    explicit SparseProduct(cudaStream_t stream) {
        FATHOM_CUSPARSE_CHECK(cusparseCreate(&handle));
        FATHOM_CUSPARSE_CHECK(cusparseSetStream(handle, stream));
    }
    void release_tile() noexcept {
        if (tile != nullptr) cusparseDestroySpMat(tile);
        if (scores != nullptr) cusparseDestroyDnMat(scores);
        tile = nullptr;
        scores = nullptr;
    }
    ~SparseProduct() {
        release_tile();
        if (weights != nullptr) cusparseDestroyDnMat(weights);
        if (handle != nullptr) cusparseDestroy(handle);
    }
    SparseProduct(const SparseProduct&) = delete;
    SparseProduct& operator=(const SparseProduct&) = delete;
};

std::int64_t tile_rows_for(std::int64_t width, std::int64_t rows) {
    return std::clamp<std::int64_t>(kTileBytes / (8 * std::max<std::int64_t>(1, width)), 1, std::max<std::int64_t>(1, rows));
}

}  // namespace

GramResult CudaBackend::gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const {
    return device_or_host<GramResult>(*this, "gram", ctx, [&]() -> GramResult {
        const auto& impl = *m_impl;
        std::int64_t block_size = 0;
        const auto map = block_map("gram", genes, impl.num_genes, block_size);
        check_standardization("gram", standardization, block_size);
        ctx.checkpoint();
        GramResult result;
        result.num_rows = impl.rows();
        if (impl.rows() == 0 || block_size == 0) {
            result.gram = DenseMatrix<double>(block_size, block_size, 0.0);
            result.column_sums.assign(static_cast<std::size_t>(block_size), 0.0);
            return result;
        }
        use_device(impl.device);
        // Z^T Z by DSYRK and the column sums by DGEMV on dense tiles of Z (rows x block,
        // row-major = column-major block x rows for cuBLAS). Clipped or not, Z is formed
        // exactly, so both cases share one path.
        const DeviceBlock block = device_block(map, standardization, {}, impl.device, impl.stream);
        const std::int64_t tile_rows = tile_rows_for(block_size, impl.rows());
        DeviceArray<double> tile(tile_rows * block_size, impl.device);
        DeviceArray<double> gram(block_size * block_size, impl.device), sums(block_size, impl.device);
        const std::vector<double> ones_host(static_cast<std::size_t>(tile_rows), 1.0);
        const auto ones = upload(std::span<const double>(ones_host), impl.device, impl.stream);
        FATHOM_CUDA_CHECK(cudaMemsetAsync(gram.data(), 0, static_cast<std::size_t>(gram.bytes()), impl.stream));
        FATHOM_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, static_cast<std::size_t>(sums.bytes()), impl.stream));
        const double one = 1.0;
        const int n = static_cast<int>(block_size);
        for (std::int64_t begin = 0; begin < impl.rows(); begin += tile_rows) {
            ctx.checkpoint();
            const std::int64_t count = std::min(tile_rows, impl.rows() - begin);
            detail::launch_fill_tile(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), block.transform,
                                     begin, count, block_size, tile.data());
            const int k = static_cast<int>(count);
            FATHOM_CUBLAS_CHECK(cublasDsyrk(impl.cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, k, &one, tile.data(), n, &one,
                                            gram.data(), n));
            FATHOM_CUBLAS_CHECK(cublasDgemv(impl.cublas, CUBLAS_OP_N, n, k, &one, tile.data(), n, ones.data(), 1, &one,
                                            sums.data(), 1));
            impl.sync();  // one tile in flight: keeps cancellation prompt
        }
        result.gram = DenseMatrix<double>(block_size, block_size, 0.0);
        std::vector<double> gram_host;
        download(gram_host, gram.data(), block_size * block_size, impl.stream);
        download(result.column_sums, sums.data(), block_size, impl.stream);
        impl.sync();
        // Column-major upper triangle: (a, b) with a <= b is at a + b * block.
        for (std::int64_t b = 0; b < block_size; ++b)
            for (std::int64_t a = 0; a <= b; ++a) {
                const double value = gram_host[static_cast<std::size_t>(a + b * block_size)];
                result.gram(a, b) = value;
                result.gram(b, a) = value;
            }
        return result;
    }, [&](const CpuBackend& host) { return host.gram(genes, standardization, ctx); });
}

namespace {

/// Unclipped projection as the CPU computes it (core/backend/projection.hpp): the stored
/// entries of row tiles, widened to 64-bit double CSR on the device, times the block
/// weights spread over the genes by cuSPARSE SpMM (no transpose: the same result on
/// every run), minus the offset on the host. Host loop: kernels::project_tile_host.
DenseMatrix<double> project_sparse(const CudaBackend::Impl& impl, const std::vector<std::int32_t>& map,
                                   const ProjectionRequest& request, std::int64_t block_size, JobContext& ctx);

}  // namespace

DenseMatrix<double> CudaBackend::project(const ProjectionRequest& request, JobContext& ctx) const {
    return device_or_host<DenseMatrix<double>>(*this, "project", ctx, [&]() -> DenseMatrix<double> {
        const auto& impl = *m_impl;
        if (request.loadings == nullptr) throw std::invalid_argument("Backend::project: loadings is required");
        std::int64_t block_size = 0;
        const auto map = block_map("project", request.genes, impl.num_genes, block_size);
        check_standardization("project", request.standardization, block_size);
        const auto& loadings = *request.loadings;
        if (loadings.rows() != block_size)
            throw std::invalid_argument("Backend::project: loadings has " + std::to_string(loadings.rows()) +
                                        " rows; expected one per block gene (" + std::to_string(block_size) + ")");
        if (!request.center.empty()) check_size("project", "center", request.center.size(), block_size);
        ctx.checkpoint();
        const std::int64_t components = loadings.cols();
        DenseMatrix<double> scores(impl.rows(), components, 0.0);
        if (impl.rows() == 0 || components == 0 || block_size == 0) return scores;
        use_device(impl.device);
        if (!request.standardization.clipped()) return project_sparse(impl, map, request, block_size, ctx);
        // Clipped: scores tile (rows x components, row-major) = Z tile (rows x block) * loadings
        // (block x components, row-major): column-major, S' = L' Z' with L' components x block.
        const DeviceBlock block = device_block(map, request.standardization, request.center, impl.device, impl.stream);
        const auto loadings_device = upload(std::span<const double>(loadings.values()), impl.device, impl.stream);
        const std::int64_t tile_rows = tile_rows_for(block_size + components, impl.rows());
        DeviceArray<double> tile(tile_rows * block_size, impl.device), tile_scores(tile_rows * components, impl.device);
        const double one = 1.0, zero = 0.0;
        for (std::int64_t begin = 0; begin < impl.rows(); begin += tile_rows) {
            ctx.checkpoint();
            const std::int64_t count = std::min(tile_rows, impl.rows() - begin);
            detail::launch_fill_tile(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), block.transform,
                                     begin, count, block_size, tile.data());
            FATHOM_CUBLAS_CHECK(cublasDgemm(impl.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(components),
                                            static_cast<int>(count), static_cast<int>(block_size), &one, loadings_device.data(),
                                            static_cast<int>(components), tile.data(), static_cast<int>(block_size), &zero,
                                            tile_scores.data(), static_cast<int>(components)));
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(scores.row(begin).data(), tile_scores.data(),
                                              static_cast<std::size_t>(count * components) * sizeof(double),
                                              cudaMemcpyDeviceToHost, impl.stream));
            impl.sync();
        }
        return scores;
    }, [&](const CpuBackend& host) { return host.project(request, ctx); });
}

namespace {

DenseMatrix<double> project_sparse(const CudaBackend::Impl& impl, const std::vector<std::int32_t>& map,
                                   const ProjectionRequest& request, std::int64_t block_size, JobContext& ctx) {
    const std::int64_t components = request.loadings->cols();
    DenseMatrix<double> scores(impl.rows(), components, 0.0);
    const auto projection = backend_detail::sparse_projection(request, block_size);
    const auto weights_host = kernels::gene_weights(map.data(), impl.num_genes, projection.weights, components);
    const auto weights = upload(std::span<const double>(weights_host), impl.device, impl.stream);
    // Tiles bounded by kTileBytes of widened entries (16 bytes each) and of scores.
    const auto bounds = kernels::projection_tiles(impl.host_offsets, std::max<std::int64_t>(1, kTileBytes / 16),
                                                  std::max<std::int64_t>(1, kTileBytes / (8 * components)));
    std::int64_t max_rows = 1, max_entries = 1;
    for (std::size_t tile = 0; tile + 1 < bounds.size(); ++tile) {
        max_rows = std::max(max_rows, bounds[tile + 1] - bounds[tile]);
        max_entries = std::max(max_entries, impl.host_offsets[static_cast<std::size_t>(bounds[tile + 1])] -
                                                impl.host_offsets[static_cast<std::size_t>(bounds[tile])]);
    }
    DeviceArray<std::int64_t> tile_offsets(max_rows + 1, impl.device), tile_columns(max_entries, impl.device);
    DeviceArray<double> tile_values(max_entries, impl.device), tile_scores(max_rows * components, impl.device);
    DeviceArray<unsigned char> buffer;
    SparseProduct product(impl.stream);
    FATHOM_CUSPARSE_CHECK(cusparseCreateDnMat(&product.weights, impl.num_genes, components, components,
                                              const_cast<double*>(weights.data()), CUDA_R_64F, CUSPARSE_ORDER_ROW));
    const double one = 1.0, zero = 0.0;
    for (std::size_t tile = 0; tile + 1 < bounds.size(); ++tile) {
        ctx.checkpoint();
        const std::int64_t begin = bounds[tile], rows = bounds[tile + 1] - begin;
        const std::int64_t first_entry = impl.host_offsets[static_cast<std::size_t>(begin)];
        const std::int64_t entries = impl.host_offsets[static_cast<std::size_t>(begin + rows)] - first_entry;
        if (entries > 0) {
            detail::launch_widen_tile(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), begin, rows,
                                      first_entry, entries, tile_offsets.data(), tile_columns.data(), tile_values.data());
            FATHOM_CUSPARSE_CHECK(cusparseCreateCsr(&product.tile, rows, impl.num_genes, entries, tile_offsets.data(),
                                                    tile_columns.data(), tile_values.data(), CUSPARSE_INDEX_64I,
                                                    CUSPARSE_INDEX_64I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
            FATHOM_CUSPARSE_CHECK(cusparseCreateDnMat(&product.scores, rows, components, components, tile_scores.data(),
                                                      CUDA_R_64F, CUSPARSE_ORDER_ROW));
            std::size_t buffer_bytes = 0;
            FATHOM_CUSPARSE_CHECK(cusparseSpMM_bufferSize(product.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                          CUSPARSE_OPERATION_NON_TRANSPOSE, &one, product.tile, product.weights,
                                                          &zero, product.scores, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT,
                                                          &buffer_bytes));
            if (static_cast<std::int64_t>(buffer_bytes) > buffer.size())
                buffer = DeviceArray<unsigned char>(static_cast<std::int64_t>(buffer_bytes), impl.device);
            FATHOM_CUSPARSE_CHECK(cusparseSpMM(product.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                               &one, product.tile, product.weights, &zero, product.scores, CUDA_R_64F,
                                               CUSPARSE_SPMM_ALG_DEFAULT, buffer.data()));
            FATHOM_CUDA_CHECK(cudaMemcpyAsync(scores.row(begin).data(), tile_scores.data(),
                                              static_cast<std::size_t>(rows * components) * sizeof(double),
                                              cudaMemcpyDeviceToHost, impl.stream));
            impl.sync();  // one tile in flight: keeps cancellation prompt
            product.release_tile();
        }
        for (std::int64_t row = begin; row < begin + rows; ++row) {
            auto out = scores.row(row);
            for (std::int64_t component = 0; component < components; ++component)
                out[static_cast<std::size_t>(component)] -= projection.offset[static_cast<std::size_t>(component)];
        }
    }
    return scores;
}

}  // namespace

void CudaBackend::scale_rows(std::span<const double> factors, JobContext& ctx) {
    auto& impl = *m_impl;
    check_size("scale_rows", "factors", factors.size(), impl.rows());
    ctx.checkpoint();
    use_device(impl.device);
    const auto factors_device = upload(factors, impl.device, impl.stream);
    detail::launch_scale_rows(impl.stream, impl.offsets.data(), impl.values.data(), impl.rows(), factors_device.data());
    impl.sync();
}

void CudaBackend::log1p(JobContext& ctx) {
    auto& impl = *m_impl;
    ctx.checkpoint();
    use_device(impl.device);
    detail::launch_log1p(impl.stream, impl.values.data(), impl.nnz());
    impl.sync();
}

void CudaBackend::subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) {
    check_size("subset_columns", "keep", keep.size(), m_impl->num_genes);
    if (std::all_of(keep.begin(), keep.end(), [](std::uint8_t flag) { return flag != 0; })) return;  // nothing dropped
    use_device(m_impl->device);
    m_impl = m_impl->columns_kept(keep, ctx);
}

void CudaBackend::subset_rows(std::span<const std::uint8_t> keep, std::int64_t new_row_begin, JobContext& ctx) {
    auto& impl = *m_impl;
    check_size("subset_rows", "keep", keep.size(), impl.rows());
    if (new_row_begin < 0) throw std::invalid_argument("Backend::subset_rows: new_row_begin must be >= 0");
    ctx.checkpoint();
    use_device(impl.device);
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int64_t> source_rows;
    for (std::size_t row = 0; row < keep.size(); ++row) {
        if (!keep[row]) continue;
        source_rows.push_back(static_cast<std::int64_t>(row));
        offsets.push_back(offsets.back() + impl.host_offsets[row + 1] - impl.host_offsets[row]);
    }
    const auto kept_rows = static_cast<std::int64_t>(source_rows.size());
    auto out = impl.empty_like(std::move(offsets), impl.num_genes);
    out->sync();
    const auto sources = upload(std::span<const std::int64_t>(source_rows), impl.device, impl.stream);
    detail::launch_copy_rows(impl.stream, impl.offsets.data(), impl.genes.data(), impl.values.data(), sources.data(),
                             kept_rows, out->offsets.data(), out->genes.data(), out->values.data());
    impl.sync();
    out->row_begin = new_row_begin;
    m_impl = std::move(out);
}

}  // namespace fathom::gpu
