#include "core/algo/knn_graph.hpp"

#include <stdexcept>
#include <string>

namespace fathom {

void check_csr_graph(const CsrGraph& graph, const char* what) {
    const auto fail = [what](const std::string& problem) {
        throw std::invalid_argument(std::string(what) + ": " + problem);
    };
    if (graph.num_cells < 0) fail("negative num_cells");
    if (static_cast<std::int64_t>(graph.row_offsets.size()) != graph.num_cells + 1)
        fail("row_offsets has " + std::to_string(graph.row_offsets.size()) + " entries; expected num_cells + 1 = " +
             std::to_string(graph.num_cells + 1));
    if (graph.row_offsets.front() != 0) fail("row_offsets does not start at 0");
    const std::int64_t nnz = graph.row_offsets.back();
    if (static_cast<std::int64_t>(graph.col_indices.size()) != nnz || static_cast<std::int64_t>(graph.values.size()) != nnz)
        fail("col_indices/values sizes (" + std::to_string(graph.col_indices.size()) + ", " +
             std::to_string(graph.values.size()) + ") differ from the " + std::to_string(nnz) + " entries of row_offsets");
    for (std::int64_t row = 0; row < graph.num_cells; ++row) {
        const std::int64_t begin = graph.row_offsets[static_cast<std::size_t>(row)];
        const std::int64_t end = graph.row_offsets[static_cast<std::size_t>(row) + 1];
        if (end < begin) fail("row_offsets decreases at row " + std::to_string(row));
        for (std::int64_t entry = begin; entry < end; ++entry) {
            const std::int32_t column = graph.col_indices[static_cast<std::size_t>(entry)];
            if (column < 0 || column >= graph.num_cells)
                fail("row " + std::to_string(row) + " has column " + std::to_string(column) + " outside [0, " +
                     std::to_string(graph.num_cells) + ")");
            if (entry > begin && column <= graph.col_indices[static_cast<std::size_t>(entry) - 1])
                fail("row " + std::to_string(row) + " has unsorted or repeated column indices");
        }
    }
}

}  // namespace fathom
