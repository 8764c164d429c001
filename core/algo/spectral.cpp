#include "core/algo/spectral.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "core/backend/Accelerator.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/errors.hpp"

namespace fathom {

namespace {

using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;

/// A symmetric weighted graph on local vertex numbers 0 .. n-1.
struct LocalGraph {
    std::int64_t num_vertices = 0;
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int32_t> columns;
    std::vector<double> weights;
};

/// The subgraph induced by the cells of one component (all edges stay inside it).
LocalGraph induced_subgraph(const CsrGraph& graph, const std::vector<std::int64_t>& cells,
                            const std::vector<std::int32_t>& local_index) {
    LocalGraph local;
    local.num_vertices = static_cast<std::int64_t>(cells.size());
    local.offsets.reserve(cells.size() + 1);
    for (const std::int64_t cell : cells) {
        const auto columns = graph.row_indices(cell);
        const auto values = graph.row_values(cell);
        for (std::size_t entry = 0; entry < columns.size(); ++entry) {
            local.columns.push_back(local_index[static_cast<std::size_t>(columns[entry])]);
            local.weights.push_back(values[entry]);
        }
        local.offsets.push_back(static_cast<std::int64_t>(local.columns.size()));
    }
    return local;
}

/// y = D^-1/2 W D^-1/2 x: the operator whose largest eigenpairs are the smallest of
/// the normalised Laplacian I - D^-1/2 W D^-1/2 (same eigenvectors). Rows in parallel,
/// each summed in a fixed order: deterministic for any thread count.
class NormalizedAdjacency {
public:
    explicit NormalizedAdjacency(const LocalGraph& graph) : m_graph(graph), m_scale(static_cast<std::size_t>(graph.num_vertices)) {
        for (std::int64_t vertex = 0; vertex < graph.num_vertices; ++vertex) {
            double degree = 0.0;
            for (auto entry = graph.offsets[static_cast<std::size_t>(vertex)]; entry < graph.offsets[static_cast<std::size_t>(vertex) + 1]; ++entry)
                degree += graph.weights[static_cast<std::size_t>(entry)];
            m_scale[static_cast<std::size_t>(vertex)] = degree > 0.0 ? 1.0 / std::sqrt(degree) : 0.0;
        }
    }
    std::int64_t size() const noexcept { return m_graph.num_vertices; }
    /// The matrix as CSR with the scaling folded into the values (for an accelerator).
    NormalizedAdjacencyCsr csr() const {
        NormalizedAdjacencyCsr out;
        out.num_vertices = m_graph.num_vertices;
        out.offsets = m_graph.offsets;
        out.columns = m_graph.columns;
        out.values.resize(m_graph.weights.size());
        for (std::int64_t vertex = 0; vertex < m_graph.num_vertices; ++vertex)
            for (auto entry = m_graph.offsets[static_cast<std::size_t>(vertex)]; entry < m_graph.offsets[static_cast<std::size_t>(vertex) + 1]; ++entry) {
                const auto column = static_cast<std::size_t>(m_graph.columns[static_cast<std::size_t>(entry)]);
                out.values[static_cast<std::size_t>(entry)] =
                    m_graph.weights[static_cast<std::size_t>(entry)] * m_scale[static_cast<std::size_t>(vertex)] * m_scale[column];
            }
        return out;
    }
    /// y = D^-1/2 W (D^-1/2 x): the inner scaling first, so that each entry gathers one
    /// vector (not the scale and x).
    void apply(const double* x, double* y) const {
        const auto n = static_cast<std::size_t>(m_graph.num_vertices);
        if (m_scaled.size() != n) m_scaled.resize(n);
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 16384), [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t vertex = range.begin(); vertex != range.end(); ++vertex) m_scaled[vertex] = m_scale[vertex] * x[vertex];
        });
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m_graph.num_vertices, 4096),
                          [&](const tbb::blocked_range<std::int64_t>& range) {
                              for (std::int64_t vertex = range.begin(); vertex != range.end(); ++vertex) {
                                  double sum = 0.0;
                                  for (auto entry = m_graph.offsets[static_cast<std::size_t>(vertex)];
                                       entry < m_graph.offsets[static_cast<std::size_t>(vertex) + 1]; ++entry) {
                                      const auto column = static_cast<std::size_t>(m_graph.columns[static_cast<std::size_t>(entry)]);
                                      sum += m_graph.weights[static_cast<std::size_t>(entry)] * m_scaled[column];
                                  }
                                  y[vertex] = sum * m_scale[static_cast<std::size_t>(vertex)];
                              }
                          });
    }
    /// Dense I - D^-1/2 W D^-1/2 (small components only).
    Matrix dense_laplacian() const {
        const auto n = m_graph.num_vertices;
        Matrix laplacian = Matrix::Identity(n, n);
        for (std::int64_t vertex = 0; vertex < n; ++vertex)
            for (auto entry = m_graph.offsets[static_cast<std::size_t>(vertex)]; entry < m_graph.offsets[static_cast<std::size_t>(vertex) + 1]; ++entry) {
                const auto column = m_graph.columns[static_cast<std::size_t>(entry)];
                laplacian(vertex, column) -= m_graph.weights[static_cast<std::size_t>(entry)] * m_scale[static_cast<std::size_t>(vertex)] *
                                             m_scale[static_cast<std::size_t>(column)];
            }
        return laplacian;
    }

