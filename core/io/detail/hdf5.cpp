#include "core/io/detail/hdf5.hpp"

#include "core/io/detail/chunk_reader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <functional>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <type_traits>

namespace fathom::io::h5 {

void silence_errors() {
    static std::once_flag once;
    std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

template <> hid_t native_type<float>() { return H5T_NATIVE_FLOAT; }
template <> hid_t native_type<double>() { return H5T_NATIVE_DOUBLE; }
template <> hid_t native_type<std::int8_t>() { return H5T_NATIVE_INT8; }
template <> hid_t native_type<std::int16_t>() { return H5T_NATIVE_INT16; }
template <> hid_t native_type<std::int32_t>() { return H5T_NATIVE_INT32; }
template <> hid_t native_type<std::int64_t>() { return H5T_NATIVE_INT64; }
template <> hid_t native_type<std::uint8_t>() { return H5T_NATIVE_UINT8; }
template <> hid_t native_type<std::uint16_t>() { return H5T_NATIVE_UINT16; }
template <> hid_t native_type<std::uint32_t>() { return H5T_NATIVE_UINT32; }
template <> hid_t native_type<std::uint64_t>() { return H5T_NATIVE_UINT64; }

std::string join(const std::string& group, const std::string& name) {
    if (group.empty() || group == "/") return "/" + name;
    return group + "/" + name;
}

namespace {

TypeClass classify(hid_t type) {
    switch (H5Tget_class(type)) {
        case H5T_INTEGER: return TypeClass::Integer;
        case H5T_FLOAT: return TypeClass::Float;
        case H5T_STRING: return TypeClass::String;
        case H5T_ENUM: return TypeClass::Enum;
        case H5T_COMPOUND: return TypeClass::Compound;
        case H5T_REFERENCE: return TypeClass::Reference;
        default: return TypeClass::Other;
    }
}

Info describe(hid_t type, hid_t space) {
    Info info;
    info.type_class = classify(type);
    info.type_size = H5Tget_size(type);
    if (info.type_class == TypeClass::Integer) info.is_signed = H5Tget_sign(type) == H5T_SGN_2;
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank > 0) {
        std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
        H5Sget_simple_extent_dims(space, dims.data(), nullptr);
        for (auto d : dims) info.dims.push_back(static_cast<std::int64_t>(d));
    }
    return info;
}

// Reads strings of a (fixed or variable length) string type from an already selected
// dataset or attribute.
std::vector<std::string> strings_from(hid_t file_type, std::int64_t count,
                                      const std::function<herr_t(hid_t, void*)>& read) {
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(count));
    if (count == 0) return out;
    Handle memory_type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_cset(memory_type.get(), H5Tget_cset(file_type));
    if (H5Tis_variable_str(file_type) > 0) {
        H5Tset_size(memory_type.get(), H5T_VARIABLE);
        std::vector<char*> pointers(static_cast<std::size_t>(count), nullptr);
        if (read(memory_type.get(), pointers.data()) < 0) throw std::runtime_error("read failed");
        for (auto* pointer : pointers) out.emplace_back(pointer ? pointer : "");
        // Free the library-allocated strings.
        Handle space(H5Screate_simple(1, std::array<hsize_t, 1>{static_cast<hsize_t>(count)}.data(), nullptr),
                     H5Sclose);
        H5Dvlen_reclaim(memory_type.get(), space.get(), H5P_DEFAULT, pointers.data());
    } else {
        const std::size_t width = H5Tget_size(file_type);
        H5Tset_size(memory_type.get(), width);
        H5Tset_strpad(memory_type.get(), H5T_STR_NULLPAD);
        std::vector<char> buffer(width * static_cast<std::size_t>(count), '\0');
        if (read(memory_type.get(), buffer.data()) < 0) throw std::runtime_error("read failed");
        for (std::int64_t index = 0; index < count; ++index) {
            const char* begin = buffer.data() + static_cast<std::size_t>(index) * width;
            out.emplace_back(begin, strnlen(begin, width));
        }
    }
    return out;
}

}  // namespace

File File::open_read(const std::string& path) {
    silence_errors();
    std::error_code error;
    if (!std::filesystem::exists(path, error)) throw ReadError(path, "no such file");
    if (std::filesystem::is_directory(path, error)) throw ReadError(path, "is a directory, expected a file");
    if (FILE* probe = std::fopen(path.c_str(), "rb")) {
        std::fclose(probe);
    } else {
        throw ReadError(path, std::strerror(errno));
    }
    const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
    if (is_hdf5 <= 0) throw FormatError(path, "", "not an HDF5 file (no HDF5 signature)");
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) throw FormatError(path, "", "HDF5 file cannot be opened (truncated or corrupt)");
    return File(path, Handle(id, H5Fclose));
}

