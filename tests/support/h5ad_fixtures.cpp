#include "tests/support/h5ad_fixtures.hpp"

#include <hdf5.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

namespace fathom::test {

namespace {

// ---- minimal RAII + writers over the HDF5 C API ----

class Id {
public:
    Id(hid_t id, herr_t (*closer)(hid_t)) : m_id(id), m_closer(closer) {
        if (id < 0) throw std::runtime_error("h5ad fixture: HDF5 call failed");
    }
    Id(const Id&) = delete;
    Id& operator=(const Id&) = delete;
    Id(Id&& other) noexcept : m_id(other.m_id), m_closer(other.m_closer) { other.m_id = -1; }
    Id& operator=(Id&&) = delete;
    ~Id() {
        if (m_id >= 0) m_closer(m_id);
    }
    hid_t get() const { return m_id; }

private:
    hid_t m_id;
    herr_t (*m_closer)(hid_t);
};

void check(herr_t status, const std::string& what) {
    if (status < 0) throw std::runtime_error("h5ad fixture: " + what + " failed");
}

Id vlen_string_type() {
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    return type;
}

Id fixed_string_type(std::size_t width) {
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), std::max<std::size_t>(1, width));
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
    return type;
}

// h5py's numpy-bool encoding.
Id bool_type() {
    Id type(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
    std::int8_t no = 0, yes = 1;
    H5Tenum_insert(type.get(), "FALSE", &no);
    H5Tenum_insert(type.get(), "TRUE", &yes);
    return type;
}

Id make_space(const std::vector<std::int64_t>& dims) {
    if (dims.empty()) return Id(H5Screate(H5S_SCALAR), H5Sclose);
    std::vector<hsize_t> extent(dims.begin(), dims.end());
    return Id(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr), H5Sclose);
}

void write_raw(hid_t file, const std::string& object, hid_t type, const std::vector<std::int64_t>& dims,
               const void* data) {
    Id space = make_space(dims);
    Id dataset(H5Dcreate2(file, object.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    std::int64_t total = 1;
    for (auto d : dims) total *= d;
    if (total > 0) check(H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + object);
}

template <typename T>
hid_t native();
template <> hid_t native<float>() { return H5T_NATIVE_FLOAT; }
template <> hid_t native<double>() { return H5T_NATIVE_DOUBLE; }
template <> hid_t native<std::int8_t>() { return H5T_NATIVE_INT8; }
template <> hid_t native<std::uint8_t>() { return H5T_NATIVE_UINT8; }
template <> hid_t native<std::int32_t>() { return H5T_NATIVE_INT32; }
template <> hid_t native<std::int64_t>() { return H5T_NATIVE_INT64; }

template <typename T>
void write_vector(hid_t file, const std::string& object, const std::vector<T>& values,
                  std::vector<std::int64_t> dims = {}) {
    if (dims.empty()) dims = {static_cast<std::int64_t>(values.size())};
    write_raw(file, object, native<T>(), dims, values.data());
}

template <typename T>
void write_scalar(hid_t file, const std::string& object, T value) {
    write_raw(file, object, native<T>(), {}, &value);
}

// Values given as doubles written with the named dtype.
void write_typed(hid_t file, const std::string& object, const std::vector<double>& values, const std::string& dtype,
                 const std::vector<std::int64_t>& dims) {
    auto convert = [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> typed(values.size());
        std::transform(values.begin(), values.end(), typed.begin(), [](double v) { return static_cast<T>(v); });
        write_vector(file, object, typed, dims);
    };
    if (dtype == "float32") convert(float{});
    else if (dtype == "float64") convert(double{});
    else if (dtype == "int32") convert(std::int32_t{});
    else if (dtype == "int64") convert(std::int64_t{});
    else if (dtype == "int8") convert(std::int8_t{});
    else if (dtype == "uint8") convert(std::uint8_t{});
    else throw std::invalid_argument("h5ad fixture: unknown dtype " + dtype);
}

void write_strings(hid_t file, const std::string& object, const std::vector<std::string>& values,
                   bool scalar = false) {
    Id type = vlen_string_type();
    std::vector<const char*> pointers;
    for (const auto& value : values) pointers.push_back(value.c_str());
    write_raw(file, object, type.get(), scalar ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())},
              pointers.data());
}

void write_fixed_strings(hid_t file, const std::string& object, const std::vector<std::string>& values) {
    std::size_t width = 1;
    for (const auto& value : values) width = std::max(width, value.size());
    Id type = fixed_string_type(width);
    std::vector<char> buffer(width * values.size(), '\0');
    for (std::size_t index = 0; index < values.size(); ++index)
        std::memcpy(buffer.data() + index * width, values[index].data(), values[index].size());
    write_raw(file, object, type.get(), {static_cast<std::int64_t>(values.size())}, buffer.data());
}