private:
    const LocalGraph& m_graph;
    std::vector<double> m_scale;
    mutable std::vector<double> m_scaled;  ///< D^-1/2 x of the current product
};

/// The `count` smallest-eigenvalue eigenvectors of the normalised Laplacian,
/// eigenvalue order, as columns.
struct Eigenvectors {
    Matrix vectors;
    bool converged = true;
    int restarts = 0;
};

using Operator = std::function<void(const double* x, double* y)>;

/// Dense steps of the double-precision solver on the n x m Krylov basis, split into fixed
/// blocks of rows run in parallel (Eigen's own products are single-threaded). Blocks do not depend on
/// the number of threads and partial sums are added in block order, so the results are
/// the same for any thread count.
constexpr std::int64_t kDoubleRowBlock = 8192;

std::int64_t num_double_row_blocks(std::int64_t rows) { return (rows + kDoubleRowBlock - 1) / kDoubleRowBlock; }

/// V^T w for the columns of `basis` (n x c).
Vector project_onto(const Eigen::Ref<const Matrix>& basis, const Vector& w) {
    const std::int64_t rows = basis.rows();
    const std::int64_t blocks = num_double_row_blocks(rows);
    Matrix partials(basis.cols(), blocks);
    tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
        const std::int64_t begin = block * kDoubleRowBlock;
        const std::int64_t count = std::min(kDoubleRowBlock, rows - begin);
        partials.col(block).noalias() = basis.middleRows(begin, count).transpose() * w.segment(begin, count);
    });
    Vector total = Vector::Zero(basis.cols());
    for (std::int64_t block = 0; block < blocks; ++block) total += partials.col(block);
    return total;
}

/// w -= V c.
void subtract_combination(const Eigen::Ref<const Matrix>& basis, const Vector& coefficients, Vector& w) {
    const std::int64_t rows = basis.rows();
    tbb::parallel_for(std::int64_t{0}, num_double_row_blocks(rows), [&](std::int64_t block) {
        const std::int64_t begin = block * kDoubleRowBlock;
        const std::int64_t count = std::min(kDoubleRowBlock, rows - begin);
        w.segment(begin, count).noalias() -= basis.middleRows(begin, count) * coefficients;
    });
}

/// V R (n x c times c x r), row blocks in parallel.
Matrix combine_columns(const Eigen::Ref<const Matrix>& basis, const Eigen::Ref<const Matrix>& combination) {
    const std::int64_t rows = basis.rows();
    Matrix out(rows, combination.cols());
    tbb::parallel_for(std::int64_t{0}, num_double_row_blocks(rows), [&](std::int64_t block) {
        const std::int64_t begin = block * kDoubleRowBlock;
        const std::int64_t count = std::min(kDoubleRowBlock, rows - begin);
        out.middleRows(begin, count).noalias() = basis.middleRows(begin, count) * combination;
    });
    return out;
}

/// Rayleigh-Ritz step of Krylov-Schur on the m x m projection (upper triangle filled):
/// the Ritz vectors and values in descending order, and whether the `wanted` leading
/// pairs have converged (|beta * last component| <= tolerance).
struct RitzPairs {
    Matrix vectors;
    Vector values;
    bool converged = true;
};
RitzPairs ritz_pairs(const Matrix& projected, int wanted, double beta, double tolerance) {
    const auto m = static_cast<int>(projected.rows());
    const Matrix symmetric = projected.selfadjointView<Eigen::Upper>();
    Eigen::SelfAdjointEigenSolver<Matrix> solver(symmetric);
    const Vector& values = solver.eigenvalues();  // ascending
    const Matrix& vectors = solver.eigenvectors();
    RitzPairs out{Matrix(m, m), Vector(m), true};
    for (int index = 0; index < m; ++index) {
        out.vectors.col(index) = vectors.col(m - 1 - index);
        out.values[index] = values[m - 1 - index];
    }
    for (int index = 0; index < wanted; ++index)
        out.converged = out.converged && std::fabs(beta * out.vectors(m - 1, index)) <= tolerance;
    return out;
}

