#pragma once
/// AnnData's `uns`: a small typed tree of unstructured annotations.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/types/DenseMatrix.hpp"

namespace fathom {

/// One node of the uns tree: either a dictionary (children) or a leaf value.
/// Scalars are stored as one-element arrays' siblings: a scalar string, number or
/// bool; arrays as 1-D vectors; 2-D numeric arrays as a DenseMatrix<double>.
struct UnsNode {
    using Value = std::variant<std::monostate,              // dictionary (see children)
                               std::string, double, std::int64_t, bool,
                               std::vector<std::string>, std::vector<double>, std::vector<std::int64_t>,
                               DenseMatrix<double>>;
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