void write_bools(hid_t file, const std::string& object, const std::vector<std::uint8_t>& values, bool scalar = false) {
    Id type = bool_type();
    std::vector<std::int8_t> raw(values.begin(), values.end());
    write_raw(file, object, type.get(),
              scalar ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{static_cast<std::int64_t>(raw.size())},
              raw.data());
}

void create_group(hid_t file, const std::string& object) {
    Id group(H5Gcreate2(file, object.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

void remove_attribute_if_present(hid_t file, const std::string& object, const std::string& name) {
    if (H5Aexists_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT) > 0)
        check(H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT), "delete attribute " + name);
}

void attribute_raw(hid_t file, const std::string& object, const std::string& name, hid_t type,
                   const std::vector<std::int64_t>& dims, const void* data) {
    remove_attribute_if_present(file, object, name);
    Id space = make_space(dims);
    Id attribute(H5Acreate_by_name(file, object.c_str(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                   H5P_DEFAULT),
                 H5Aclose);
    std::int64_t total = 1;
    for (auto d : dims) total *= d;
    if (total > 0) check(H5Awrite(attribute.get(), type, data), "write attribute " + name);
}

void attribute_string(hid_t file, const std::string& object, const std::string& name, const std::string& value) {
    Id type = vlen_string_type();
    const char* pointer = value.c_str();
    attribute_raw(file, object, name, type.get(), {}, &pointer);
}

// anndata >= 0.8 writes an empty column-order as an empty float64 array.
void attribute_strings(hid_t file, const std::string& object, const std::string& name,
                       const std::vector<std::string>& values) {
    if (values.empty()) {
        attribute_raw(file, object, name, H5T_NATIVE_DOUBLE, {0}, nullptr);
        return;
    }
    Id type = vlen_string_type();
    std::vector<const char*> pointers;
    for (const auto& value : values) pointers.push_back(value.c_str());
    attribute_raw(file, object, name, type.get(), {static_cast<std::int64_t>(values.size())}, pointers.data());
}

void attribute_int64s(hid_t file, const std::string& object, const std::string& name,
                      const std::vector<std::int64_t>& values) {
    attribute_raw(file, object, name, H5T_NATIVE_INT64, {static_cast<std::int64_t>(values.size())}, values.data());
}

void attribute_bool(hid_t file, const std::string& object, const std::string& name, bool value) {
    Id type = bool_type();
    std::int8_t raw = value ? 1 : 0;
    attribute_raw(file, object, name, type.get(), {}, &raw);
}

void encoding(hid_t file, const std::string& object, const std::string& type, const std::string& version) {
    attribute_string(file, object, "encoding-type", type);
    attribute_string(file, object, "encoding-version", version);
}

std::string join(const std::string& group, const std::string& name) {
    return group == "/" ? "/" + name : group + "/" + name;
}

// ---- compound (pre-0.7) datasets ----

class CompoundWriter {
public:
    explicit CompoundWriter(std::int64_t records) : m_records(records) {}
    /// A member of `size` bytes per record; `bytes` holds records x size bytes.
    void add(const std::string& name, hid_t type, std::vector<std::uint8_t> bytes) {
        const std::size_t size = H5Tget_size(type);
        if (bytes.size() != size * static_cast<std::size_t>(m_records))
            throw std::logic_error("CompoundWriter: wrong byte count for " + name);
        m_fields.push_back({name, H5Tcopy(type), size, std::move(bytes)});
    }
    template <typename T>
    void add_numbers(const std::string& name, const std::vector<T>& values, std::int64_t width = 1) {
        std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
        std::memcpy(bytes.data(), values.data(), bytes.size());
        if (width == 1) {
            add(name, native<T>(), std::move(bytes));
        } else {
            hsize_t dims[1] = {static_cast<hsize_t>(width)};
            Id array(H5Tarray_create2(native<T>(), 1, dims), H5Tclose);
            add(name, array.get(), std::move(bytes));
        }
    }
    void add_bools(const std::string& name, const std::vector<std::uint8_t>& values) {
        Id type = bool_type();
        add(name, type.get(), std::vector<std::uint8_t>(values.begin(), values.end()));
    }
    void add_fixed_strings(const std::string& name, const std::vector<std::string>& values) {
        std::size_t width = 1;
        for (const auto& value : values) width = std::max(width, value.size());
        Id type = fixed_string_type(width);
        std::vector<std::uint8_t> bytes(width * values.size(), 0);
        for (std::size_t index = 0; index < values.size(); ++index)
            std::memcpy(bytes.data() + index * width, values[index].data(), values[index].size());
        add(name, type.get(), std::move(bytes));
    }
    void write(hid_t file, const std::string& object) {
        std::size_t record_size = 0;
        for (const auto& field : m_fields) record_size += field.size;
        Id type(H5Tcreate(H5T_COMPOUND, record_size), H5Tclose);
        std::size_t offset = 0;
        for (const auto& field : m_fields) {
            check(H5Tinsert(type.get(), field.name.c_str(), offset, field.type), "insert " + field.name);
            offset += field.size;
        }
        std::vector<std::uint8_t> buffer(record_size * static_cast<std::size_t>(m_records));
        for (std::int64_t record = 0; record < m_records; ++record) {
            std::size_t field_offset = 0;
            for (const auto& field : m_fields) {
                std::memcpy(buffer.data() + static_cast<std::size_t>(record) * record_size + field_offset,
                            field.bytes.data() + static_cast<std::size_t>(record) * field.size, field.size);
                field_offset += field.size;
            }
        }
        write_raw(file, object, type.get(), {m_records}, buffer.data());
        for (auto& field : m_fields) H5Tclose(field.type);
        m_fields.clear();
    }
    ~CompoundWriter() {
        for (auto& field : m_fields) H5Tclose(field.type);
    }

private:
    struct Field {
        std::string name;
        hid_t type;
        std::size_t size;
        std::vector<std::uint8_t> bytes;
    };
    std::int64_t m_records;
    std::vector<Field> m_fields;
};

// ---- elements ----

void write_matrix(hid_t file, const std::string& object, const H5adMatrix& matrix, H5adGeneration generation) {
    const auto& values = matrix.values;
    const std::int64_t rows = values.rows(), cols = values.cols();
    if (matrix.layout == H5adLayout::Dense) {
        std::vector<double> flat(values.values().begin(), values.values().end());
        write_typed(file, object, flat, matrix.dtype, {rows, cols});
        if (generation == H5adGeneration::Modern) encoding(file, object, "array", "0.2.0");
        return;
    }
    const bool csr = matrix.layout == H5adLayout::Csr;
    const std::int64_t major = csr ? rows : cols, minor = csr ? cols : rows;
    std::vector<std::int64_t> indptr{0}, indices;
    std::vector<double> data;
    for (std::int64_t outer = 0; outer < major; ++outer) {
        std::vector<std::int64_t> order(static_cast<std::size_t>(minor));
        for (std::int64_t inner = 0; inner < minor; ++inner) order[static_cast<std::size_t>(inner)] = inner;
        if (csr && matrix.reverse_rows) std::reverse(order.begin(), order.end());
        for (auto inner : order) {
            const float value = csr ? values(outer, inner) : values(inner, outer);
            if (value == 0.0f) continue;
            indices.push_back(inner);
            data.push_back(value);
        }
        indptr.push_back(static_cast<std::int64_t>(indices.size()));
    }
    create_group(file, object);
    if (generation == H5adGeneration::PreV07) {
        attribute_string(file, object, "h5sparse_format", csr ? "csr" : "csc");
        attribute_int64s(file, object, "h5sparse_shape", {rows, cols});
    } else {
        encoding(file, object, csr ? "csr_matrix" : "csc_matrix", "0.1.0");
        attribute_int64s(file, object, "shape", {rows, cols});
    }
    write_typed(file, join(object, "data"), data, matrix.dtype, {static_cast<std::int64_t>(data.size())});
    const std::string index_dtype = matrix.int64_index ? "int64" : "int32";
    std::vector<double> indices_as_double(indices.begin(), indices.end()), indptr_as_double(indptr.begin(), indptr.end());
    write_typed(file, join(object, "indices"), indices_as_double, index_dtype, {static_cast<std::int64_t>(indices.size())});
    write_typed(file, join(object, "indptr"), indptr_as_double, index_dtype, {static_cast<std::int64_t>(indptr.size())});
}

void write_modern_column(hid_t file, const std::string& object, const Column& column, const H5adFixture& fixture) {
    std::visit(
        [&](const auto& data) {
            using T = std::decay_t<decltype(data)>;
            if constexpr (std::is_same_v<T, CategoricalColumn>) {
                create_group(file, object);
                encoding(file, object, "categorical", "0.2.0");
                attribute_bool(file, object, "ordered", data.ordered);
                std::vector<std::int8_t> codes(data.codes.begin(), data.codes.end());
                write_vector(file, join(object, "codes"), codes);
                encoding(file, join(object, "codes"), "array", "0.2.0");
                write_strings(file, join(object, "categories"), data.categories);
                encoding(file, join(object, "categories"), "string-array", "0.2.0");
            } else if constexpr (std::is_same_v<T, StringColumn>) {
                write_strings(file, object, data.values);
                encoding(file, object, "string-array", "0.2.0");
            } else if constexpr (std::is_same_v<T, FloatColumn>) {
                write_vector(file, object, data.values);
                encoding(file, object, "array", "0.2.0");
            } else if constexpr (std::is_same_v<T, IntColumn>) {
                if (data.missing.empty()) {
                    auto dtype = fixture.int_dtypes.count(column.name) ? fixture.int_dtypes.at(column.name) : "int64";
                    write_typed(file, object, std::vector<double>(data.values.begin(), data.values.end()), dtype, {});
                    encoding(file, object, "array", "0.2.0");
                } else {
                    create_group(file, object);
                    encoding(file, object, "nullable-integer", "0.1.0");
                    write_vector(file, join(object, "values"), data.values);
                    write_bools(file, join(object, "mask"), data.missing);
                }
            } else if constexpr (std::is_same_v<T, BoolColumn>) {
                if (data.missing.empty()) {
                    write_bools(file, object, data.values);
                    encoding(file, object, "array", "0.2.0");
                } else {
                    create_group(file, object);
                    encoding(file, object, "nullable-boolean", "0.1.0");
                    write_bools(file, join(object, "values"), data.values);
                    write_bools(file, join(object, "mask"), data.missing);
                }
            }
        },
        column.data);
}

void write_legacy07_column(hid_t file, const std::string& group, const Column& column, const H5adFixture& fixture) {
    const std::string object = join(group, column.name);
    std::visit(
        [&](const auto& data) {
            using T = std::decay_t<decltype(data)>;
            if constexpr (std::is_same_v<T, CategoricalColumn>) {
                const std::string categories_group = join(group, "__categories");
                if (H5Lexists(file, categories_group.c_str(), H5P_DEFAULT) <= 0) create_group(file, categories_group);
                const std::string categories = join(categories_group, column.name);
                write_strings(file, categories, data.categories);
                attribute_bool(file, categories, "ordered", data.ordered);
                std::vector<std::int8_t> codes(data.codes.begin(), data.codes.end());
                write_vector(file, object, codes);
                hobj_ref_t reference;
                check(H5Rcreate(&reference, file, categories.c_str(), H5R_OBJECT, -1), "reference");
                attribute_raw(file, object, "categories", H5T_STD_REF_OBJ, {}, &reference);
            } else if constexpr (std::is_same_v<T, StringColumn>) {
                write_strings(file, object, data.values);
            } else if constexpr (std::is_same_v<T, FloatColumn>) {
                write_vector(file, object, data.values);
            } else if constexpr (std::is_same_v<T, IntColumn>) {
                auto dtype = fixture.int_dtypes.count(column.name) ? fixture.int_dtypes.at(column.name) : "int64";
                write_typed(file, object, std::vector<double>(data.values.begin(), data.values.end()), dtype, {});
            } else if constexpr (std::is_same_v<T, BoolColumn>) {
                write_bools(file, object, data.values);
            }
        },
        column.data);
}

void write_dataframe(hid_t file, const std::string& object, const Table& table, const H5adFixture& fixture) {
    std::vector<std::string> order;
    for (const auto& column : table.columns()) order.push_back(column.name);
    if (fixture.generation == H5adGeneration::PreV07) {
        // One compound dataset; the first field is the index; categories go to uns.
        CompoundWriter compound(table.num_rows());
        compound.add_fixed_strings(table.index_name().empty() ? "index" : table.index_name(), table.index());
        for (const auto& column : table.columns()) {
            std::visit(
                [&](const auto& data) {
                    using T = std::decay_t<decltype(data)>;
                    if constexpr (std::is_same_v<T, CategoricalColumn>) {
                        compound.add_numbers(column.name, std::vector<std::int8_t>(data.codes.begin(), data.codes.end()));
                        const std::string uns_key = "/uns/" + column.name + "_categories";
                        if (H5Lexists(file, "/uns", H5P_DEFAULT) <= 0) create_group(file, "/uns");
                        write_fixed_strings(file, uns_key, data.categories);
                    } else if constexpr (std::is_same_v<T, StringColumn>) {
                        compound.add_fixed_strings(column.name, data.values);
                    } else if constexpr (std::is_same_v<T, FloatColumn>) {
                        compound.add_numbers(column.name, data.values);
                    } else if constexpr (std::is_same_v<T, IntColumn>) {
                        compound.add_numbers(column.name, data.values);
                    } else if constexpr (std::is_same_v<T, BoolColumn>) {
                        compound.add_bools(column.name, data.values);
                    }
                },
                column.data);
        }
        compound.write(file, object);
        return;
    }
    create_group(file, object);
    const bool modern = fixture.generation == H5adGeneration::Modern;
    encoding(file, object, "dataframe", modern ? "0.2.0" : "0.1.0");
    attribute_string(file, object, "_index", "_index");
    attribute_strings(file, object, "column-order", order);
    write_strings(file, join(object, "_index"), table.index());
    if (modern) encoding(file, join(object, "_index"), "string-array", "0.2.0");
    for (const auto& column : table.columns()) {
        if (modern) write_modern_column(file, join(object, column.name), column, fixture);
        else write_legacy07_column(file, object, column, fixture);
    }
}

void write_uns_node(hid_t file, const std::string& object, const UnsNode& node, H5adGeneration generation) {
    const bool modern = generation == H5adGeneration::Modern;
    const bool old = generation == H5adGeneration::PreV07;
    std::visit(
        [&](const auto& value) {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                if (object != "/uns" || H5Lexists(file, "/uns", H5P_DEFAULT) <= 0) create_group(file, object);
                if (modern) encoding(file, object, "dict", "0.1.0");
                for (const auto& [key, child] : node.children) write_uns_node(file, join(object, key), child, generation);
            } else if constexpr (std::is_same_v<T, std::string>) {
                if (old) {
                    write_fixed_strings(file, object, {value});  // old anndata: one-element arrays
                } else {
                    write_strings(file, object, {value}, true);
                    if (modern) encoding(file, object, "string", "0.2.0");
                }
            } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::int64_t>) {
                if (old) write_vector(file, object, std::vector<T>{value});
                else write_scalar(file, object, value);
                if (modern) encoding(file, object, "numeric-scalar", "0.2.0");
            } else if constexpr (std::is_same_v<T, bool>) {
                write_bools(file, object, {static_cast<std::uint8_t>(value)}, !old);
                if (modern) encoding(file, object, "numeric-scalar", "0.2.0");
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                if (old) write_fixed_strings(file, object, value);
                else write_strings(file, object, value);
                if (modern) encoding(file, object, "string-array", "0.2.0");
            } else if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<std::int64_t>>) {
                write_vector(file, object, value);
                if (modern) encoding(file, object, "array", "0.2.0");
            } else if constexpr (std::is_same_v<T, DenseMatrix<double>>) {
                write_vector(file, object, value.values(), {value.rows(), value.cols()});
                if (modern) encoding(file, object, "array", "0.2.0");
            }
        },
        node.value);
}