/// Largest `wanted` eigenpairs of the symmetric operator by Krylov-Schur (thick-restart
/// Lanczos with full re-orthogonalisation), the basis in double precision. Start vector:
/// all ones (umap's v0).
Eigenvectors largest_eigenvectors_double(std::int64_t n, const Operator& apply, int wanted, int basis_size, double tolerance,
                                  int max_restarts, std::uint64_t seed, JobContext& ctx) {
    const int m = basis_size;
    Matrix basis(n, m + 1);
    Matrix projected = Matrix::Zero(m, m);
    basis.col(0).setConstant(1.0 / std::sqrt(static_cast<double>(n)));
    std::mt19937_64 generator(seed ^ 0x5bd1e995u);
    std::normal_distribution<double> normal;
    Vector w(n);
    int kept = 0;
    double beta = 0.0;
    Eigenvectors result;
    for (int restart = 0;; ++restart) {
        for (int column = kept; column < m; ++column) {
            ctx.checkpoint();
            apply(basis.col(column).data(), w.data());
            const auto previous = basis.leftCols(column + 1);
            Vector coefficients = project_onto(previous, w);
            subtract_combination(previous, coefficients, w);
            const Vector correction = project_onto(previous, w);  // second Gram-Schmidt pass (DGKS)
            subtract_combination(previous, correction, w);
            coefficients += correction;
            projected.col(column).head(column + 1) = coefficients;
            beta = w.norm();
            if (beta < 1e-12) {
                // Invariant subspace: continue from a fresh direction orthogonal to the basis;
                // the coupling to it is zero.
                for (std::int64_t row = 0; row < n; ++row) w[row] = normal(generator);
                for (int pass = 0; pass < 2; ++pass) w.noalias() -= previous * (previous.transpose() * w);
                basis.col(column + 1) = w / w.norm();
                beta = 0.0;
            } else {
                basis.col(column + 1) = w / beta;
            }
        }
        const RitzPairs pairs = ritz_pairs(projected, wanted, beta, tolerance);
        const Matrix& ritz = pairs.vectors;
        const Vector& thetas = pairs.values;
        const bool converged = pairs.converged;
        if (converged || restart >= max_restarts) {
            result.vectors = combine_columns(basis.leftCols(m), ritz.leftCols(wanted));
            result.converged = converged;
            result.restarts = restart;
            return result;
        }
        ctx.report(static_cast<double>(restart + 1) / static_cast<double>(max_restarts + 1));
        // Thick restart: keep the best `kept` Ritz vectors and the residual direction.
        kept = std::clamp(wanted + (m - wanted) / 2, wanted + 1, m - 1);
        const Matrix kept_vectors = combine_columns(basis.leftCols(m), ritz.leftCols(kept));
        const Vector residual = basis.col(m);
        basis.leftCols(kept) = kept_vectors;
        basis.col(kept) = residual;
        projected.setZero();
        for (int index = 0; index < kept; ++index) projected(index, index) = thetas[index];
        // projected(i, kept) = beta * ritz(m - 1, i) is recomputed by the next projection.
    }
}

/// Dense steps of the single-precision solver on the n x (m + 1) Krylov basis, split into
/// fixed blocks of rows run in parallel. Blocks do not depend on the number of threads and
/// partial sums are added in block order, so the results are the same for any thread
/// count. A block's rows of the basis (4096 x 41 at most: 0.7 MB) stay in a core's cache
/// between the two halves of a fused pass.
constexpr std::int64_t kRowBlock = 4096;

std::int64_t num_row_blocks(std::int64_t rows) { return (rows + kRowBlock - 1) / kRowBlock; }

/// Lanes of the dot products: eight partial sums in a fixed order (vector code on any
/// instruction set, the same sum on every thread).
constexpr int kDotLanes = 8;

