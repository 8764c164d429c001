#pragma once
/// Dense row-major matrices and matrix shapes shared by every layer.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fathom {

/// Shape of a cells x genes matrix.
struct MatrixShape {
    std::int64_t num_cells = 0;  ///< rows (AnnData obs)
    std::int64_t num_genes = 0;  ///< columns (AnnData var)
    friend bool operator==(const MatrixShape&, const MatrixShape&) = default;
};

/// Dense row-major matrix (rows x cols). Used for obsm/varm entries, PCA scores,
/// loadings, embeddings and Gram matrices. Rows are contiguous.
template <typename T>
class DenseMatrix {
public:
    DenseMatrix() = default;
    DenseMatrix(std::int64_t rows, std::int64_t cols, T fill = T{})
        : m_rows(check_dim(rows, "rows")), m_cols(check_dim(cols, "cols")),
          m_values(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols), fill) {}
    DenseMatrix(std::int64_t rows, std::int64_t cols, std::vector<T> values)
        : m_rows(check_dim(rows, "rows")), m_cols(check_dim(cols, "cols")), m_values(std::move(values)) {
        if (m_values.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
            throw std::invalid_argument("DenseMatrix: values.size() " + std::to_string(m_values.size()) +
                                        " != rows * cols = " + std::to_string(rows * cols));
    }

    std::int64_t rows() const noexcept { return m_rows; }
    std::int64_t cols() const noexcept { return m_cols; }
    bool empty() const noexcept { return m_values.empty(); }

    T& operator()(std::int64_t row, std::int64_t col) noexcept { return m_values[index(row, col)]; }
    const T& operator()(std::int64_t row, std::int64_t col) const noexcept { return m_values[index(row, col)]; }

    std::span<T> row(std::int64_t row) noexcept {
        return {m_values.data() + index(row, 0), static_cast<std::size_t>(m_cols)};
    }
    std::span<const T> row(std::int64_t row) const noexcept {
        return {m_values.data() + index(row, 0), static_cast<std::size_t>(m_cols)};
    }

    T* data() noexcept { return m_values.data(); }
    const T* data() const noexcept { return m_values.data(); }
    std::vector<T>& values() noexcept { return m_values; }
    const std::vector<T>& values() const noexcept { return m_values; }

    friend bool operator==(const DenseMatrix&, const DenseMatrix&) = default;

private:
    static std::int64_t check_dim(std::int64_t value, const char* what) {
        if (value < 0) throw std::invalid_argument(std::string("DenseMatrix: negative ") + what);
        return value;
    }
    std::size_t index(std::int64_t row, std::int64_t col) const noexcept {
        return static_cast<std::size_t>(row) * static_cast<std::size_t>(m_cols) + static_cast<std::size_t>(col);
    }

    std::int64_t m_rows = 0;
    std::int64_t m_cols = 0;
    std::vector<T> m_values;
};

}  // namespace fathom