void write_dense_arrays(hid_t file, const std::string& object, const std::map<std::string, DenseMatrix<float>>& arrays,
                        std::int64_t rows, const H5adFixture& fixture, bool float64) {
    if (fixture.generation == H5adGeneration::PreV07) {
        if (arrays.empty()) return;
        CompoundWriter compound(rows);
        for (const auto& [key, matrix] : arrays) {
            if (float64) {
                compound.add_numbers(key, std::vector<double>(matrix.values().begin(), matrix.values().end()), matrix.cols());
            } else {
                compound.add_numbers(key, matrix.values(), matrix.cols());
            }
        }
        compound.write(file, object);
        return;
    }
    create_group(file, object);
    if (fixture.generation == H5adGeneration::Modern) encoding(file, object, "dict", "0.1.0");
    for (const auto& [key, matrix] : arrays) {
        const std::string entry = join(object, key);
        if (float64) write_vector(file, entry, std::vector<double>(matrix.values().begin(), matrix.values().end()),
                                  {matrix.rows(), matrix.cols()});
        else write_vector(file, entry, matrix.values(), {matrix.rows(), matrix.cols()});
        if (fixture.generation == H5adGeneration::Modern) encoding(file, entry, "array", "0.2.0");
    }
}

std::uint64_t next_random(std::uint64_t& state) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
}

}  // namespace