/// sum_r v[r] w[r] over `rows` entries, accumulated in double.
template <typename Scalar>
inline __attribute__((always_inline)) double dot_lanes(const Scalar* v, const double* w, std::int64_t rows) {
    double lanes[kDotLanes] = {};
    std::int64_t row = 0;
    for (; row + kDotLanes <= rows; row += kDotLanes)
        for (int lane = 0; lane < kDotLanes; ++lane) lanes[lane] += static_cast<double>(v[row + lane]) * w[row + lane];
    for (int lane = 0; row + lane < rows; ++lane) lanes[lane] += static_cast<double>(v[row + lane]) * w[row + lane];
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

/// out[c] = V[:, c]^T w over one block of rows, c < count (V column-major, `stride` rows).
template <typename Scalar>
inline __attribute__((always_inline)) void project_rows(const Scalar* basis, std::int64_t stride, int count,
                                                        const double* w, std::int64_t begin, std::int64_t rows,
                                                        double* out) {
    for (int column = 0; column < count; ++column) out[column] = dot_lanes(basis + column * stride + begin, w + begin, rows);
}

/// w -= V h over one block of rows.
template <typename Scalar>
inline __attribute__((always_inline)) void subtract_rows(const Scalar* basis, std::int64_t stride, int count,
                                                         const double* coefficients, double* w, std::int64_t begin,
                                                         std::int64_t rows) {
    double* segment = w + begin;
    for (int column = 0; column < count; ++column) {
        const Scalar* vector = basis + column * stride + begin;
        const double coefficient = coefficients[column];
        for (std::int64_t row = 0; row < rows; ++row) segment[row] -= static_cast<double>(vector[row]) * coefficient;
    }
}

/// The second Gram-Schmidt pass fused with the first's subtraction: w -= V h, then
/// out = V^T w, over one block of rows (the block of V is read from memory once).
template <typename Scalar>
inline __attribute__((always_inline)) void subtract_project_rows(const Scalar* basis, std::int64_t stride, int count,
                                                                 const double* coefficients, double* w,
                                                                 std::int64_t begin, std::int64_t rows, double* out) {
    subtract_rows(basis, stride, count, coefficients, w, begin, rows);
    project_rows(basis, stride, count, w, begin, rows, out);
}

/// The last subtraction with the squared norm of the result over one block of rows.
template <typename Scalar>
inline __attribute__((always_inline)) double subtract_norm_rows(const Scalar* basis, std::int64_t stride, int count,
                                                                const double* coefficients, double* w,
                                                                std::int64_t begin, std::int64_t rows) {
    subtract_rows(basis, stride, count, coefficients, w, begin, rows);
    return dot_lanes(w + begin, w + begin, rows);
}

/// out[:, j] = V[:, :count] R[:, j] over one block of rows, j < num_out (R column-major
/// with `count` rows; out column-major with `stride` rows), accumulated in double.
template <typename Scalar, typename Out>
inline __attribute__((always_inline)) void combine_rows(const Scalar* basis, std::int64_t stride, int count,
                                                        const double* combination, int num_out, Out* out,
                                                        std::int64_t out_stride, std::int64_t begin, std::int64_t rows) {
    double sums[kRowBlock];
    for (int target = 0; target < num_out; ++target) {
        for (std::int64_t row = 0; row < rows; ++row) sums[row] = 0.0;
        for (int column = 0; column < count; ++column) {
            const Scalar* vector = basis + column * stride + begin;
            const double coefficient = combination[target * count + column];
            for (std::int64_t row = 0; row < rows; ++row) sums[row] += static_cast<double>(vector[row]) * coefficient;
        }
        Out* destination = out + target * out_stride + begin;
        for (std::int64_t row = 0; row < rows; ++row) destination[row] = static_cast<Out>(sums[row]);
    }
}

// The kernels of the single-precision basis, cloned for AVX-512 and AVX2 (chosen at run time).
#define FATHOM_SPECTRAL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define FATHOM_SPECTRAL_KERNELS(Scalar)                                                                                   \
    FATHOM_SPECTRAL_CLONES void project_block(const Scalar* basis, std::int64_t stride, int count, const double* w,      \
                                              std::int64_t begin, std::int64_t rows, double* out) {                    \
        project_rows(basis, stride, count, w, begin, rows, out);                                                         \
    }                                                                                                                     \
    FATHOM_SPECTRAL_CLONES void subtract_project_block(const Scalar* basis, std::int64_t stride, int count,             \
                                                       const double* coefficients, double* w, std::int64_t begin,       \
                                                       std::int64_t rows, double* out) {                                \
        subtract_project_rows(basis, stride, count, coefficients, w, begin, rows, out);                                  \
    }                                                                                                                     \
    FATHOM_SPECTRAL_CLONES double subtract_norm_block(const Scalar* basis, std::int64_t stride, int count,              \
                                                      const double* coefficients, double* w, std::int64_t begin,        \
                                                      std::int64_t rows) {                                              \
        return subtract_norm_rows(basis, stride, count, coefficients, w, begin, rows);                                   \
    }                                                                                                                     \
    FATHOM_SPECTRAL_CLONES void combine_block(const Scalar* basis, std::int64_t stride, int count,                      \
                                              const double* combination, int num_out, Scalar* out,                      \
                                              std::int64_t out_stride, std::int64_t begin, std::int64_t rows) {         \
        combine_rows(basis, stride, count, combination, num_out, out, out_stride, begin, rows);                          \
    }                                                                                                                     \
    FATHOM_SPECTRAL_CLONES void combine_block_double(const Scalar* basis, std::int64_t stride, int count,               \
                                                     const double* combination, int num_out, double* out,               \
                                                     std::int64_t out_stride, std::int64_t begin, std::int64_t rows) {  \
        combine_rows(basis, stride, count, combination, num_out, out, out_stride, begin, rows);                          \
    }
FATHOM_SPECTRAL_KERNELS(float)
#undef FATHOM_SPECTRAL_KERNELS
#undef FATHOM_SPECTRAL_CLONES

/// The Krylov basis: n x columns, column-major, in Scalar (float: see kSingleTolerance),
/// with the block-parallel steps above.
template <typename Scalar>
class KrylovBasis {
public:
    KrylovBasis(std::int64_t rows, int columns)
        : m_rows(rows), m_columns(columns), m_values(static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns)),
          m_partials(static_cast<std::size_t>(num_row_blocks(rows)) * static_cast<std::size_t>(columns)) {}
    std::int64_t rows() const noexcept { return m_rows; }
    Scalar* column(int index) noexcept { return m_values.data() + static_cast<std::int64_t>(index) * m_rows; }
    const Scalar* column(int index) const noexcept { return m_values.data() + static_cast<std::int64_t>(index) * m_rows; }

    /// Makes w orthogonal to the first `count` columns by classical Gram-Schmidt with one
    /// reorthogonalisation (DGKS), three passes over those columns: h1 = V^T w;
    /// w -= V h1 with h2 = V^T w; w -= V h2. Returns h1 + h2; `norm_squared` receives |w|^2.
    Vector orthogonalise(int count, Vector& w, double& norm_squared) {
        const std::int64_t blocks = num_row_blocks(m_rows);
        const Scalar* basis = m_values.data();
        tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
            const std::int64_t begin = block * kRowBlock;
            project_block(basis, m_rows, count, w.data(), begin, std::min(kRowBlock, m_rows - begin), partial(block));
        });
        const Vector first = sum_partials(count);
        tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
            const std::int64_t begin = block * kRowBlock;
            subtract_project_block(basis, m_rows, count, first.data(), w.data(), begin, std::min(kRowBlock, m_rows - begin),
                                   partial(block));
        });
        const Vector second = sum_partials(count);
        std::vector<double> squares(static_cast<std::size_t>(blocks));
        tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t block) {
            const std::int64_t begin = block * kRowBlock;
            squares[static_cast<std::size_t>(block)] =
                subtract_norm_block(basis, m_rows, count, second.data(), w.data(), begin, std::min(kRowBlock, m_rows - begin));
        });
        norm_squared = 0.0;
        for (const double square : squares) norm_squared += square;
        return first + second;
    }

    /// Column `index` = w / norm.
    void set_column(int index, const Vector& w, double norm) {
        Scalar* destination = column(index);
        const double inverse = 1.0 / norm;
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m_rows, kRowBlock), [&](const tbb::blocked_range<std::int64_t>& range) {
            for (std::int64_t row = range.begin(); row != range.end(); ++row) destination[row] = static_cast<Scalar>(w[row] * inverse);
        });
    }

    /// Column `index` as doubles into `out` (n).
    void get_column(int index, double* out) const {
        const Scalar* source = column(index);
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m_rows, kRowBlock), [&](const tbb::blocked_range<std::int64_t>& range) {
            for (std::int64_t row = range.begin(); row != range.end(); ++row) out[row] = static_cast<double>(source[row]);
        });
    }

    /// V[:, :count] R (count x R.cols()) in double.
    Matrix combine(int count, const Matrix& combination) const {
        Matrix result(m_rows, combination.cols());
        const Matrix packed = combination.topRows(count);  // contiguous, count rows
        tbb::parallel_for(std::int64_t{0}, num_row_blocks(m_rows), [&](std::int64_t block) {
            const std::int64_t begin = block * kRowBlock;
            combine_block_double(m_values.data(), m_rows, count, packed.data(), static_cast<int>(packed.cols()),
                                 result.data(), m_rows, begin, std::min(kRowBlock, m_rows - begin));
        });
        return result;
    }

    /// Thick restart: the first R.cols() columns become V[:, :count] R.
    void replace_leading(int count, const Matrix& combination) {
        const std::vector<Scalar> out = combine_into(count, combination);
        std::copy(out.begin(), out.end(), m_values.begin());
    }

