#include "core/io/detail/h5ad_elements.hpp"

#include <charconv>
#include <limits>
#include <map>
#include <utility>

#include "core/io/detail/hdf5_ext.hpp"

namespace fathom::io::h5ad {

namespace {

bool is_numeric(const h5::Info& info) {
    return info.type_class == h5::TypeClass::Integer || info.type_class == h5::TypeClass::Float;
}

std::string format_number(double value) {
    // Shortest round-trip form, as Python's repr(float) prints categories.
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

// A 1-D dataset's length after checking its rank; `what` names the role in messages.
std::int64_t check_vector(const h5::File& file, const std::string& object, const h5::Info& info,
                          const std::string& what) {
    if (info.dims.size() != 1)
        file.fail(object, "expected a 1-D " + what + ", found rank " + std::to_string(info.dims.size()));
    return info.dims[0];
}

void check_rows(const h5::File& file, const std::string& object, std::int64_t found, std::int64_t expected) {
    if (found != expected)
        file.fail(object, "has " + std::to_string(found) + " rows; expected " + std::to_string(expected) +
                              " (the length of the dataframe index)");
}

// Strings of a 1-D (or scalar) dataset; numeric datasets are converted to text
// (integer categories such as louvain's "0", "1", ... and numeric indices).
std::vector<std::string> read_labels(const h5::File& file, const std::string& object) {
    const h5::Info info = file.dataset_info(object);
    if (info.dims.size() > 1) file.fail(object, "expected a 1-D array of labels, found rank " + std::to_string(info.dims.size()));
    switch (info.type_class) {
        case h5::TypeClass::String: return file.read_strings(object);
        case h5::TypeClass::Integer: {
            std::vector<std::string> out;
            for (auto value : file.read_all<std::int64_t>(object)) out.push_back(std::to_string(value));
            return out;
        }
        case h5::TypeClass::Float: {
            std::vector<std::string> out;
            for (auto value : file.read_all<double>(object)) out.push_back(format_number(value));
            return out;
        }
        case h5::TypeClass::Enum:
            if (h5::is_bool_enum_dataset(file, object)) {
                std::vector<std::string> out;
                for (auto value : file.read_all<std::int8_t>(object)) out.push_back(value ? "True" : "False");
                return out;
            }
            [[fallthrough]];
        default: file.fail(object, "expected strings or numbers as labels");
    }
}

std::vector<std::uint8_t> read_bools(const h5::File& file, const std::string& object, std::int64_t num_rows) {
    const h5::Info info = file.dataset_info(object);
    check_rows(file, object, check_vector(file, object, info, "boolean array"), num_rows);
    if (info.type_class != h5::TypeClass::Enum && info.type_class != h5::TypeClass::Integer)
        file.fail(object, "expected a boolean array");
    std::vector<std::uint8_t> out;
    out.reserve(static_cast<std::size_t>(num_rows));
    for (auto value : file.read_all<std::int8_t>(object)) out.push_back(value != 0 ? 1 : 0);
    return out;
}

CategoricalColumn make_categorical(const h5::File& file, const std::string& codes_object,
                                   std::vector<std::string> categories, bool ordered, std::int64_t num_rows) {
    const h5::Info info = file.dataset_info(codes_object);
    check_rows(file, codes_object, check_vector(file, codes_object, info, "codes array"), num_rows);
    if (info.type_class != h5::TypeClass::Integer) file.fail(codes_object, "categorical codes must be integers");
    const auto num_categories = static_cast<std::int64_t>(categories.size());
    if (num_categories > std::numeric_limits<std::int32_t>::max())
        file.fail(codes_object, "more categories than fit in int32 codes");
    CategoricalColumn column;
    column.categories = std::move(categories);
    column.ordered = ordered;
    column.codes.reserve(static_cast<std::size_t>(num_rows));
    const auto codes = file.read_all<std::int64_t>(codes_object);
    for (std::size_t row = 0; row < codes.size(); ++row) {
        const std::int64_t code = codes[row];
        if (code < -1 || code >= num_categories)
            file.fail(codes_object, "code " + std::to_string(code) + " at row " + std::to_string(row) +
                                        " outside [-1, " + std::to_string(num_categories) + ") (" +
                                        std::to_string(num_categories) + " categories)");
        column.codes.push_back(static_cast<std::int32_t>(code));
    }
    return column;
}

ColumnData read_group_column(const h5::File& file, const std::string& object, const std::string& encoding,
                             std::int64_t num_rows) {
    if (encoding == "categorical") {
        const std::string categories = h5::join(object, "categories");
        const bool ordered = file.attribute_bool(object, "ordered").value_or(false);
        return make_categorical(file, h5::join(object, "codes"), read_labels(file, categories), ordered, num_rows);
    }
    if (encoding == "nullable-integer" || encoding == "nullable-boolean" || encoding == "nullable-string-array") {
        const std::string values_object = h5::join(object, "values");
        const std::string mask_object = h5::join(object, "mask");
        const h5::Info info = file.dataset_info(values_object);
        check_rows(file, values_object, check_vector(file, values_object, info, "values array"), num_rows);
        std::vector<std::uint8_t> mask = read_bools(file, mask_object, num_rows);
        if (encoding == "nullable-integer") {
            if (info.type_class != h5::TypeClass::Integer) file.fail(values_object, "nullable-integer values must be integers");
            IntColumn column{file.read_all<std::int64_t>(values_object), std::move(mask)};
            for (std::size_t row = 0; row < column.values.size(); ++row)
                if (column.missing[row]) column.values[row] = 0;
            return column;
        }
        if (encoding == "nullable-boolean") {
            BoolColumn column{read_bools(file, values_object, num_rows), std::move(mask)};
            for (std::size_t row = 0; row < column.values.size(); ++row)
                if (column.missing[row]) column.values[row] = 0;
            return column;
        }
        // StringColumn has no missing flags: a missing string reads as "".
        if (info.type_class != h5::TypeClass::String) file.fail(values_object, "nullable-string-array values must be strings");
        StringColumn column{file.read_strings(values_object)};
        for (std::size_t row = 0; row < column.values.size(); ++row)
            if (mask[row]) column.values[row].clear();
        return column;
    }
    file.fail(object, encoding.empty() ? "group column without an encoding-type attribute"
                                       : "unsupported column encoding-type '" + encoding + "'");
}

ColumnData read_dataset_column(const h5::File& file, const std::string& object, std::int64_t num_rows) {
    const h5::Info info = file.dataset_info(object);
    check_rows(file, object, check_vector(file, object, info, "column"), num_rows);
    // anndata 0.7: codes dataset + `categories` object reference to __categories/<name>.
    if (file.has_attribute(object, "categories")) {
        const h5::Info attribute = file.attribute_info(object, "categories");
        if (attribute.type_class == h5::TypeClass::Reference) {
            const std::string target = *h5::attribute_reference_target(file, object, "categories");
            const bool ordered = file.attribute_bool(target, "ordered").value_or(false);
            return make_categorical(file, object, read_labels(file, target), ordered, num_rows);
        }
    }
    switch (info.type_class) {
        case h5::TypeClass::String: return StringColumn{file.read_strings(object)};
        case h5::TypeClass::Integer: return IntColumn{file.read_all<std::int64_t>(object), {}};
        case h5::TypeClass::Float: return FloatColumn{file.read_all<double>(object)};
        case h5::TypeClass::Enum:
            if (h5::is_bool_enum_dataset(file, object)) return BoolColumn{read_bools(file, object, num_rows), {}};
            return IntColumn{file.read_all<std::int64_t>(object), {}};
        default: file.fail(object, "unsupported column dtype (expected numbers, booleans or strings)");
    }
}

// Pre-0.7: the whole dataframe is one compound dataset; the first field is the index.
Table read_compound_dataframe(const h5::File& file, const std::string& object) {
    const auto fields = h5::compound_fields(file, object);
    if (fields.empty()) file.fail(object, "compound dataframe without fields");
    const auto& index_field = fields.front();
    std::vector<std::string> index;
    if (index_field.type_class == h5::TypeClass::String) {
        index = h5::read_compound_strings(file, object, index_field.name);
    } else if (index_field.type_class == h5::TypeClass::Integer && index_field.width == 1) {
        for (auto value : h5::read_compound_numbers<std::int64_t>(file, object, index_field.name))
            index.push_back(std::to_string(value));
    } else {
        file.fail(object, "index field '" + index_field.name + "' is neither strings nor integers");
    }
    Table table(std::move(index), index_field.name);
    for (std::size_t position = 1; position < fields.size(); ++position) {
        const auto& field = fields[position];
        if (field.width != 1) file.fail(object, "field '" + field.name + "' is an array, not a column");
        if (field.type_class == h5::TypeClass::String) {
            table.set(field.name, StringColumn{h5::read_compound_strings(file, object, field.name)});
        } else if (field.is_bool) {
            BoolColumn column;
            for (auto value : h5::read_compound_numbers<std::int8_t>(file, object, field.name))
                column.values.push_back(value != 0 ? 1 : 0);
            table.set(field.name, std::move(column));
        } else if (field.type_class == h5::TypeClass::Integer || field.type_class == h5::TypeClass::Enum) {
            table.set(field.name, IntColumn{h5::read_compound_numbers<std::int64_t>(file, object, field.name), {}});
        } else if (field.type_class == h5::TypeClass::Float) {
            table.set(field.name, FloatColumn{h5::read_compound_numbers<double>(file, object, field.name)});
        } else {
            file.fail(object, "field '" + field.name + "' has an unsupported dtype");
        }
    }
    return table;
}

}  // namespace

std::string encoding_type(const h5::File& file, const std::string& object) {
    if (!file.has_attribute(object, "encoding-type")) return {};
    return file.attribute_string(object, "encoding-type").value_or("");
}

std::optional<std::vector<std::string>> string_list_attribute(const h5::File& file, const std::string& object,
                                                              const std::string& name) {
    if (!file.has_attribute(object, name)) return std::nullopt;
    const h5::Info info = file.attribute_info(object, name);
    if (info.type_class != h5::TypeClass::String) {
        if (info.num_elements() == 0) return std::vector<std::string>{};
        file.fail(object, "attribute '" + name + "' is not a list of strings");
    }
    return file.attribute_strings(object, name);
}

ColumnData read_column(const h5::File& file, const std::string& object, std::int64_t num_rows) {
    if (file.is_group(object)) return read_group_column(file, object, encoding_type(file, object), num_rows);
    if (!file.is_dataset(object)) file.fail(object, "missing");
    return read_dataset_column(file, object, num_rows);
}

Table read_dataframe(const h5::File& file, const std::string& object) {
    if (file.is_dataset(object)) return read_compound_dataframe(file, object);
    if (!file.is_group(object)) file.fail(object, "missing");
    const std::string encoding = encoding_type(file, object);
    if (!encoding.empty() && encoding != "dataframe")
        file.fail(object, "expected encoding-type 'dataframe', found '" + encoding + "'");
    const std::string index_name = file.attribute_string(object, "_index").value_or("_index");
    const std::string index_object = h5::join(object, index_name);
    if (!file.is_dataset(index_object))
        file.fail(index_object, "missing (the index named by the _index attribute of " + object + ")");
    const h5::Info index_info = file.dataset_info(index_object);
    check_vector(file, index_object, index_info, "index");
    Table table(read_labels(file, index_object), index_name);

    std::vector<std::string> order;
    if (auto listed = string_list_attribute(file, object, "column-order")) {
        order = std::move(*listed);
    } else {
        for (auto& member : file.members(object))
            if (member != index_name && member != "__categories") order.push_back(std::move(member));
    }
    for (const auto& name : order) {
        if (name == index_name) continue;
        const std::string column_object = h5::join(object, name);
        if (!file.exists(column_object)) file.fail(column_object, "missing (listed in the column-order of " + object + ")");
        table.set(name, read_column(file, column_object, table.num_rows()));
    }
    return table;
}

std::set<std::string> apply_uns_categories(const h5::File& file, const std::string& uns_group, Table& table) {
    std::set<std::string> consumed;
    if (!file.is_group(uns_group)) return consumed;
    static const std::string suffix = "_categories";
    for (const auto& key : file.members(uns_group)) {
        if (key.size() <= suffix.size() || !key.ends_with(suffix)) continue;
        const std::string name = key.substr(0, key.size() - suffix.size());
        const Column* column = table.find(name);
        if (!column) continue;
        const auto* codes = std::get_if<IntColumn>(&column->data);
        if (!codes || !codes->missing.empty()) continue;
        const std::string categories_object = h5::join(uns_group, key);
        if (!file.is_dataset(categories_object)) continue;
        std::vector<std::string> categories = read_labels(file, categories_object);
        const auto num_categories = static_cast<std::int64_t>(categories.size());
        bool fits = true;  // anndata's "hack to maybe find the axis": np.all(codes < len(cats))
        for (auto code : codes->values) fits = fits && code >= -1 && code < num_categories;
        if (!fits) continue;
        CategoricalColumn categorical;
        categorical.categories = std::move(categories);
        categorical.codes.reserve(codes->values.size());
        for (auto code : codes->values) categorical.codes.push_back(static_cast<std::int32_t>(code));
        table.set(name, std::move(categorical));
        consumed.insert(key);
    }
    return consumed;
}

std::map<std::string, DenseMatrix<float>> read_dense_arrays(const h5::File& file, const std::string& object,
                                                            std::int64_t num_rows) {
    std::map<std::string, DenseMatrix<float>> arrays;
    if (!file.exists(object)) return arrays;
    if (file.is_dataset(object)) {
        // Pre-0.7 obsm / varm: one compound dataset, one (array) field per entry.
        const h5::Info info = file.dataset_info(object);
        if (info.type_class != h5::TypeClass::Compound) return arrays;
        for (const auto& field : h5::compound_fields(file, object)) {
            if (field.is_bool || (field.type_class != h5::TypeClass::Integer && field.type_class != h5::TypeClass::Float))
                continue;
            check_rows(file, object, info.dims.at(0), num_rows);
            arrays.emplace(field.name, DenseMatrix<float>(num_rows, field.width,
                                                          h5::read_compound_numbers<float>(file, object, field.name)));
        }
        return arrays;
    }
    if (!file.is_group(object)) return arrays;
    for (const auto& name : file.members(object)) {
        const std::string entry = h5::join(object, name);
        if (!file.is_dataset(entry)) continue;  // dataframes, sparse matrices, awkward arrays
        const h5::Info info = file.dataset_info(entry);
        if (info.dims.size() != 2 || !is_numeric(info)) continue;
        if (info.dims[0] != num_rows)
            file.fail(entry, "has " + std::to_string(info.dims[0]) + " rows; expected " + std::to_string(num_rows));
        arrays.emplace(name, DenseMatrix<float>(info.dims[0], info.dims[1], file.read_all<float>(entry)));
    }
    return arrays;
}

namespace {

/// Deepest uns nesting read (anndata itself, being recursive Python, stops far short of
/// a few hundred levels); deeper is refused rather than walked.
constexpr std::size_t k_max_uns_depth = 64;

/// Groups read so far, by object address. A hard link back to an ancestor
/// (uns/loop -> /uns) is a cycle; a group reached by a second link elsewhere is refused
/// too (each level of doubled links would double the work). anndata never writes either.
struct UnsAncestors {
    std::vector<std::pair<std::string, std::string>> path;  ///< (address, object), uns first
    std::map<std::string, std::string> seen;                ///< every group read: address -> object
    std::size_t size() const { return path.size(); }
};

std::optional<UnsNode> read_uns_entry(const h5::File& file, const std::string& object, UnsAncestors& ancestors);

UnsNode read_uns_dict(const h5::File& file, const std::string& object, const std::set<std::string>& skip,
                      UnsAncestors& ancestors) {
    const std::string address = file.object_address(object);
    for (const auto& [seen, where] : ancestors.path)
        if (seen == address) file.fail(object, "is a link back to its ancestor " + where + " (a cycle in uns)");
    if (const auto found = ancestors.seen.find(address); found != ancestors.seen.end())
        file.fail(object, "is a second link to the group " + found->second + " (hard links in uns are not supported)");
    if (ancestors.size() >= k_max_uns_depth)
        file.fail(object, "uns nested deeper than " + std::to_string(k_max_uns_depth) + " levels (corrupt or cyclic file?)");
    ancestors.path.emplace_back(address, object);
    ancestors.seen.emplace(address, object);
    UnsNode node;
    for (const auto& name : file.members(object)) {
        if (skip.count(name)) continue;
        if (auto child = read_uns_entry(file, h5::join(object, name), ancestors))
            node.children.emplace(name, std::move(*child));
    }
    ancestors.path.pop_back();
    return node;
}

template <typename T>
std::optional<UnsNode> numeric_leaf(const h5::File& file, const std::string& object, const h5::Info& info) {
    switch (info.dims.size()) {
        case 0: return UnsNode::leaf(file.read<T>(object, 0, 1).front());
        case 1: return UnsNode::leaf(file.read_all<T>(object));
        case 2: {
            const auto values = file.read_all<double>(object);
            return UnsNode::leaf(DenseMatrix<double>(info.dims[0], info.dims[1], values));
        }
        default: return std::nullopt;
    }
}

// rec-array (numpy structured array). All fields text, or all numbers (scanpy's
// rank_genes_groups names / scores / pvals): an UnsRecords, written back as the same
// rec-array whatever its field names hold (a field name is not an HDF5 link name:
// "CD4+/CD25 T Reg" is fine). Mixed fields: a dict of its scalar fields.
UnsNode compound_leaf(const h5::File& file, const std::string& object) {
    const auto fields = h5::compound_fields(file, object);
    bool all_text = !fields.empty(), all_numbers = !fields.empty(), all_float32 = true;
    for (const auto& field : fields) {
        all_text = all_text && field.width == 1 && field.type_class == h5::TypeClass::String;
        const bool number = field.width == 1 && !field.is_bool &&
                            (field.type_class == h5::TypeClass::Float || field.type_class == h5::TypeClass::Integer);
        all_numbers = all_numbers && number;
        all_float32 = all_float32 && field.type_class == h5::TypeClass::Float && field.type_size == 4;
    }
    if (all_text || all_numbers) {
        UnsRecords records;
        records.single_precision = all_numbers && all_float32;
        for (const auto& field : fields) {
            records.fields.push_back(field.name);
            if (all_text)
                records.strings.push_back(h5::read_compound_strings(file, object, field.name));
            else
                records.numbers.push_back(h5::read_compound_numbers<double>(file, object, field.name));
        }
        return UnsNode::leaf(std::move(records));
    }
    UnsNode node;
    for (const auto& field : fields) {
        if (field.width != 1) continue;
        if (field.type_class == h5::TypeClass::String) {
            node.children.emplace(field.name, UnsNode::leaf(h5::read_compound_strings(file, object, field.name)));
        } else if (field.type_class == h5::TypeClass::Float) {
            node.children.emplace(field.name, UnsNode::leaf(h5::read_compound_numbers<double>(file, object, field.name)));
        } else if (field.type_class == h5::TypeClass::Integer || field.type_class == h5::TypeClass::Enum) {
            node.children.emplace(field.name,
                                  UnsNode::leaf(h5::read_compound_numbers<std::int64_t>(file, object, field.name)));
        }
    }
    return node;
}

std::optional<UnsNode> read_uns_entry(const h5::File& file, const std::string& object, UnsAncestors& ancestors) {
    const std::string encoding = encoding_type(file, object);
    if (file.is_group(object)) {
        if ((encoding.empty() || encoding == "dict") && !file.has_attribute(object, "h5sparse_format"))
            return read_uns_dict(file, object, {}, ancestors);
        return std::nullopt;  // sparse matrices, dataframes, categoricals, awkward arrays, ...
    }
    if (!file.is_dataset(object)) return std::nullopt;
    const h5::Info info = file.dataset_info(object);
    switch (info.type_class) {
        case h5::TypeClass::String: {
            if (info.dims.size() > 1) return std::nullopt;
            auto values = file.read_strings(object);
            if (info.dims.empty()) return UnsNode::leaf(values.empty() ? std::string() : values.front());
            // anndata 0.8 read_dataset: "old datasets have strings as one element 1d arrays".
            if (values.size() == 1 && encoding.empty() && h5::is_fixed_length_string_dataset(file, object))
                return UnsNode::leaf(values.front());
            return UnsNode::leaf(std::move(values));
        }
        case h5::TypeClass::Integer: return numeric_leaf<std::int64_t>(file, object, info);
        case h5::TypeClass::Float: return numeric_leaf<double>(file, object, info);
        case h5::TypeClass::Enum: {
            if (!h5::is_bool_enum_dataset(file, object)) return numeric_leaf<std::int64_t>(file, object, info);
            // UnsNode has no bool vector: a scalar (or one-element array) is a bool,
            // a longer array 0/1 integers.
            if (info.dims.empty() || (info.dims.size() == 1 && info.dims[0] == 1))
                return UnsNode::leaf(file.read<std::int8_t>(object, 0, 1).front() != 0);
            return numeric_leaf<std::int64_t>(file, object, info);
        }
        case h5::TypeClass::Compound:
            if (info.dims.size() != 1) return std::nullopt;
            return compound_leaf(file, object);
        default: return std::nullopt;
    }
}

}  // namespace

UnsNode read_uns(const h5::File& file, const std::string& object, const std::set<std::string>& skip) {
    if (!file.is_group(object)) return UnsNode{};
    UnsAncestors ancestors;
    return read_uns_dict(file, object, skip, ancestors);
}

}  // namespace fathom::io::h5ad