DenseMatrix<float> make_counts(std::int64_t num_cells, std::int64_t num_genes, std::uint64_t seed) {
    DenseMatrix<float> counts(num_cells, num_genes, 0.0f);
    std::uint64_t state = seed * 2654435761ULL + 17;
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        if (cell == 1) continue;  // an empty cell
        for (std::int64_t gene = 0; gene + 1 < num_genes; ++gene) {
            if (next_random(state) % 10 < 3) counts(cell, gene) = static_cast<float>(1 + next_random(state) % 9);
        }
    }
    return counts;
}

CsrShard dense_to_csr(const DenseMatrix<float>& values, std::int64_t begin, std::int64_t end) {
    CsrShard shard;
    shard.row_begin = begin;
    shard.num_genes = values.cols();
    for (std::int64_t row = begin; row < end; ++row) {
        for (std::int64_t col = 0; col < values.cols(); ++col) {
            if (values(row, col) == 0.0f) continue;
            shard.gene_indices.push_back(static_cast<std::int32_t>(col));
            shard.values.push_back(values(row, col));
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    return shard;
}

H5adFixture make_h5ad_fixture(std::int64_t num_cells, std::int64_t num_genes, H5adGeneration generation,
                              std::uint64_t seed) {
    if (num_cells < 4 || num_genes < 3) throw std::invalid_argument("make_h5ad_fixture: need >= 4 cells, >= 3 genes");
    H5adFixture fixture;
    fixture.generation = generation;
    fixture.x.values = make_counts(num_cells, num_genes, seed);
    const bool old = generation == H5adGeneration::PreV07;
    const bool modern = generation == H5adGeneration::Modern;
    const std::string index_name = old ? "index" : "_index";

    std::vector<std::string> cells, genes;
    for (std::int64_t cell = 0; cell < num_cells; ++cell) cells.push_back("cell" + std::to_string(cell));
    for (std::int64_t gene = 0; gene < num_genes; ++gene) genes.push_back("gene" + std::to_string(gene));
    genes.back() = genes.front();  // duplicate gene names are kept as stored
    if (!old) cells[0] = "cell0-\xc3\xa9";  // UTF-8 survives (vlen strings)
    fixture.obs = Table(cells, index_name);
    fixture.var = Table(genes, index_name);

    const auto rows = static_cast<std::size_t>(num_cells);
    CategoricalColumn cell_type{{}, {"B", "T", "NK"}, false};
    StringColumn label;
    IntColumn n_counts, n_small;
    FloatColumn score;
    BoolColumn doublet;
    for (std::size_t row = 0; row < rows; ++row) {
        cell_type.codes.push_back(row == 2 ? -1 : static_cast<std::int32_t>(row % 3));
        label.values.push_back("label" + std::to_string(row * 3));
        double total = 0;
        for (std::int64_t gene = 0; gene < num_genes; ++gene) total += fixture.x.values(static_cast<std::int64_t>(row), gene);
        n_counts.values.push_back(static_cast<std::int64_t>(total));
        n_small.values.push_back(static_cast<std::int64_t>((row * 37) % 256));
        score.values.push_back(static_cast<double>(row) * 0.25 - 1.0);
        doublet.values.push_back(row % 4 == 0 ? 1 : 0);
    }
    fixture.obs.set("cell_type", cell_type);
    if (!old) {
        CategoricalColumn stage{{}, {"early", "mid", "late"}, true};
        for (std::size_t row = 0; row < rows; ++row) stage.codes.push_back(static_cast<std::int32_t>((row / 2) % 3));
        fixture.obs.set("stage", stage);
    }
    fixture.obs.set("label", label);
    fixture.obs.set("n_counts", n_counts);
    if (!old) {
        fixture.obs.set("n_small", n_small);
        fixture.int_dtypes["n_small"] = "uint8";
    }
    fixture.obs.set("score", score);
    fixture.obs.set("is_doublet", doublet);
    if (modern) {
        IntColumn nullable_int;
        BoolColumn nullable_bool;
        for (std::size_t row = 0; row < rows; ++row) {
            const bool missing = row % 3 == 1;
            nullable_int.values.push_back(missing ? 0 : static_cast<std::int64_t>(row) - 2);
            nullable_int.missing.push_back(missing ? 1 : 0);
            nullable_bool.values.push_back(missing || row % 2 ? 0 : 1);
            nullable_bool.missing.push_back(missing ? 1 : 0);
        }
        fixture.obs.set("nullable_int", nullable_int);
        fixture.obs.set("nullable_bool", nullable_bool);
    }

    StringColumn gene_ids;
    BoolColumn highly_variable;
    FloatColumn means;
    for (std::int64_t gene = 0; gene < num_genes; ++gene) {
        gene_ids.values.push_back("ENSG" + std::to_string(1000 + gene));
        highly_variable.values.push_back(gene % 2 == 0 ? 1 : 0);
        means.values.push_back(0.125 * static_cast<double>(gene));
    }
    fixture.var.set("gene_ids", gene_ids);
    fixture.var.set("highly_variable", highly_variable);
    fixture.var.set("means", means);
    if (!old) {
        CategoricalColumn chromosome{{}, {"chr1", "chr2"}, false};
        for (std::int64_t gene = 0; gene < num_genes; ++gene) chromosome.codes.push_back(gene < num_genes / 2 ? 0 : 1);
        fixture.var.set("chromosome", chromosome);
    }

    DenseMatrix<float> pca(num_cells, 3), umap(num_cells, 2), pcs(num_genes, 3);
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        for (std::int64_t k = 0; k < 3; ++k) pca(cell, k) = static_cast<float>(cell) * 0.5f - static_cast<float>(k);
        for (std::int64_t k = 0; k < 2; ++k) umap(cell, k) = static_cast<float>(cell + k) * 0.25f;
    }
    for (std::int64_t gene = 0; gene < num_genes; ++gene)
        for (std::int64_t k = 0; k < 3; ++k) pcs(gene, k) = static_cast<float>(gene * 3 + k) / 8.0f;
    fixture.obsm = {{"X_pca", pca}, {"X_umap", umap}};
    fixture.varm = {{"PCs", pcs}};
    fixture.obsm_extras = !old;

    fixture.write_raw = true;
    fixture.raw_x.values = make_counts(num_cells, num_genes + 2, seed + 7);
    std::vector<std::string> raw_genes;
    for (std::int64_t gene = 0; gene < num_genes + 2; ++gene) raw_genes.push_back("raw_gene" + std::to_string(gene));
    fixture.raw_var = Table(raw_genes, index_name);
    if (!old) {
        StringColumn raw_ids;
        for (std::int64_t gene = 0; gene < num_genes + 2; ++gene) raw_ids.values.push_back("RAW" + std::to_string(gene));
        fixture.raw_var.set("gene_ids", raw_ids);
        H5adMatrix counts_layer{fixture.x.values, H5adLayout::Csc, "int32"};
        DenseMatrix<float> dense = fixture.x.values;
        for (auto& value : dense.values()) value *= 0.5f;
        H5adMatrix dense_layer{dense, H5adLayout::Dense, "float64"};
        fixture.layers = {{"counts", counts_layer}, {"half", dense_layer}};
    }

    fixture.uns_graph = {make_counts(num_cells, num_cells, 5), H5adLayout::Csr, "float64"};
    if (!old) fixture.obsp = {{"distances", {make_counts(num_cells, num_cells, 77), H5adLayout::Csr, "float32"}}};

    UnsNode& uns = fixture.uns;
    if (old) {
        uns["method"] = UnsNode::leaf(std::string("logreg"));
        uns["louvain_colors"] = UnsNode::leaf(std::vector<std::string>{"#1f77b4", "#ff7f0e"});
        uns["random_state"] = UnsNode::leaf(std::int64_t{0});
    } else {
        uns["title"] = UnsNode::leaf(std::string("fixture \xc3\xa9"));
        uns["version"] = UnsNode::leaf(std::int64_t{3});
        uns["alpha"] = UnsNode::leaf(0.5);
        uns["flag"] = UnsNode::leaf(true);
        uns["colors"] = UnsNode::leaf(std::vector<std::string>{"#ff0000", "#00ff00"});
        uns["sizes"] = UnsNode::leaf(std::vector<std::int64_t>{1, 2, 3});
        uns["weights"] = UnsNode::leaf(std::vector<double>{0.5, 1.5});
        uns["matrix"] = UnsNode::leaf(DenseMatrix<double>(2, 3, std::vector<double>{1, 2, 3, 4, 5, 6}));
        uns["params"]["n_neighbors"] = UnsNode::leaf(std::int64_t{15});
        uns["params"]["method"] = UnsNode::leaf(std::string("umap"));
        uns["params"]["nested"]["deep"] = UnsNode::leaf(1.25);
    }
    return fixture;
}

void write_h5ad_fixture(const std::filesystem::path& path, const H5adFixture& fixture) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    const hid_t id = file.get();
    const auto generation = fixture.generation;
    const bool old = generation == H5adGeneration::PreV07;
    const bool modern = generation == H5adGeneration::Modern;
    if (modern) encoding(id, "/", "anndata", "0.1.0");
    if (old) create_group(id, "/uns");  // categories of compound columns land here
    if (fixture.write_x) write_matrix(id, "/X", fixture.x, generation);
    write_dataframe(id, "/obs", fixture.obs, fixture);
    write_dataframe(id, "/var", fixture.var, fixture);
    if (fixture.write_raw) {
        H5adMatrix raw = fixture.raw_x;
        raw.layout = H5adLayout::Csr;
        if (old) {
            write_matrix(id, "/raw.X", raw, generation);
            write_dataframe(id, "/raw.var", fixture.raw_var, fixture);
        } else {
            create_group(id, "/raw");
            if (modern) encoding(id, "/raw", "raw", "0.1.0");
            write_matrix(id, "/raw/X", raw, generation);
            write_dataframe(id, "/raw/var", fixture.raw_var, fixture);
        }
    }
    if (!old) {
        create_group(id, "/layers");
        if (modern) encoding(id, "/layers", "dict", "0.1.0");
        for (const auto& [name, layer] : fixture.layers) write_matrix(id, "/layers/" + name, layer, generation);
    }
    write_dense_arrays(id, "/obsm", fixture.obsm, fixture.obs.num_rows(), fixture, false);
    write_dense_arrays(id, "/varm", fixture.varm, fixture.var.num_rows(), fixture, true);
    if (fixture.obsm_extras && !old) {
        H5adMatrix sparse{make_counts(fixture.obs.num_rows(), 4, 99), H5adLayout::Csr, "float64"};
        write_matrix(id, "/obsm/sparse_entry", sparse, generation);
        Table frame(fixture.obs.index(), "_index");
        FloatColumn column;
        for (std::int64_t row = 0; row < frame.num_rows(); ++row) column.values.push_back(static_cast<double>(row));
        frame.set("x", column);
        write_dataframe(id, "/obsm/df_entry", frame, fixture);
    }
    if (!fixture.obsp.empty()) {
        create_group(id, "/obsp");
        if (modern) encoding(id, "/obsp", "dict", "0.1.0");
        for (const auto& [name, graph] : fixture.obsp) write_matrix(id, "/obsp/" + name, graph, generation);
    }
    write_uns_node(id, "/uns", fixture.uns, generation);
    if (fixture.uns_extras) {
        if (H5Lexists(id, "/uns/neighbors", H5P_DEFAULT) <= 0) create_group(id, "/uns/neighbors");
        write_matrix(id, "/uns/neighbors/connectivities", fixture.uns_graph, generation);
        if (modern) {
            Column categorical{"ignored", CategoricalColumn{{0, 1}, {"a", "b"}, false}};
            write_modern_column(id, "/uns/a_categorical", categorical, fixture);
        }
    }
}