private:
    double* partial(std::int64_t block) noexcept { return m_partials.data() + block * m_columns; }
    /// The blocks' partial vectors (first `count` entries of each) summed in block order.
    Vector sum_partials(int count) const {
        Vector total = Vector::Zero(count);
        for (std::int64_t block = 0; block < num_row_blocks(m_rows); ++block)
            total += Eigen::Map<const Vector>(m_partials.data() + block * m_columns, count);
        return total;
    }
    std::vector<Scalar> combine_into(int count, const Matrix& combination) const {
        std::vector<Scalar> out(static_cast<std::size_t>(m_rows) * static_cast<std::size_t>(combination.cols()));
        const Matrix packed = combination.topRows(count);  // contiguous, count rows
        tbb::parallel_for(std::int64_t{0}, num_row_blocks(m_rows), [&](std::int64_t block) {
            const std::int64_t begin = block * kRowBlock;
            combine_block(m_values.data(), m_rows, count, packed.data(), static_cast<int>(packed.cols()), out.data(), m_rows,
                          begin, std::min(kRowBlock, m_rows - begin));
        });
        return out;
    }
    std::int64_t m_rows;
    int m_columns;
    std::vector<Scalar> m_values;
    std::vector<double> m_partials;  ///< one vector of `m_columns` per row block
};

