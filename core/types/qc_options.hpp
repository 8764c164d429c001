#pragma once
/// Options of the QC metrics (core/algo/qc.hpp).
#include <string>
#include <vector>

namespace fathom {

/// Options of calculate_qc_metrics.
struct QcOptions {
    /// A gene is mitochondrial when its name starts with one of these prefixes
    /// (scanpy tutorials: var_names.str.startswith("MT-"); "mt-" for mouse).
    std::vector<std::string> mito_prefixes{"MT-", "mt-"};
    /// Equal when every field is equal.
    friend bool operator==(const QcOptions&, const QcOptions&) = default;
};

}  // namespace fathom
