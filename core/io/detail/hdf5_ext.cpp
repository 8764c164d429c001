#include "core/io/detail/hdf5_ext.hpp"

#include <H5Zpublic.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace fathom::io::h5 {

// ---- LZF ----

std::int64_t lzf_decompress(const std::uint8_t* input, std::size_t input_size, std::uint8_t* output,
                            std::size_t output_size) noexcept {
    // liblzf 3.6 lzf_d.c format: a control byte below 32 starts a literal run of
    // control + 1 bytes; otherwise the top 3 bits are a length (7 = read one more
    // length byte), the low 5 bits and the next byte an offset back into the output.
    const std::uint8_t* in = input;
    const std::uint8_t* const in_end = input + input_size;
    std::uint8_t* out = output;
    std::uint8_t* const out_end = output + output_size;
    while (in < in_end) {
        const unsigned control = *in++;
        if (control < (1u << 5)) {
            const std::size_t length = control + 1;
            if (static_cast<std::size_t>(out_end - out) < length) return 0;
            if (static_cast<std::size_t>(in_end - in) < length) return -1;
            std::memcpy(out, in, length);
            out += length;
            in += length;
        } else {
            std::size_t length = control >> 5;
            std::size_t back = static_cast<std::size_t>(control & 0x1f) << 8;
            if (in >= in_end) return -1;
            if (length == 7) {
                length += *in++;
                if (in >= in_end) return -1;
            }
            back += *in++;
            length += 2;
            if (static_cast<std::size_t>(out - output) < back + 1) return -1;
            if (static_cast<std::size_t>(out_end - out) < length) return 0;
            const std::uint8_t* reference = out - back - 1;
            // Byte by byte: the source may overlap the bytes being written (runs).
            for (std::size_t index = 0; index < length; ++index) *out++ = *reference++;
        }
    }
    return out - output;
}

namespace {

// h5py's lzf_filter.c: cd_values[2] holds the chunk size in bytes; when the output
// does not fit, grow the buffer and retry.
std::size_t lzf_filter(unsigned flags, std::size_t cd_nelmts, const unsigned cd_values[], std::size_t nbytes,
                       std::size_t* buf_size, void** buf) {
    if (!(flags & H5Z_FLAG_REVERSE)) return 0;  // decoding only
    std::size_t output_size = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
    constexpr std::size_t max_output = std::size_t{1} << 32;
    while (output_size <= max_output) {
        auto* output = static_cast<std::uint8_t*>(std::malloc(output_size));
        if (!output) return 0;
        const std::int64_t written =
            lzf_decompress(static_cast<const std::uint8_t*>(*buf), nbytes, output, output_size);
        if (written > 0) {
            // A chunk always decodes to its full size (h5py stores it in cd_values[2]);
            // fewer bytes would leave the rest of the chunk uninitialised.
            if (cd_nelmts >= 3 && cd_values[2] != 0 && static_cast<std::size_t>(written) != cd_values[2]) {
                std::free(output);
                return 0;
            }
            std::free(*buf);
            *buf = output;
            *buf_size = output_size;
            return static_cast<std::size_t>(written);
        }
        std::free(output);
        if (written < 0) return 0;  // corrupt
        output_size = output_size * 2 + nbytes;
    }
    return 0;
}

}  // namespace

void register_lzf_filter() {
    static std::once_flag once;
    std::call_once(once, [] {
        silence_errors();
        if (H5Zfilter_avail(static_cast<H5Z_filter_t>(lzf_filter_id)) > 0) return;
        static const H5Z_class2_t filter_class = {
            H5Z_CLASS_T_VERS,
            static_cast<H5Z_filter_t>(lzf_filter_id),
            0,  // no encoder
            1,  // decoder
            "lzf (fathom decoder)",
            nullptr,
            nullptr,
            lzf_filter,
        };
        H5Zregister(&filter_class);
    });
}

// ---- references, enums, strings ----