/// Largest `wanted` eigenpairs as largest_eigenvectors_double, the basis stored in
/// Scalar; products, projections and sums are in double.
template <typename Scalar>
Eigenvectors largest_eigenvectors(std::int64_t n, const Operator& apply, int wanted, int basis_size, double tolerance,
                                  int max_restarts, std::uint64_t seed, JobContext& ctx) {
    const int m = basis_size;
    KrylovBasis<Scalar> basis(n, m + 1);
    Matrix projected = Matrix::Zero(m, m);
    std::fill(basis.column(0), basis.column(0) + n, static_cast<Scalar>(1.0 / std::sqrt(static_cast<double>(n))));
    std::mt19937_64 generator(seed ^ 0x5bd1e995u);
    std::normal_distribution<double> normal;
    Vector w(n);
    Vector x(n);
    int kept = 0;
    double beta = 0.0;
    Eigenvectors result;
    for (int restart = 0;; ++restart) {
        for (int column = kept; column < m; ++column) {
            ctx.checkpoint();
            basis.get_column(column, x.data());
            apply(x.data(), w.data());
            double norm_squared = 0.0;
            const Vector coefficients = basis.orthogonalise(column + 1, w, norm_squared);
            projected.col(column).head(column + 1) = coefficients;
            beta = std::sqrt(norm_squared);
            if (beta < 1e-12) {
                // Invariant subspace: continue from a fresh direction orthogonal to the basis;
                // the coupling to it is zero.
                for (std::int64_t row = 0; row < n; ++row) w[row] = normal(generator);
                basis.orthogonalise(column + 1, w, norm_squared);
                basis.set_column(column + 1, w, std::sqrt(norm_squared));
                beta = 0.0;
            } else {
                basis.set_column(column + 1, w, beta);
            }
        }
        const RitzPairs pairs = ritz_pairs(projected, wanted, beta, tolerance);
        const Matrix& ritz = pairs.vectors;
        const Vector& thetas = pairs.values;
        const bool converged = pairs.converged;
        if (converged || restart >= max_restarts) {
            result.vectors = basis.combine(m, ritz.leftCols(wanted));
            result.converged = converged;
            result.restarts = restart;
            return result;
        }
        ctx.report(static_cast<double>(restart + 1) / static_cast<double>(max_restarts + 1));
        // Thick restart: keep the best `kept` Ritz vectors and the residual direction.
        kept = std::clamp(wanted + (m - wanted) / 2, wanted + 1, m - 1);
        basis.replace_leading(m, ritz.leftCols(kept));
        std::copy(basis.column(m), basis.column(m) + n, basis.column(kept));
        projected.setZero();
        for (int index = 0; index < kept; ++index) projected(index, index) = thetas[index];
        // projected(i, kept) = beta * ritz(m - 1, i) is recomputed by the next projection.
    }
}

/// The single-precision basis: for components of at least kSingleMinVertices vertices
/// solved to a tolerance of at least kSingleTolerance. Its rounding (about 6e-8 of each
/// entry) is far below such a tolerance, and it halves the memory that the
/// re-orthogonalisation (which dominates the solve) streams; with the fused passes the
/// solve on 100k cells took 1.2 s of CPU instead of 2.0. Smaller components take
/// milliseconds either way and keep the double-precision solver, so their layouts stay
/// as they were: UMAP's SGD amplifies any rounding change in its start into a different
/// layout, and on 1,107 cells such a change moved the trustworthiness by 0.01.
constexpr double kSingleTolerance = 1e-5;
constexpr std::int64_t kSingleMinVertices = 20000;

bool single_precision_basis(std::int64_t n, double tolerance) { return n >= kSingleMinVertices && tolerance >= kSingleTolerance; }

Eigenvectors largest_eigenvectors(std::int64_t n, const Operator& apply, int wanted, int basis_size, double tolerance,
                                  int max_restarts, std::uint64_t seed, JobContext& ctx) {
    if (single_precision_basis(n, tolerance))
        return largest_eigenvectors<float>(n, apply, wanted, basis_size, tolerance, max_restarts, seed, ctx);
    return largest_eigenvectors_double(n, apply, wanted, basis_size, tolerance, max_restarts, seed, ctx);
}

/// The eigenvectors of the 2nd..(dim+1)-th smallest eigenvalues of the normalised
/// Laplacian of one connected graph, umap's `eigenvectors[:, order[1:k]]`.
Eigenvectors laplacian_layout(const LocalGraph& graph, int dim, const SpectralOptions& options, JobContext& ctx,
                              const Accelerator* accelerator) {
    const NormalizedAdjacency op(graph);
    const std::int64_t n = graph.num_vertices;
    const int k = dim + 1;
    // umap: num_lanczos_vectors = max(2k + 1, int(sqrt(n))). Capped at 40: every new
    // Lanczos vector is orthogonalised twice against the whole basis, which dominates the
    // solve, and on 100k cells (UMAP's tolerance 1e-3) 40 vectors (4 restarts) took 1.8 s of CPU where 64
    // (3 restarts) took 3.2 s and 32 (8 restarts) 2.2 s. Also capped so that the basis
    // stays within about 320 MB for millions of cells (in single precision, twice the
    // vectors: 40 up to 2M cells).
    const std::int64_t basis_entries = single_precision_basis(n, options.tolerance) ? 80'000'000 : 40'000'000;
    int basis_size = std::max(2 * k + 1, static_cast<int>(std::min<double>(std::sqrt(static_cast<double>(n)), 40.0)));
    basis_size = std::max<int>(2 * k + 2, std::min<std::int64_t>(basis_size, basis_entries / std::max<std::int64_t>(n, 1)));
    Eigenvectors result;
    if (n <= 400 || basis_size + 1 >= n) {
        Eigen::SelfAdjointEigenSolver<Matrix> solver(op.dense_laplacian());
        result.vectors = solver.eigenvectors().middleCols(1, dim);
        return result;
    }
    const Operator host = [&op](const double* x, double* y) { op.apply(x, y); };
    bool solved = false;
    if (accelerator != nullptr) {
        const NormalizedAdjacencyCsr csr = op.csr();
        try {
            const std::unique_ptr<DeviceSparseMatrix> matrix =
                accelerator->upload_sparse_matrix(csr.offsets, csr.columns, csr.values, ctx);
            if (matrix) {
                const Operator device = [&matrix](const double* x, double* y) { matrix->multiply(x, y, 1); };
                result = largest_eigenvectors(n, device, k, basis_size, options.tolerance, options.max_restarts, options.seed, ctx);
                solved = true;
            }
        } catch (const DeviceError& error) {
            // The host repeats the solve from the same start, as if there were no device.
            ctx.report(ctx.progress().fraction, std::string(error.what()) + "; the spectral initialisation runs on the CPU instead");
        }
    }
    if (!solved) result = largest_eigenvectors(n, host, k, basis_size, options.tolerance, options.max_restarts, options.seed, ctx);
    result.vectors = Matrix(result.vectors.rightCols(dim));
    return result;
}

