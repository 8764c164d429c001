#pragma once
/// AnnData's `uns`: a small typed tree of unstructured annotations.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom {

/// A NumPy record array (one row per entry, named fields) as scanpy keeps in
/// uns['rank_genes_groups'] ('names', 'scores', ...: one field per group). Every field
/// has the same kind: strings, or numbers stored as float32 (single_precision) or
/// float64. Written as an HDF5 compound dataset (anndata's "rec-array" encoding).
struct UnsRecords {
    std::vector<std::string> fields;                  ///< field names, in order
    std::vector<std::vector<std::string>> strings;    ///< per field, when the fields hold text
    std::vector<std::vector<double>> numbers;         ///< per field, when the fields hold numbers
    bool single_precision = false;                    ///< numbers stored as float32
    /// Rows (entries per field).
    std::size_t num_rows() const noexcept {
        if (!strings.empty()) return strings.front().size();
        return numbers.empty() ? 0 : numbers.front().size();
    }
};

/// One node of the uns tree: either a dictionary (children) or a leaf value.
/// Scalars are stored as one-element arrays' siblings: a scalar string, number or
/// bool; arrays as 1-D vectors; 2-D numeric arrays as a DenseMatrix<double>.
struct UnsNode {
    using Value = std::variant<std::monostate,              // dictionary (see children)
                               std::string, double, std::int64_t, bool,
                               std::vector<std::string>, std::vector<double>, std::vector<std::int64_t>,
                               DenseMatrix<double>, UnsRecords>;
    Value value;                              ///< monostate for a dictionary
    std::map<std::string, UnsNode> children;  ///< entries of a dictionary

    bool is_dict() const noexcept { return std::holds_alternative<std::monostate>(value); }
    /// Child by key, or nullptr.
    const UnsNode* find(const std::string& key) const {
        auto it = children.find(key);
        return it == children.end() ? nullptr : &it->second;
    }
    /// Child by key, created as an empty dictionary when absent.
    UnsNode& operator[](const std::string& key) { return children[key]; }

    static UnsNode leaf(Value value) {
        UnsNode node;
        node.value = std::move(value);
        return node;
    }
};

}  // namespace fathom