namespace {

Handle open_dataset_handle(const File& file, const std::string& object) {
    if (!file.is_dataset(object)) file.fail(object, file.exists(object) ? "is not a dataset" : "missing");
    hid_t id = H5Dopen2(file.id(), object.c_str(), H5P_DEFAULT);
    if (id < 0) file.fail(object, "cannot be opened");
    return Handle(id, H5Dclose);
}

bool is_bool_enum_type(hid_t type) {
    if (H5Tget_class(type) != H5T_ENUM || H5Tget_size(type) != 1 || H5Tget_nmembers(type) != 2) return false;
    for (unsigned member = 0; member < 2; ++member) {
        char* name = H5Tget_member_name(type, member);
        std::int8_t value = -1;
        const bool has_value = H5Tget_member_value(type, member, &value) >= 0;
        const std::string text = name ? name : "";
        H5free_memory(name);
        if (!has_value) return false;
        if (!((text == "FALSE" && value == 0) || (text == "TRUE" && value == 1))) return false;
    }
    return true;
}

TypeClass classify_type(hid_t type) {
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

// The compound dataset, its file type, record count and the index of `field`.
struct CompoundMember {
    Handle dataset;
    Handle file_type;
    Handle member_type;
    std::int64_t records = 0;
};

CompoundMember open_member(const File& file, const std::string& object, const std::string& field) {
    CompoundMember member;
    member.dataset = open_dataset_handle(file, object);
    member.file_type = Handle(H5Dget_type(member.dataset.get()), H5Tclose);
    if (H5Tget_class(member.file_type.get()) != H5T_COMPOUND) file.fail(object, "expected a compound dataset");
    const int index = H5Tget_member_index(member.file_type.get(), field.c_str());
    if (index < 0) file.fail(object, "compound field '" + field + "' missing");
    member.member_type = Handle(H5Tget_member_type(member.file_type.get(), static_cast<unsigned>(index)), H5Tclose);
    Handle space(H5Dget_space(member.dataset.get()), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != 1) file.fail(object, "expected a 1-D compound dataset");
    member.records = static_cast<std::int64_t>(H5Sget_simple_extent_npoints(space.get()));
    return member;
}

}  // namespace

std::optional<std::string> attribute_reference_target(const File& file, const std::string& object,
                                                      const std::string& name) {
    if (!file.has_attribute(object, name)) return std::nullopt;
    Handle attribute(H5Aopen_by_name(file.id(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attribute) file.fail(object, "attribute '" + name + "' cannot be opened");
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    if (H5Tget_class(type.get()) != H5T_REFERENCE || H5Tequal(type.get(), H5T_STD_REF_OBJ) <= 0)
        file.fail(object, "attribute '" + name + "' is not an object reference");
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        file.fail(object, "attribute '" + name + "' is not a single object reference");
    hobj_ref_t reference{};
    if (H5Aread(attribute.get(), H5T_STD_REF_OBJ, &reference) < 0)
        file.fail(object, "attribute '" + name + "' read failed");
    Handle target(H5Rdereference2(file.id(), H5P_DEFAULT, H5R_OBJECT, &reference), H5Oclose);
    if (!target) file.fail(object, "attribute '" + name + "' references an object that cannot be opened");
    const ssize_t length = H5Iget_name(target.get(), nullptr, 0);
    if (length <= 0) file.fail(object, "attribute '" + name + "' references an anonymous object");
    std::string path(static_cast<std::size_t>(length), '\0');
    H5Iget_name(target.get(), path.data(), static_cast<std::size_t>(length) + 1);
    return path;
}

bool is_bool_enum_dataset(const File& file, const std::string& object) {
    if (!file.is_dataset(object)) return false;
    Handle dataset = open_dataset_handle(file, object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    return type && is_bool_enum_type(type.get());
}

bool is_fixed_length_string_dataset(const File& file, const std::string& object) {
    if (!file.is_dataset(object)) return false;
    Handle dataset = open_dataset_handle(file, object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    return type && H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) <= 0;
}

std::vector<CompoundField> compound_fields(const File& file, const std::string& object) {
    Handle dataset = open_dataset_handle(file, object);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (!type || H5Tget_class(type.get()) != H5T_COMPOUND) file.fail(object, "expected a compound dataset");
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != 1) file.fail(object, "expected a 1-D compound dataset");
    const int count = H5Tget_nmembers(type.get());
    if (count < 0) file.fail(object, "cannot list compound fields");
    std::vector<CompoundField> fields;
    for (int index = 0; index < count; ++index) {
        CompoundField field;
        char* name = H5Tget_member_name(type.get(), static_cast<unsigned>(index));
        field.name = name ? name : "";
        H5free_memory(name);
        Handle member(H5Tget_member_type(type.get(), static_cast<unsigned>(index)), H5Tclose);
        Handle element;
        if (H5Tget_class(member.get()) == H5T_ARRAY) {
            const int rank = H5Tget_array_ndims(member.get());
            std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
            if (rank > 0) H5Tget_array_dims2(member.get(), dims.data());
            for (auto d : dims) field.width *= static_cast<std::int64_t>(d);
            element = Handle(H5Tget_super(member.get()), H5Tclose);
        } else {
            element = Handle(H5Tcopy(member.get()), H5Tclose);
        }
        field.type_class = classify_type(element.get());
        field.type_size = H5Tget_size(element.get());
        if (field.type_class == TypeClass::Integer) field.is_signed = H5Tget_sign(element.get()) == H5T_SGN_2;
        field.is_bool = is_bool_enum_type(element.get());
        fields.push_back(std::move(field));
    }
    return fields;
}

template <typename T>
std::vector<T> read_compound_numbers(const File& file, const std::string& object, const std::string& field) {
    CompoundMember member = open_member(file, object, field);
    const std::string where = "field '" + field + "'";
    Handle element_type;
    std::int64_t width = 1;
    std::vector<hsize_t> dims;
    if (H5Tget_class(member.member_type.get()) == H5T_ARRAY) {
        const int rank = H5Tget_array_ndims(member.member_type.get());
        dims.resize(static_cast<std::size_t>(std::max(rank, 0)));
        if (rank > 0) H5Tget_array_dims2(member.member_type.get(), dims.data());
        for (auto d : dims) width *= static_cast<std::int64_t>(d);
        element_type = Handle(H5Tget_super(member.member_type.get()), H5Tclose);
    } else {
        element_type = Handle(H5Tcopy(member.member_type.get()), H5Tclose);
    }
    const H5T_class_t element_class = H5Tget_class(element_type.get());
    if (element_class != H5T_INTEGER && element_class != H5T_FLOAT && element_class != H5T_ENUM)
        file.fail(object, where + " is not numeric");
    std::vector<T> values(static_cast<std::size_t>(member.records * width));
    if (values.empty()) return values;
    Handle memory_member = dims.empty()
                               ? Handle(H5Tcopy(native_type<T>()), H5Tclose)
                               : Handle(H5Tarray_create2(native_type<T>(), static_cast<unsigned>(dims.size()),
                                                         dims.data()),
                                        H5Tclose);
    Handle memory_type(H5Tcreate(H5T_COMPOUND, sizeof(T) * static_cast<std::size_t>(width)), H5Tclose);
    if (!memory_member || !memory_type || H5Tinsert(memory_type.get(), field.c_str(), 0, memory_member.get()) < 0)
        file.fail(object, where + ": cannot build the memory type");
    if (H5Dread(member.dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
        file.fail(object, where + " read failed (truncated file, unsupported filter or incompatible type)");
    return values;
}

std::vector<std::string> read_compound_strings(const File& file, const std::string& object, const std::string& field) {
    CompoundMember member = open_member(file, object, field);
    const std::string where = "field '" + field + "'";
    if (H5Tget_class(member.member_type.get()) != H5T_STRING) file.fail(object, where + " is not a string");
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(member.records));
    if (member.records == 0) return out;
    Handle string_type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_cset(string_type.get(), H5Tget_cset(member.member_type.get()));
    const bool variable = H5Tis_variable_str(member.member_type.get()) > 0;
    if (variable) {
        H5Tset_size(string_type.get(), H5T_VARIABLE);
        Handle memory_type(H5Tcreate(H5T_COMPOUND, sizeof(char*)), H5Tclose);
        H5Tinsert(memory_type.get(), field.c_str(), 0, string_type.get());
        std::vector<char*> pointers(static_cast<std::size_t>(member.records), nullptr);
        if (H5Dread(member.dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
            file.fail(object, where + " read failed");
        for (char* pointer : pointers) out.emplace_back(pointer ? pointer : "");
        Handle space(H5Dget_space(member.dataset.get()), H5Sclose);
        H5Dvlen_reclaim(memory_type.get(), space.get(), H5P_DEFAULT, pointers.data());
    } else {
        const std::size_t width = H5Tget_size(member.member_type.get());
        H5Tset_size(string_type.get(), width);
        H5Tset_strpad(string_type.get(), H5T_STR_NULLPAD);
        Handle memory_type(H5Tcreate(H5T_COMPOUND, width), H5Tclose);
        H5Tinsert(memory_type.get(), field.c_str(), 0, string_type.get());
        std::vector<char> buffer(width * static_cast<std::size_t>(member.records), '\0');
        if (H5Dread(member.dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0)
            file.fail(object, where + " read failed");
        for (std::int64_t record = 0; record < member.records; ++record) {
            const char* begin = buffer.data() + static_cast<std::size_t>(record) * width;
            out.emplace_back(begin, strnlen(begin, width));
        }
    }
    return out;
}

template std::vector<float> read_compound_numbers<float>(const File&, const std::string&, const std::string&);
template std::vector<double> read_compound_numbers<double>(const File&, const std::string&, const std::string&);
template std::vector<std::int64_t> read_compound_numbers<std::int64_t>(const File&, const std::string&,
                                                                       const std::string&);
template std::vector<std::int8_t> read_compound_numbers<std::int8_t>(const File&, const std::string&,
                                                                     const std::string&);

}  // namespace fathom::io::h5