/// Makes every column's largest-magnitude entry positive (the solver's sign is arbitrary;
/// this keeps layouts reproducible across solvers).
void fix_signs(Matrix& vectors) {
    for (Eigen::Index column = 0; column < vectors.cols(); ++column) {
        Eigen::Index at = 0;
        vectors.col(column).cwiseAbs().maxCoeff(&at);
        if (vectors(at, column) < 0) vectors.col(column) *= -1.0;
    }
}

/// umap 0.5.3 component_layout: where to put each component. sklearn's
/// SpectralEmbedding(affinity='precomputed') of the centroids' exp(-d^2) affinities,
/// then divided by its maximum.
Matrix component_layout(const DenseMatrix<float>& data, const std::vector<std::int32_t>& labels, int num_components,
                        int dim, std::mt19937_64& generator) {
    Matrix meta(num_components, dim);
    if (data.empty()) {
        // umap without data: np.random.random((n_components, dim)) * 10.
        std::uniform_real_distribution<double> uniform(0.0, 10.0);
        for (Eigen::Index index = 0; index < meta.size(); ++index) meta.data()[index] = uniform(generator);
        return meta;
    }
    Matrix centroids = Matrix::Zero(num_components, data.cols());
    std::vector<double> counts(static_cast<std::size_t>(num_components), 0.0);
    for (std::int64_t cell = 0; cell < data.rows(); ++cell) {
        const auto label = labels[static_cast<std::size_t>(cell)];
        counts[static_cast<std::size_t>(label)] += 1.0;
        for (std::int64_t feature = 0; feature < data.cols(); ++feature) centroids(label, feature) += data(cell, feature);
    }
    for (int label = 0; label < num_components; ++label) centroids.row(label) /= counts[static_cast<std::size_t>(label)];
    Matrix affinity(num_components, num_components);
    for (int a = 0; a < num_components; ++a)
        for (int b = 0; b < num_components; ++b) affinity(a, b) = std::exp(-(centroids.row(a) - centroids.row(b)).squaredNorm());
    // scipy's laplacian(normed=True) ignores the diagonal; isolated nodes get degree 1.
    affinity.diagonal().setZero();
    Vector root_degree = affinity.rowwise().sum().cwiseSqrt();
    for (Eigen::Index index = 0; index < root_degree.size(); ++index)
        if (root_degree[index] == 0.0) root_degree[index] = 1.0;
    Matrix laplacian = -(root_degree.cwiseInverse().asDiagonal() * affinity * root_degree.cwiseInverse().asDiagonal());
    laplacian.diagonal().setOnes();
    Eigen::SelfAdjointEigenSolver<Matrix> solver(laplacian);
    // sklearn: embedding = eigenvectors / dd, deterministic sign flip, drop the first.
    Matrix embedding = root_degree.cwiseInverse().asDiagonal() * solver.eigenvectors().leftCols(dim + 1);
    fix_signs(embedding);
    meta = embedding.rightCols(dim);
    meta /= meta.maxCoeff();
    return meta;
}

}  // namespace

NormalizedAdjacencyCsr normalized_adjacency_csr(const CsrGraph& graph) {
    check_csr_graph(graph, "normalized_adjacency_csr graph");
    std::vector<std::int64_t> cells(static_cast<std::size_t>(graph.num_cells));
    std::vector<std::int32_t> local_index(static_cast<std::size_t>(graph.num_cells));
    std::iota(cells.begin(), cells.end(), std::int64_t{0});
    std::iota(local_index.begin(), local_index.end(), std::int32_t{0});
    const LocalGraph local = induced_subgraph(graph, cells, local_index);
    return NormalizedAdjacency(local).csr();
}

void multiply(const NormalizedAdjacencyCsr& matrix, const double* x, double* y) {
    for (std::int64_t row = 0; row < matrix.num_vertices; ++row) {
        double sum = 0.0;
        for (auto entry = matrix.offsets[static_cast<std::size_t>(row)]; entry < matrix.offsets[static_cast<std::size_t>(row) + 1]; ++entry)
            sum += matrix.values[static_cast<std::size_t>(entry)] * x[matrix.columns[static_cast<std::size_t>(entry)]];
        y[row] = sum;
    }
}

void validate(const SpectralOptions& options) {
    const auto fail = [](const std::string& message) { throw std::invalid_argument("SpectralOptions::" + message); };
    if (options.num_components < 1) fail("num_components must be >= 1, got " + std::to_string(options.num_components));
    if (!(options.tolerance > 0.0)) fail("tolerance must be > 0");
    if (options.max_restarts < 1) fail("max_restarts must be >= 1");
}