// ---- mutations ----

namespace {

Id open_rw(const std::filesystem::path& path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return Id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
}

}  // namespace

void h5_remove(const std::filesystem::path& path, const std::string& object) {
    Id file = open_rw(path);
    check(H5Ldelete(file.get(), object.c_str(), H5P_DEFAULT), "delete " + object);
}

template <typename T>
void h5_replace_dataset(const std::filesystem::path& path, const std::string& object,
                        const std::vector<std::int64_t>& dims, const std::vector<T>& values) {
    Id file = open_rw(path);
    if (H5Lexists(file.get(), object.c_str(), H5P_DEFAULT) > 0)
        check(H5Ldelete(file.get(), object.c_str(), H5P_DEFAULT), "delete " + object);
    write_raw(file.get(), object, native<T>(), dims, values.data());
}

template void h5_replace_dataset<float>(const std::filesystem::path&, const std::string&,
                                        const std::vector<std::int64_t>&, const std::vector<float>&);
template void h5_replace_dataset<double>(const std::filesystem::path&, const std::string&,
                                         const std::vector<std::int64_t>&, const std::vector<double>&);
template void h5_replace_dataset<std::int32_t>(const std::filesystem::path&, const std::string&,
                                               const std::vector<std::int64_t>&, const std::vector<std::int32_t>&);
