#pragma once
/// Quality measures for the graph steps, written independently of core/algo so that
/// tests compare against something obviously correct: sklearn's trustworthiness,
/// the adjusted Rand index, neighbour-set recall, and readers for the reference CSR
/// graphs (obsp['distances'], obsp['connectivities']) stored as three .npy files.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom::test {

/// sklearn.manifold.trustworthiness(X, X_embedded, n_neighbors=k, metric='euclidean'):
/// 1 - 2 / (n k (2n - 3k - 1)) * sum_i sum_{j in kNN_embedded(i)} max(0, r(i, j) - k),
/// with r(i, j) the rank of j among i's neighbours in the original space (1 = nearest,
/// self excluded). Distance ties are ranked as equal (sklearn breaks them by sort
/// order; irrelevant on real data). O(n^2 dims), multi-threaded.
double trustworthiness(const DenseMatrix<float>& original, const DenseMatrix<float>& embedded, int num_neighbors);

/// Adjusted Rand index (Hubert & Arabie) of two labelings of the same cells, as
/// sklearn.metrics.adjusted_rand_score. Labels are arbitrary integers.
double adjusted_rand_index(std::span<const std::int64_t> labels_a, std::span<const std::int64_t> labels_b);

/// A CSR matrix as read from the reference (indices and values widened).
struct ReferenceCsr {
    std::int64_t num_rows = 0;
    std::vector<std::int64_t> indptr;
    std::vector<std::int64_t> indices;
    std::vector<double> data;
    std::int64_t nnz() const { return indptr.empty() ? 0 : indptr.back(); }
};

/// Reads <folder>/<name>_{data,indices,indptr}.npy; throws std::runtime_error naming
/// the file when they are missing or inconsistent.
ReferenceCsr read_reference_csr(const std::filesystem::path& folder, const std::string& name);

/// Mean over rows of |found(row) ∩ truth(row)| / |truth(row)| (rows with an empty truth
/// are skipped). Both are CSR neighbour lists over the same rows (values ignored).
double row_recall(const ReferenceCsr& found, const ReferenceCsr& truth);

}  // namespace fathom::test