File File::create(const std::string& path) {
    silence_errors();
    hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (id < 0) throw WriteError(path, "cannot create HDF5 file");
    File file(path, Handle(id, H5Fclose));
    file.m_writable = true;
    return file;
}

void File::close() {
    if (!m_file) return;
    if (m_writable && H5Fflush(m_file.get(), H5F_SCOPE_GLOBAL) < 0) throw WriteError(m_path, "flush failed");
    const herr_t status = H5Fclose(m_file.release());
    if (status < 0 && m_writable) throw WriteError(m_path, "close failed");
}

void File::fail(const std::string& object, const std::string& problem) const {
    throw FormatError(m_path, object, problem);
}

bool File::exists(const std::string& object) const {
    if (object.empty() || object == "/") return true;
    std::string partial;
    std::size_t position = 0;
    while (position < object.size()) {
        std::size_t next = object.find('/', position + 1);
        if (next == std::string::npos) next = object.size();
        partial = object.substr(0, next);
        if (partial != "/" && !partial.empty()) {
            if (H5Lexists(m_file.get(), partial.c_str(), H5P_DEFAULT) <= 0) return false;
            if (H5Oexists_by_name(m_file.get(), partial.c_str(), H5P_DEFAULT) <= 0) return false;
        }
        position = next;
    }
    return true;
}

Handle File::open_object(const std::string& object) const {
    if (!exists(object)) fail(object, "missing");
    hid_t id = H5Oopen(m_file.get(), object.c_str(), H5P_DEFAULT);
    if (id < 0) fail(object, "cannot be opened");
    return Handle(id, H5Oclose);
}

