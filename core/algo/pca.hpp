#pragma once
/// Exact PCA of the standardised matrix, as scanpy's pp.pca (zero_center=True) with
/// scikit-learn's PCA: the Gram matrix is reduced across shards, the top eigenpairs of
/// the covariance are found on the host in double (PcaSolver), and the cells are
/// projected shard by shard.
#include <cstdint>
#include <vector>

#include "core/algo/scale.hpp"
#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/pca_options.hpp"

namespace fathom {

class Accelerator;

/// Scores, loadings and explained variance. Signs follow scikit-learn's svd_flip
/// (u_based_decision=True, as scanpy 1.9 / sklearn 1.2 with svd_solver='arpack'):
/// in every component the score of largest absolute value is positive (first such
/// cell on exact ties).
struct PcaResult {
    DenseMatrix<float> scores;                  ///< cells x num_components (obsm['X_pca'])
    DenseMatrix<float> loadings;                ///< genes x num_components (varm['PCs'])
    std::vector<double> variance;               ///< eigenvalues of the ddof=1 covariance (uns['pca']['variance'])
    std::vector<double> variance_ratio;         ///< variance / total variance, decreasing (uns['pca']['variance_ratio'])
    double total_variance = 0.0;                ///< trace of the covariance of the (clipped) scaled data
    int num_components = 0;                     ///< after capping
    bool exact_solver = true;                   ///< which solver produced the eigenpairs
    bool accelerated_solver = false;            ///< the eigenpairs came from the accelerator
    int iterations = 0;                         ///< Krylov restart cycles / Lanczos restarts run (0 for the exact solver)
};

/// Throws std::invalid_argument naming the field: "PcaOptions::num_components must be >= 1",
/// or when the matrix is too small (fewer than 2 cells or genes).
void validate(const PcaOptions& options, const MatrixShape& shape);

/// PCA of the shards standardised by `scaling` (every gene of the current matrix).
///
/// `accelerator` (may be null: the host solves): with solver Auto or Exact, the top
/// eigenpairs of the genes x genes covariance come from
/// Accelerator::symmetric_eigenpairs (e.g. cuSOLVER's syevdx on the shards' GPU)
/// instead of the host solvers; a decline leaves them to the host. Ordering and signs
/// then follow the host path (core/algo/pca_eigen.hpp).
PcaResult pca(const ShardSet& shards, const ScaleResult& scaling, const PcaOptions& options, JobContext& ctx,
              const Accelerator* accelerator = nullptr);

}  // namespace fathom
