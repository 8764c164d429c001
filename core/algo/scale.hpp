#pragma once
/// Standardisation, as scanpy's pp.scale(zero_center=True). The scaled matrix is not
/// materialised: the result describes it (per-gene mean and std), and the Gram and
/// projection primitives apply it on the fly. Shards are not changed.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/scale_options.hpp"

namespace fathom {

/// The standardisation z = (x - mean) / std of every gene of the current matrix.
struct ScaleResult {
    std::vector<double> mean;        ///< per gene (ddof irrelevant)
    std::vector<double> std;         ///< per gene, ddof=1; 0 replaced by 1 (scanpy)
    std::vector<double> inv_std;     ///< 1 / std
    std::optional<double> max_value; ///< upper clip, when set
    std::optional<double> min_value; ///< lower clip, when set
    /// The Standardization that Backend primitives take (views into this result).
    Standardization standardization() const;
};

/// Throws std::invalid_argument naming the field.
void validate(const ScaleOptions& options);

/// Per-gene mean and ddof=1 std of the current values (scanpy's _get_mean_var).
ScaleResult scale(const ShardSet& shards, const ScaleOptions& options, JobContext& ctx);

}  // namespace fathom
