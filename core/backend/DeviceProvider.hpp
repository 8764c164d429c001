#pragma once
/// How the engine places shards on accelerator devices without knowing their API: the
/// CUDA backend (gpu/) implements this interface and the applications hand it to the
/// engine (EngineConfig::device_provider). core never includes CUDA headers. The dense
/// operations after the shards reach the provider through DeviceAccelerator
/// (core/backend/DeviceAccelerator.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/Accelerator.hpp"
#include "core/backend/Backend.hpp"
#include "core/backend/ShardSet.hpp"

namespace fathom {

/// Reads rows [begin, end) of the opened matrix as a host CsrShard whose row_begin is
/// `begin` (e.g. io::RowSource::read_rows). Called with consecutive small blocks.
using RowBlockReader = std::function<CsrShard(std::int64_t begin, std::int64_t end)>;

/// The devices a DeviceSpec names, resolved at run time.
struct DeviceResolution {
    std::vector<int> devices;  ///< usable device indices, in shard order; empty = none
    std::string reason;        ///< why none is usable (empty when devices is not empty)
};

/// Makes backends on one kind of accelerator device.
class DeviceProvider {
public:
    virtual ~DeviceProvider() = default;
    /// The devices of `spec` (kind Cuda; an empty device list means every visible
    /// device) that exist and are usable. Never throws; a spec naming a device that
    /// does not exist resolves to none, with the reason.
    virtual DeviceResolution resolve(const DeviceSpec& spec) const = 0;
    /// Loads rows `range` of the matrix onto `device` as one shard, reading it through
    /// `read` in blocks (the host holds one block at a time). global_row_offsets are
    /// the matrix's row offsets (num_cells + 1 entries). Throws DeviceOutOfMemory when
    /// the shard does not fit, DeviceError on other device failures, std::invalid_argument
    /// when a block breaks CsrShard's invariants, Cancelled when ctx is cancelled.
    virtual std::unique_ptr<Backend> load(const RowBlockReader& read, const RowRange& range,
                                          std::span<const std::int64_t> global_row_offsets, std::int64_t num_genes,
                                          int device, JobContext& ctx) const = 0;
    /// Exact k nearest neighbours of every row of `points` (cells x components) among
    /// all rows, using the first num_dims columns, on `devices` (queries split across
    /// them, the points replicated): num_cells x k row-major tables, self first at 0,
    /// then increasing euclidean distance (double from the float coordinates), ties by
    /// increasing index -- the CPU's exact search contract (core/algo/knn.hpp).
    /// Returns false when this provider has no such search (the default). Throws
    /// DeviceOutOfMemory / DeviceError.
    virtual bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors,
                           std::span<const int> devices, std::vector<std::int32_t>& indices,
                           std::vector<float>& distances, JobContext& ctx) const {
        static_cast<void>(points), static_cast<void>(num_dims), static_cast<void>(num_neighbors);
        static_cast<void>(devices), static_cast<void>(indices), static_cast<void>(distances), static_cast<void>(ctx);
        return false;
    }
    /// Runs UMAP's deterministic SGD on `device`, updating `embedding` (num_vertices x
    /// dim, row-major) in place; calls publish(epochs_done) on the calling thread every
    /// publish_every epochs (0 = never) with `embedding` current, and reports progress
    /// to ctx. Returns false when this provider has no such step (the default). Throws
    /// DeviceOutOfMemory / DeviceError.
    virtual bool umap_sgd(const UmapSgdProblem& problem, float* embedding, int publish_every,
                          const std::function<void(int epochs_done)>& publish, int device, JobContext& ctx) const {
        static_cast<void>(problem), static_cast<void>(embedding), static_cast<void>(publish_every);
        static_cast<void>(publish), static_cast<void>(device), static_cast<void>(ctx);
        return false;
    }
    /// The `count` largest eigenpairs of the symmetric matrix (n x n, row-major =
    /// column-major) on `device`, in ascending order as LAPACK's syevdx returns them:
    /// ascending_values (count entries), column_major_vectors (n x count, column j for
    /// value j). Returns false when this provider has no such solver (the default).
    /// Throws DeviceOutOfMemory / DeviceError (a solver that did not converge included).
    virtual bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, int device,
                                      std::vector<double>& ascending_values, std::vector<double>& column_major_vectors,
                                      JobContext& ctx) const {
        static_cast<void>(matrix), static_cast<void>(count), static_cast<void>(device);
        static_cast<void>(ascending_values), static_cast<void>(column_major_vectors), static_cast<void>(ctx);
        return false;
    }
    /// Uploads a square CSR matrix (num_rows = offsets.size() - 1; int64 offsets, int32
    /// column indices, double values) to `device`. Null when this provider has no sparse
    /// products (the default). Throws DeviceOutOfMemory / DeviceError.
    virtual std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                                     std::span<const std::int32_t> columns,
                                                                     std::span<const double> values, int device) const {
        static_cast<void>(offsets), static_cast<void>(columns), static_cast<void>(values), static_cast<void>(device);
        return nullptr;
    }
};

}  // namespace fathom
