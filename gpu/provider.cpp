#include "gpu/provider.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/CudaBackend.hpp"
#include "gpu/devices.hpp"
#include "gpu/knn.hpp"
#include "gpu/linear_algebra.hpp"
#include "gpu/umap.hpp"

namespace fathom::gpu {

namespace {

class CudaDeviceProvider final : public DeviceProvider {
public:
    DeviceResolution resolve(const DeviceSpec& spec) const override {
        DeviceResolution resolution;
        const DeviceQuery query = query_devices();
        if (query.devices.empty()) {
            resolution.reason = query.message.empty() ? "no usable CUDA device" : query.message;
            return resolution;
        }
        if (spec.cuda_devices.empty()) {
            for (const auto& device : query.devices) resolution.devices.push_back(device.index);
            return resolution;
        }
        for (const int wanted : spec.cuda_devices) {
            const bool present = std::any_of(query.devices.begin(), query.devices.end(),
                                             [wanted](const DeviceInfo& device) { return device.index == wanted; });
            if (!present) {
                resolution.devices.clear();
                resolution.reason = "cuda:" + std::to_string(wanted) + " does not exist (" +
                                    std::to_string(query.devices.size()) + " usable CUDA device" +
                                    (query.devices.size() == 1 ? "" : "s") + ")";
                return resolution;
            }
            resolution.devices.push_back(wanted);
        }
        return resolution;
    }

    std::unique_ptr<Backend> load(const RowBlockReader& read, const RowRange& range,
                                  std::span<const std::int64_t> global_row_offsets, std::int64_t num_genes, int device,
                                  JobContext& ctx) const override {
        return CudaBackend::load(read, range, global_row_offsets, num_genes, device, ctx);
    }

    bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::span<const int> devices,
                   std::vector<std::int32_t>& indices, std::vector<float>& distances, JobContext& ctx) const override {
        // The leading num_dims columns, packed (the search reads rows of num_dims).
        std::vector<float> packed(static_cast<std::size_t>(points.rows()) * static_cast<std::size_t>(num_dims));
        for (std::int64_t row = 0; row < points.rows(); ++row)
            std::copy_n(points.row(row).data(), num_dims, packed.data() + row * num_dims);
        const auto cells = static_cast<std::size_t>(points.rows()) * static_cast<std::size_t>(num_neighbors);
        indices.assign(cells, 0);
        distances.assign(cells, 0.0f);
        gpu::exact_knn(packed.data(), points.rows(), num_dims, num_neighbors, devices, indices.data(), distances.data(), ctx);
        return true;
    }

    bool umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
                  const std::function<void(int epochs_done)>& publish, int device, JobContext& ctx) const override {
        gpu::umap_sgd(problem, embedding, publish_every, publish, device, ctx);
        return true;
    }

    bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, int device, std::vector<double>& ascending_values,
                              std::vector<double>& column_major_vectors, JobContext& ctx) const override {
        if (matrix.rows() != matrix.cols())
            throw std::invalid_argument("symmetric_eigenpairs: the matrix is " + std::to_string(matrix.rows()) + " x " +
                                        std::to_string(matrix.cols()) + ", not square");
        gpu::symmetric_top_eigenpairs(matrix.data(), matrix.rows(), count, device, ascending_values, column_major_vectors, ctx);
        return true;
    }

    std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                             std::span<const std::int32_t> columns,
                                                             std::span<const double> values, int device) const override {
        return gpu::upload_sparse_matrix(offsets, columns, values, device);
    }
};

}  // namespace

std::shared_ptr<DeviceProvider> make_device_provider() { return std::make_shared<CudaDeviceProvider>(); }

}  // namespace fathom::gpu