template void h5_replace_dataset<std::int64_t>(const std::filesystem::path&, const std::string&,
                                               const std::vector<std::int64_t>&, const std::vector<std::int64_t>&);

void h5_replace_int64_attribute(const std::filesystem::path& path, const std::string& object, const std::string& name,
                                const std::vector<std::int64_t>& values) {
    Id file = open_rw(path);
    attribute_int64s(file.get(), object, name, values);
}

void h5_replace_string_attribute(const std::filesystem::path& path, const std::string& object,
                                 const std::string& name, const std::string& value) {
    Id file = open_rw(path);
    attribute_string(file.get(), object, name, value);
}

void truncate_file(const std::filesystem::path& path, std::uintmax_t size) { std::filesystem::resize_file(path, size); }

// ---- comparisons ----

void expect_tables_equal(const Table& actual, const Table& expected) {
    EXPECT_EQ(actual.index(), expected.index());
    EXPECT_EQ(actual.index_name(), expected.index_name());
    ASSERT_EQ(actual.columns().size(), expected.columns().size());
    for (std::size_t position = 0; position < expected.columns().size(); ++position) {
        const Column& got = actual.columns()[position];
        const Column& want = expected.columns()[position];
        SCOPED_TRACE("column " + want.name);
        EXPECT_EQ(got.name, want.name);
        ASSERT_EQ(got.data.index(), want.data.index()) << "type " << got.type_name() << " vs " << want.type_name();
        std::visit(
            [&](const auto& expected_data) {
                using T = std::decay_t<decltype(expected_data)>;
                const auto& actual_data = std::get<T>(got.data);
                if constexpr (std::is_same_v<T, CategoricalColumn>) {
                    EXPECT_EQ(actual_data.codes, expected_data.codes);
                    EXPECT_EQ(actual_data.categories, expected_data.categories);
                    EXPECT_EQ(actual_data.ordered, expected_data.ordered);
                } else if constexpr (std::is_same_v<T, IntColumn> || std::is_same_v<T, BoolColumn>) {
                    EXPECT_EQ(actual_data.values, expected_data.values);
                    EXPECT_EQ(actual_data.missing, expected_data.missing);
                } else if constexpr (std::is_same_v<T, FloatColumn>) {
                    // Equal values, NaN where the expected value is NaN.
                    ASSERT_EQ(actual_data.values.size(), expected_data.values.size()) << want.name;
                    for (std::size_t row = 0; row < expected_data.values.size(); ++row) {
                        const double a = actual_data.values[row], b = expected_data.values[row];
                        if (!(a == b || (std::isnan(a) && std::isnan(b)))) {
                            ADD_FAILURE() << want.name << "[" << row << "]: " << a << " != " << b;
                            break;
                        }
                    }
                } else {
                    EXPECT_EQ(actual_data.values, expected_data.values);
                }
            },
            want.data);
    }
}

}  // namespace fathom::test
