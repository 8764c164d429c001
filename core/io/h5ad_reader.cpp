// h5ad reader: anndata 0.7 to 0.11 and the pre-0.7 layouts (see detail/h5ad_elements.hpp
// for the element encodings and detail/h5ad_matrix.hpp for the matrix validation rules).
// obs / var are always read; obsm, varm, obsp and uns only with
// ReadOptions::read_annotations. obsp graphs are validated like X (cells x cells).
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/io/detail/hdf5.hpp"
#include "core/io/detail/hdf5_ext.hpp"
#include "core/io/errors.hpp"
#include "core/io/detail/h5ad_elements.hpp"
#include "core/io/detail/h5ad_matrix.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

namespace {

/// Where the selected matrix and its var / varm live in the file.
struct MatrixSelection {
    std::string matrix;       ///< HDF5 object of the matrix
    std::string var;          ///< var dataframe that names its columns
    std::string varm;
    std::string name;         ///< Dataset::matrix_name
    bool allow_absent = false;
};

MatrixSelection select_matrix(const h5::File& file, const std::string& requested) {
    if (requested == "X" || requested.empty()) return {"/X", "/var", "/varm", "X", true};
    if (requested == "raw" || requested == "raw/X") {
        if (file.exists("/raw/X")) return {"/raw/X", "/raw/var", "/raw/varm", "raw/X", false};
        // anndata < 0.7 stored raw as top-level raw.X / raw.var / raw.varm.
        if (file.exists("/raw.X")) return {"/raw.X", "/raw.var", "/raw.varm", "raw/X", false};
        file.fail("/raw/X", "missing: the file has no raw matrix (neither /raw/X nor the legacy /raw.X)");
    }
    if (requested.starts_with("layers/") && requested.size() > 7) {
        const std::string object = "/" + requested;
        if (!file.exists(object)) {
            std::string available;
            if (file.is_group("/layers"))
                for (const auto& name : file.members("/layers")) available += (available.empty() ? "" : ", ") + name;
            file.fail(object, "missing (layers present: " + (available.empty() ? std::string("none") : available) + ")");
        }
        return {object, "/var", "/varm", requested, false};
    }
    throw std::invalid_argument("ReadOptions::matrix must be \"X\", \"raw\" or \"layers/<name>\"; got \"" +
                                requested + "\"");
}

// anndata names the rows of an absent obs / var 0, 1, 2, ... (pandas RangeIndex).
Table range_table(std::int64_t rows) {
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(rows));
    for (std::int64_t row = 0; row < rows; ++row) names.push_back(std::to_string(row));
    return Table(std::move(names), "_index");
}

// True for an element that holds a matrix (sparse group or 2-D numeric dataset).
bool is_matrix_element(const h5::File& file, const std::string& object) {
    if (file.is_group(object)) {
        const std::string encoding = h5ad::encoding_type(file, object);
        return encoding == "csr_matrix" || encoding == "csc_matrix" ||
               (encoding.empty() && file.has_attribute(object, "h5sparse_format"));
    }
    if (!file.is_dataset(object)) return false;
    const h5::Info info = file.dataset_info(object);
    return info.dims.size() == 2 && (info.type_class == h5::TypeClass::Integer || info.type_class == h5::TypeClass::Float);
}

// A cells x cells graph, validated like X, read whole as one square CSR shard.
CsrShard read_graph(const h5::File& file, const std::string& object, std::int64_t num_cells) {
    h5ad::ExpectedShape expected;
    expected.num_cells = num_cells;
    expected.num_genes = num_cells;
    expected.genes_source = "/obs (obsp graphs are cells x cells)";
    auto info = std::make_shared<const h5ad::MatrixInfo>(h5ad::inspect_matrix(file, object, expected, false));
    return h5ad::make_row_source(info)->read_rows(0, num_cells);
}

// obsp plus anndata's _move_adj_mtx (anndata 0.8 compat): old files kept the kNN
// graphs in uns['neighbors']['distances' / 'connectivities'].
std::map<std::string, CsrShard> read_obsp(const h5::File& file, std::int64_t num_cells) {
    std::map<std::string, CsrShard> graphs;
    if (file.is_group("/obsp"))
        for (const auto& name : file.members("/obsp"))
            if (is_matrix_element(file, h5::join("/obsp", name)))
                graphs.emplace(name, read_graph(file, h5::join("/obsp", name), num_cells));
    for (const char* name : {"distances", "connectivities"}) {
        const std::string legacy = std::string("/uns/neighbors/") + name;
        if (!graphs.count(name) && file.exists(legacy) && is_matrix_element(file, legacy))
            graphs.emplace(name, read_graph(file, legacy, num_cells));
    }
    return graphs;
}

}  // namespace

OpenedDataset open_h5ad(const std::string& path, const ReadOptions& options) {
    h5::register_lzf_filter();
    const h5::File file = h5::File::open_read(path);
    const MatrixSelection selection = select_matrix(file, options.matrix);

    std::optional<Table> obs, var;
    if (file.exists("/obs")) obs = h5ad::read_dataframe(file, "/obs");
    if (file.exists(selection.var)) var = h5ad::read_dataframe(file, selection.var);

    h5ad::ExpectedShape expected;
    if (obs) expected.num_cells = obs->num_rows();
    if (var) expected.num_genes = var->num_rows();
    expected.cells_source = "/obs";
    expected.genes_source = selection.var;
    auto info = std::make_shared<const h5ad::MatrixInfo>(
        h5ad::inspect_matrix(file, selection.matrix, expected, selection.allow_absent));

    OpenedDataset opened;
    Dataset& meta = opened.meta;
    meta.path = path;
    meta.format = DatasetFormat::H5ad;
    meta.shape = info->shape;
    meta.nnz = info->nnz;
    meta.stored_type = info->stored_type;
    meta.integer_counts_known = info->integer_counts_known;
    meta.integer_counts = info->integer_counts;
    meta.matrix_layout = h5ad::layout_name(info->layout);
    meta.matrix_name = selection.name;
    meta.obs = obs ? std::move(*obs) : range_table(info->shape.num_cells);
    meta.var = var ? std::move(*var) : range_table(info->shape.num_genes);

    // anndata's read_h5ad always runs _clean_uns on obs and (main) var.
    std::set<std::string> consumed = h5ad::apply_uns_categories(file, "/uns", meta.obs);
    if (selection.var == "/var") consumed.merge(h5ad::apply_uns_categories(file, "/uns", meta.var));

    if (options.read_annotations) {
        meta.obsm = h5ad::read_dense_arrays(file, "/obsm", info->shape.num_cells);
        meta.varm = h5ad::read_dense_arrays(file, selection.varm, info->shape.num_genes);
        meta.obsp = read_obsp(file, info->shape.num_cells);
        meta.uns = h5ad::read_uns(file, "/uns", consumed);  // sparse entries (moved to obsp) are skipped
    }
    opened.source = h5ad::make_row_source(info);
    return opened;
}

}  // namespace fathom::io
