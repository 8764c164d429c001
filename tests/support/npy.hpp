#pragma once
/// Reader for NumPy .npy files (format 1.0/2.0/3.0, little-endian; C order, or Fortran order for 2-D arrays, returned in C order) as the
/// shared Scanpy references store them: float32/64, int32/64, bool and '<U' strings.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom::test {

struct NpyArray {
    std::string descr;                  ///< e.g. "<f4", "<i8", "<U12", "|b1"
    std::vector<std::int64_t> shape;
    std::vector<double> numbers;        ///< numeric arrays, flattened in C order
    std::vector<std::string> strings;   ///< '<U' arrays
    std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
    std::int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

/// Throws std::runtime_error naming the file on any problem.
NpyArray read_npy(const std::filesystem::path& path);

/// A 2-D numeric .npy file (e.g. a reference's X_pca.npy) as a float matrix; throws
/// std::runtime_error naming the file when it is not numeric.
DenseMatrix<float> read_npy_float_matrix(const std::filesystem::path& path);

}  // namespace fathom::test