std::vector<std::int32_t> connected_components(const CsrGraph& graph, int* count) {
    std::vector<std::int32_t> labels(static_cast<std::size_t>(graph.num_cells), -1);
    std::vector<std::int64_t> stack;
    int next = 0;
    for (std::int64_t start = 0; start < graph.num_cells; ++start) {
        if (labels[static_cast<std::size_t>(start)] >= 0) continue;
        labels[static_cast<std::size_t>(start)] = next;
        stack.push_back(start);
        while (!stack.empty()) {
            const std::int64_t cell = stack.back();
            stack.pop_back();
            for (const auto other : graph.row_indices(cell))
                if (labels[static_cast<std::size_t>(other)] < 0) {
                    labels[static_cast<std::size_t>(other)] = next;
                    stack.push_back(other);
                }
        }
        ++next;
    }
    if (count) *count = next;
    return labels;
}

SpectralResult spectral_layout(const CsrGraph& graph, const DenseMatrix<float>& data, const SpectralOptions& options,
                               JobContext& ctx, const Accelerator* accelerator) {
    validate(options);
    check_csr_graph(graph, "spectral_layout graph");
    if (!data.empty() && data.rows() != graph.num_cells)
        throw std::invalid_argument("spectral_layout: data has " + std::to_string(data.rows()) + " rows; the graph has " +
                                    std::to_string(graph.num_cells) + " cells");
    const int dim = options.num_components;
    const std::int64_t num_cells = graph.num_cells;
    SpectralResult result;
    result.coordinates = DenseMatrix<double>(num_cells, dim);
    std::mt19937_64 generator(options.seed);
    int num_components = 0;
    const auto labels = connected_components(graph, &num_components);
    result.num_graph_components = num_components;

    std::vector<std::vector<std::int64_t>> members(static_cast<std::size_t>(num_components));
    for (std::int64_t cell = 0; cell < num_cells; ++cell) members[static_cast<std::size_t>(labels[static_cast<std::size_t>(cell)])].push_back(cell);
    std::vector<std::int32_t> local_index(static_cast<std::size_t>(num_cells));
    for (const auto& cells : members)
        for (std::size_t position = 0; position < cells.size(); ++position)
            local_index[static_cast<std::size_t>(cells[position])] = static_cast<std::int32_t>(position);

    if (num_components == 1) {
        const LocalGraph local = induced_subgraph(graph, members[0], local_index);
        Eigenvectors layout = laplacian_layout(local, dim, options, ctx, accelerator);
        fix_signs(layout.vectors);
        result.converged = layout.converged;
        result.restarts = layout.restarts;
        for (std::int64_t cell = 0; cell < num_cells; ++cell)
            for (int column = 0; column < dim; ++column) result.coordinates(cell, column) = layout.vectors(cell, column);
        return result;
    }

    // umap 0.5.3 multi_component_layout.
    Matrix meta;
    if (num_components > 2 * dim) {
        meta = component_layout(data, labels, num_components, dim, generator);
    } else {
        const int half = (num_components + 1) / 2;
        Matrix base = Matrix::Zero(half, dim);
        for (int index = 0; index < half; ++index) base(index, index) = 1.0;
        meta = Matrix(num_components, dim);
        for (int label = 0; label < num_components; ++label)
            meta.row(label) = label < half ? base.row(label) : Matrix(-base.row(label - half));
    }
    for (int label = 0; label < num_components; ++label) {
        ctx.checkpoint();
        const auto& cells = members[static_cast<std::size_t>(label)];
        double nearest = std::numeric_limits<double>::infinity();
        for (int other = 0; other < num_components; ++other) {
            const double distance = (meta.row(label) - meta.row(other)).norm();
            if (distance > 0.0) nearest = std::min(nearest, distance);
        }
        const double data_range = std::isfinite(nearest) ? nearest / 2.0 : 1.0;
        const auto size = static_cast<std::int64_t>(cells.size());
        const auto place_randomly = [&] {
            std::uniform_real_distribution<double> uniform(-data_range, data_range);
            for (const std::int64_t cell : cells)
                for (int column = 0; column < dim; ++column) result.coordinates(cell, column) = uniform(generator) + meta(label, column);
        };
        if (size < 2 * dim || size <= dim + 1) {
            place_randomly();
            continue;
        }
        const LocalGraph local = induced_subgraph(graph, cells, local_index);
        Eigenvectors layout = laplacian_layout(local, dim, options, ctx, accelerator);
        fix_signs(layout.vectors);
        result.converged = result.converged && layout.converged;
        result.restarts += layout.restarts;
        const double largest = layout.vectors.cwiseAbs().maxCoeff();
        const double expansion = largest > 0.0 ? data_range / largest : 1.0;
        for (std::size_t position = 0; position < cells.size(); ++position)
            for (int column = 0; column < dim; ++column)
                result.coordinates(cells[position], column) =
                    layout.vectors(static_cast<Eigen::Index>(position), column) * expansion + meta(label, column);
    }
    return result;
}

}  // namespace fathom
