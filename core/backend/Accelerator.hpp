#pragma once
/// One interface for the dense work of the steps after the shards: exact kNN search,
/// UMAP's deterministic SGD, PCA's symmetric eigensolver and the spectral
/// initialisation's sparse products. The CPU reference (core/algo/CpuAccelerator.hpp)
/// and the CUDA devices that hold the shards (core/backend/DeviceAccelerator.hpp)
/// implement it, under the same contracts; tests/backend/Accelerator_conformance_test
/// checks both against brute-force references.
///
/// An algorithm takes a `const Accelerator*` beside its JobContext (null = the host runs
/// everything). Every operation may decline (false / null); the algorithm then runs it
/// on the host exactly as without an accelerator.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom {

class JobContext;

/// The SGD of UMAP's deterministic mode (core/algo/umap.hpp,
/// UmapParallelism::Deterministic) as an accelerator receives it: the pruned symmetric
/// graph in CSR order (head = row) with umap's sampling schedule, and the run's
/// constants. The accelerator must run exactly the CPU's epochs: vertices in
/// consecutive blocks of block_size, each block's vertices reading the block as it
/// was when the block began and every other vertex live; alpha falls linearly from
/// learning_rate.
struct UmapSgdProblem {
    std::int64_t num_vertices = 0;
    int dim = 2;                                      ///< embedding columns, <= 8
    std::span<const std::int64_t> offsets;            ///< num_vertices + 1
    std::span<const std::int32_t> tail;               ///< per edge
    std::span<const double> epochs_per_sample;        ///< per edge
    std::span<const double> epochs_per_negative_sample;  ///< per edge
    float a = 0.0f, b = 0.0f, gamma = 1.0f;
    int num_epochs = 0;
    double learning_rate = 1.0;
    std::uint64_t seed = 0;
    std::int64_t block_size = 256;                    ///< vertices per deterministic block
};

/// A square sparse matrix (CSR) held where an accelerator computes (device memory; host
/// memory for the CPU reference) that multiplies host vectors (the spectral
/// initialisation's eigensolver). One call at a time.
class DeviceSparseMatrix {
public:
    virtual ~DeviceSparseMatrix() = default;
    /// Y = A X for `count` vectors: x and y are host arrays of num_rows x count
    /// doubles, column-major (vector j at j * num_rows). Throws DeviceError.
    virtual void multiply(const double* x, double* y, int count) = 0;
};

/// The dense operations an accelerator offers (see the file comment). Implementations
/// are used from one thread at a time.
class Accelerator {
public:
    virtual ~Accelerator() = default;

    /// Where it computes, for messages and test names: "cpu", "cuda:0", "cuda:1,0".
    virtual std::string name() const = 0;

    /// Exact k nearest neighbours of every row of `points` (cells x components) among
    /// all rows, using the first num_dims columns: fills num_cells x num_neighbors
    /// row-major tables, self first at 0, then increasing euclidean distance (double
    /// from the float coordinates, stored as float), ties by increasing index -- the
    /// contract of the CPU's exact search (core/algo/knn.hpp, exact_neighbors).
    /// Returns false to decline (the tables are then unspecified). Throws
    /// DeviceError on device failures it does not decline, Cancelled.
    virtual bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors,
                           std::vector<std::int32_t>& indices, std::vector<float>& distances, JobContext& ctx) const = 0;

    /// Runs every epoch of UMAP's deterministic SGD, updating `embedding`
    /// (num_vertices x dim) in place under UmapSgdProblem's contract; calls
    /// publish(epochs_done) on the calling thread every publish_every epochs before the
    /// last (0 = never) with `embedding` current, and reports progress to ctx. Returns
    /// false to decline before changing `embedding`. Throws DeviceError, Cancelled.
    virtual bool umap_sgd(const UmapSgdProblem& problem, DenseMatrix<float>& embedding, int publish_every,
                          const std::function<void(int epochs_done)>& publish, JobContext& ctx) const = 0;

    /// The `count` largest eigenpairs of the symmetric n x n `matrix`, in ascending order
    /// as LAPACK's syevdx returns them: ascending_values (count entries) and
    /// column_major_vectors (n x count, column j for value j). Returns false to decline.
    /// Throws std::invalid_argument when the matrix is not square or count is not in
    /// [1, n], DeviceError, Cancelled.
    virtual bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, std::vector<double>& ascending_values,
                                      std::vector<double>& column_major_vectors, JobContext& ctx) const = 0;

    /// A copy of the square CSR matrix (num_rows = offsets.size() - 1; int64 offsets,
    /// int32 column indices, double values) for products with host vectors. Null to
    /// decline. Throws std::invalid_argument when the arrays do not describe one square
    /// CSR matrix, DeviceError.
    virtual std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets,
                                                                     std::span<const std::int32_t> columns,
                                                                     std::span<const double> values,
                                                                     JobContext& ctx) const = 0;
};

}  // namespace fathom