bool File::is_group(const std::string& object) const {
    if (!exists(object)) return false;
    H5O_info_t info;
    if (H5Oget_info_by_name2(m_file.get(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
    return info.type == H5O_TYPE_GROUP;
}

bool File::is_dataset(const std::string& object) const {
    if (!exists(object)) return false;
    H5O_info_t info;
    if (H5Oget_info_by_name2(m_file.get(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
    return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> File::members(const std::string& group) const {
    if (!is_group(group)) fail(group, "missing or not a group");
    std::vector<std::string> names;
    auto callback = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->emplace_back(name);
        return 0;
    };
    hsize_t index = 0;
    if (H5Literate_by_name(m_file.get(), group.c_str(), H5_INDEX_NAME, H5_ITER_INC, &index, callback, &names,
                            H5P_DEFAULT) < 0)
        fail(group, "cannot list members");
    return names;
}

Handle File::open_dataset(const std::string& object) const {
    if (!is_dataset(object)) fail(object, exists(object) ? "is not a dataset" : "missing");
    hid_t id = H5Dopen2(m_file.get(), object.c_str(), H5P_DEFAULT);
    if (id < 0) fail(object, "cannot be opened");
    return Handle(id, H5Dclose);
}

Info File::dataset_info(const std::string& object) const {
    Handle dataset = open_dataset(object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    if (!type || !space) fail(object, "cannot read type or dataspace");
    return describe(type.get(), space.get());
}

void File::read_into(const std::string& object, hid_t memory_type, void* buffer, std::int64_t offset,
                     std::int64_t count) const {
    Handle dataset = open_dataset(object);
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    const hssize_t total = H5Sget_simple_extent_npoints(space.get());
    if (offset < 0 || count < 0 || offset > total || count > total - offset)
        fail(object, "read of elements [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                         ") outside its " + std::to_string(total) + " elements");
    if (count == 0) return;
    const int rank = H5Sget_simple_extent_ndims(space.get());
    Handle file_space;
    if (rank <= 1) {
        file_space = Handle(H5Scopy(space.get()), H5Sclose);
        if (rank == 1) {
            hsize_t start = static_cast<hsize_t>(offset), length = static_cast<hsize_t>(count);
            H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &length, nullptr);
        }
    } else {
        // Flattened N-D read: only whole reads or whole leading-dimension slabs are
        // needed by callers (read_rows_2d handles row slabs itself).
        if (offset != 0 || count != total) fail(object, "partial flattened read of an N-D dataset");
        file_space = Handle(H5Scopy(space.get()), H5Sclose);
    }
    hsize_t memory_length = static_cast<hsize_t>(count);
    Handle memory_space(H5Screate_simple(1, &memory_length, nullptr), H5Sclose);
    if (H5Dread(dataset.get(), memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, buffer) < 0)
        fail(object, "read failed (truncated file, unsupported filter or incompatible type)");
}

template <typename T>
std::vector<T> File::read(const std::string& object, std::int64_t offset, std::int64_t count) const {
    const Info info = dataset_info(object);
    if (info.type_class != TypeClass::Integer && info.type_class != TypeClass::Float &&
        info.type_class != TypeClass::Enum)
        fail(object, "expected a numeric dataset");
    std::vector<T> values(static_cast<std::size_t>(count));
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
        // Large reads of compressed 1-D datasets: chunks decoded in parallel.
        // Small reads (indptr slices, names) skip the extra dataset open entirely.
        if (info.dims.size() == 1 && count >= k_min_parallel_elements && offset >= 0 && offset <= info.dims[0] &&
            count <= info.dims[0] - offset) {
            Handle dataset = open_dataset(object);
            if (read_chunked_parallel(*this, dataset.get(), object, values.data(), offset, count)) return values;
        }
    }
    read_into(object, native_type<T>(), values.data(), offset, count);
    return values;
}

template <typename T>
std::vector<T> File::read_all(const std::string& object) const {
    const Info info = dataset_info(object);
    return read<T>(object, 0, info.num_elements());
}

template <typename T>
std::vector<T> File::read_rows_2d(const std::string& object, std::int64_t row_begin, std::int64_t row_end) const {
    const Info info = dataset_info(object);
    if (info.dims.size() != 2) fail(object, "expected a 2-D dataset, found rank " + std::to_string(info.dims.size()));
    if (info.type_class != TypeClass::Integer && info.type_class != TypeClass::Float)
        fail(object, "expected a numeric dataset");
    if (row_begin < 0 || row_end < row_begin || row_end > info.dims[0])
        fail(object, "row range outside its " + std::to_string(info.dims[0]) + " rows");
    const std::int64_t cols = info.dims[1];
    std::vector<T> values(static_cast<std::size_t>((row_end - row_begin) * cols));
    if (values.empty()) return values;
    Handle dataset = open_dataset(object);
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    hsize_t start[2] = {static_cast<hsize_t>(row_begin), 0};
    hsize_t length[2] = {static_cast<hsize_t>(row_end - row_begin), static_cast<hsize_t>(cols)};
    H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, length, nullptr);
    Handle memory_space(H5Screate_simple(2, length, nullptr), H5Sclose);
    if (H5Dread(dataset.get(), native_type<T>(), memory_space.get(), space.get(), H5P_DEFAULT, values.data()) < 0)
        fail(object, "read failed (truncated file or unsupported filter)");
    return values;
}

std::vector<std::string> File::read_strings(const std::string& object) const {
    return read_strings(object, 0, dataset_info(object).num_elements());
}

std::vector<std::string> File::read_strings(const std::string& object, std::int64_t offset, std::int64_t count) const {
    Handle dataset = open_dataset(object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (classify(type.get()) != TypeClass::String) fail(object, "expected a string dataset");
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    const hssize_t total = H5Sget_simple_extent_npoints(space.get());
    if (offset < 0 || count < 0 || offset > total || count > total - offset)
        fail(object, "string read outside its " + std::to_string(total) + " elements");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank > 1) fail(object, "expected a 1-D string dataset");
    if (rank == 1) {
        hsize_t start = static_cast<hsize_t>(offset), length = static_cast<hsize_t>(count);
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &length, nullptr);
    }
    hsize_t memory_length = static_cast<hsize_t>(count);
    Handle memory_space(H5Screate_simple(1, &memory_length, nullptr), H5Sclose);
    try {
        return strings_from(type.get(), count, [&](hid_t memory_type, void* buffer) {
            return H5Dread(dataset.get(), memory_type, memory_space.get(), space.get(), H5P_DEFAULT, buffer);
        });
    } catch (const std::runtime_error&) {
        fail(object, "string read failed");
    }
}

bool File::has_attribute(const std::string& object, const std::string& name) const {
    if (!exists(object)) return false;
    return H5Aexists_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

Info File::attribute_info(const std::string& object, const std::string& name) const {
    if (!has_attribute(object, name)) fail(object, "attribute '" + name + "' missing");
    Handle attribute(H5Aopen_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    return describe(type.get(), space.get());
}

std::optional<std::vector<std::string>> File::attribute_strings(const std::string& object,
                                                                const std::string& name) const {
    if (!has_attribute(object, name)) return std::nullopt;
    Handle attribute(H5Aopen_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attribute) fail(object, "attribute '" + name + "' cannot be opened");
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    if (classify(type.get()) != TypeClass::String) fail(object, "attribute '" + name + "' is not a string");
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return std::vector<std::string>{};
    try {
        return strings_from(type.get(), count, [&](hid_t memory_type, void* buffer) {
            return H5Aread(attribute.get(), memory_type, buffer);
        });
    } catch (const std::runtime_error&) {
        fail(object, "attribute '" + name + "' read failed");
    }
}

std::optional<std::string> File::attribute_string(const std::string& object, const std::string& name) const {
    auto values = attribute_strings(object, name);
    if (!values) return std::nullopt;
    if (values->size() != 1) fail(object, "attribute '" + name + "' is not a single string");
    return values->front();
}

template <typename T>
std::optional<std::vector<T>> File::attribute_numbers(const std::string& object, const std::string& name) const {
    if (!has_attribute(object, name)) return std::nullopt;
    Handle attribute(H5Aopen_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    const auto type_class = classify(type.get());
    if (type_class != TypeClass::Integer && type_class != TypeClass::Float && type_class != TypeClass::Enum)
        fail(object, "attribute '" + name + "' is not numeric");
    std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())));
    if (!values.empty()) {
        if (type_class == TypeClass::Enum) {
            // numpy bools are written by h5py as an int8 enum {FALSE, TRUE}.
            std::vector<std::int8_t> raw(values.size());
            Handle base(H5Tget_super(type.get()), H5Tclose);
            if (H5Aread(attribute.get(), H5T_NATIVE_INT8, raw.data()) < 0)
                fail(object, "attribute '" + name + "' read failed");
            for (std::size_t index = 0; index < raw.size(); ++index) values[index] = static_cast<T>(raw[index]);
        } else if (H5Aread(attribute.get(), native_type<T>(), values.data()) < 0) {
            fail(object, "attribute '" + name + "' read failed");
        }
    }
    return values;
}

std::optional<bool> File::attribute_bool(const std::string& object, const std::string& name) const {
    auto values = attribute_numbers<std::int64_t>(object, name);
    if (!values) return std::nullopt;
    if (values->size() != 1) fail(object, "attribute '" + name + "' is not a single boolean");
    return values->front() != 0;
}

// ---- writing ----

void File::create_group(const std::string& object) const {
    Handle group(H5Gcreate2(m_file.get(), object.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!group) throw WriteError(m_path, "cannot create group " + object);
}

namespace {
Handle dataset_creation(const std::vector<hsize_t>& dims, std::size_t element_size, int gzip_level) {
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    std::int64_t total = 1;
    for (auto d : dims) total *= static_cast<std::int64_t>(d);
    if (gzip_level > 0 && total > 0) {
        // About 256 KiB chunks along the first axis.
        std::vector<hsize_t> chunk = dims;
        std::int64_t row_elements = 1;
        for (std::size_t axis = 1; axis < dims.size(); ++axis) row_elements *= static_cast<std::int64_t>(dims[axis]);
        const std::int64_t target_rows =
            std::max<std::int64_t>(1, (256 * 1024) / static_cast<std::int64_t>(element_size) / std::max<std::int64_t>(1, row_elements));
        chunk[0] = static_cast<hsize_t>(std::min<std::int64_t>(static_cast<std::int64_t>(dims[0]), target_rows));
        H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data());
        H5Pset_deflate(properties.get(), static_cast<unsigned>(gzip_level));
    }
    return properties;
}
}  // namespace

template <typename T>
void File::write(const std::string& object, const std::vector<std::int64_t>& dims, const T* values,
                 int gzip_level) const {
    std::vector<hsize_t> extent(dims.begin(), dims.end());
    Handle space(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr), H5Sclose);
    Handle properties = dataset_creation(extent, sizeof(T), gzip_level);
    Handle dataset(H5Dcreate2(m_file.get(), object.c_str(), native_type<T>(), space.get(), H5P_DEFAULT,
                              properties.get(), H5P_DEFAULT),
                   H5Dclose);
    if (!dataset) throw WriteError(m_path, "cannot create dataset " + object);
    std::int64_t total = 1;
    for (auto d : dims) total *= d;
    if (total > 0 && H5Dwrite(dataset.get(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
        throw WriteError(m_path, "cannot write dataset " + object);
}

void File::write_strings(const std::string& object, const std::vector<std::string>& values, int gzip_level) const {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    std::vector<hsize_t> extent{static_cast<hsize_t>(values.size())};
    Handle space(H5Screate_simple(1, extent.data(), nullptr), H5Sclose);
    Handle properties = dataset_creation(extent, sizeof(char*), gzip_level);
    Handle dataset(H5Dcreate2(m_file.get(), object.c_str(), type.get(), space.get(), H5P_DEFAULT, properties.get(),
                              H5P_DEFAULT),
                   H5Dclose);
    if (!dataset) throw WriteError(m_path, "cannot create dataset " + object);
    std::vector<const char*> pointers;
    pointers.reserve(values.size());
    for (const auto& value : values) pointers.push_back(value.c_str());
    if (!values.empty() && H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
        throw WriteError(m_path, "cannot write dataset " + object);
}

void File::write_attribute(const std::string& object, const std::string& name, const std::string& value) const {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attribute(H5Acreate_by_name(m_file.get(), object.c_str(), name.c_str(), type.get(), space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    const char* pointer = value.c_str();
    if (!attribute || H5Awrite(attribute.get(), type.get(), &pointer) < 0)
        throw WriteError(m_path, "cannot write attribute " + name + " on " + object);
}

void File::write_attribute(const std::string& object, const std::string& name,
                           const std::vector<std::string>& values) const {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    hsize_t length = values.size();
    // anndata writes an empty column-order as an empty array; HDF5 needs a null
    // dataspace or zero-length simple space for that.
    Handle space(values.empty() ? H5Screate(H5S_NULL) : H5Screate_simple(1, &length, nullptr), H5Sclose);
    Handle attribute(H5Acreate_by_name(m_file.get(), object.c_str(), name.c_str(), type.get(), space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    if (!attribute) throw WriteError(m_path, "cannot create attribute " + name + " on " + object);
    std::vector<const char*> pointers;
    for (const auto& value : values) pointers.push_back(value.c_str());
    if (!values.empty() && H5Awrite(attribute.get(), type.get(), pointers.data()) < 0)
        throw WriteError(m_path, "cannot write attribute " + name + " on " + object);
}

void File::write_attribute(const std::string& object, const std::string& name, bool value) const {
    // h5py's numpy-bool encoding: an int8 enum {FALSE: 0, TRUE: 1}.
    Handle type(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
    std::int8_t false_value = 0, true_value = 1;
    H5Tenum_insert(type.get(), "FALSE", &false_value);
    H5Tenum_insert(type.get(), "TRUE", &true_value);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attribute(H5Acreate_by_name(m_file.get(), object.c_str(), name.c_str(), type.get(), space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    std::int8_t stored = value ? 1 : 0;
    if (!attribute || H5Awrite(attribute.get(), type.get(), &stored) < 0)
        throw WriteError(m_path, "cannot write attribute " + name + " on " + object);
}

template <typename T>
void File::write_attribute(const std::string& object, const std::string& name, const std::vector<T>& values) const {
    hsize_t length = values.size();
    Handle space(H5Screate_simple(1, &length, nullptr), H5Sclose);
    Handle attribute(H5Acreate_by_name(m_file.get(), object.c_str(), name.c_str(), native_type<T>(), space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    if (!attribute || (length > 0 && H5Awrite(attribute.get(), native_type<T>(), values.data()) < 0))
        throw WriteError(m_path, "cannot write attribute " + name + " on " + object);
}

#define FATHOM_H5_INSTANTIATE(T)                                                                              \
    template std::vector<T> File::read<T>(const std::string&, std::int64_t, std::int64_t) const;              \
    template std::vector<T> File::read_all<T>(const std::string&) const;                                      \
    template std::vector<T> File::read_rows_2d<T>(const std::string&, std::int64_t, std::int64_t) const;      \
    template std::optional<std::vector<T>> File::attribute_numbers<T>(const std::string&, const std::string&) \
        const;                                                                                                \
    template void File::write<T>(const std::string&, const std::vector<std::int64_t>&, const T*, int) const;  \
    template void File::write_attribute<T>(const std::string&, const std::string&, const std::vector<T>&) const;

FATHOM_H5_INSTANTIATE(float)
FATHOM_H5_INSTANTIATE(double)
FATHOM_H5_INSTANTIATE(std::int8_t)
FATHOM_H5_INSTANTIATE(std::int32_t)
FATHOM_H5_INSTANTIATE(std::int64_t)
FATHOM_H5_INSTANTIATE(std::uint8_t)
FATHOM_H5_INSTANTIATE(std::uint32_t)
FATHOM_H5_INSTANTIATE(std::uint64_t)
#undef FATHOM_H5_INSTANTIATE

}  // namespace fathom::io::h5
