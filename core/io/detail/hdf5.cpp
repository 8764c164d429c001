#include "core/io/detail/hdf5.hpp"

#include "core/io/detail/chunk_reader.hpp"
#include "core/io/detail/input_checks.hpp"
#include "core/memory/first_touch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <utility>
#include <set>
#include <array>
#include <cerrno>
#include <functional>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <type_traits>

namespace fathom::io::h5 {

namespace {
struct FileImage {
    std::string path;
    const unsigned char* data = nullptr;
    std::size_t size = 0;
};
FileImage g_image;  // set by fuzz targets before any read; not for concurrent use

const FileImage* image_for(const std::string& path) {
    return g_image.data && g_image.path == path ? &g_image : nullptr;
}
}  // namespace

void set_file_image(const std::string& path, const void* data, std::size_t size) {
    g_image = {path, static_cast<const unsigned char*>(data), size};
}

void clear_file_image() { g_image = {}; }

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

// ---- variable-length string heaps ----
//
// libhdf5 1.10 trusts the global heap collections that hold variable-length strings:
// a collection whose object sizes are corrupt makes H5HG_read loop forever (an object
// of size 0) or read outside the collection (a crash), and h5py fails the same way.
// Before any variable-length read, the element descriptors (length, collection
// address, object index) are read raw and every collection they name is parsed here
// with the same rules, bounds checked against the file size; a reference to an object
// that is absent or shorter than the string is refused too. Raw descriptors are
// reachable for contiguous datasets and for chunked ones filtered by deflate and
// shuffle only (what h5py and anndata write), and for string attributes kept in
// version 1 or 2 object headers (attribute_raw_data); compact datasets and attributes in
// dense attribute storage are read without this check.

struct RawFile {
    const unsigned char* image = nullptr;  ///< set_file_image() buffer instead of the file
    int descriptor = -1;
    std::uint64_t size = 0;
    std::uint64_t base = 0;  ///< user block: HDF5 addresses are relative to it
    std::size_t sizeof_addr = 8, sizeof_size = 8;
    ~RawFile() {
        if (descriptor >= 0) ::close(descriptor);
    }
    bool read(std::uint64_t address, std::size_t length, unsigned char* out) const {
        const std::uint64_t at = base + address;
        if (at < address || at > size || length > size - at) return false;
        if (length == 0) return true;  // `out` may be null then (an empty vector's data())
        if (image) {
            std::memcpy(out, image + at, length);
            return true;
        }
        std::size_t done = 0;
        while (done < length) {
            const ssize_t got = ::pread(descriptor, out + done, length - done, static_cast<off_t>(at + done));
            if (got <= 0) return false;
            done += static_cast<std::size_t>(got);
        }
        return true;
    }
};

std::uint64_t decode_le(const unsigned char* bytes, std::size_t width) {
    std::uint64_t value = 0;
    for (std::size_t index = 0; index < width; ++index) value |= static_cast<std::uint64_t>(bytes[index]) << (8 * index);
    return value;
}

/// Object sizes of one global heap collection by index; throws naming `object` when
/// the collection is corrupt.
std::map<std::uint16_t, std::uint64_t> parse_heap_collection(const File& file, const std::string& object,
                                                             const RawFile& raw, std::uint64_t address) {
    const std::size_t header = 8 + raw.sizeof_size;
    const std::size_t object_header = 8 + raw.sizeof_size;
    const std::string where = "global heap collection at address " + std::to_string(address);
    std::vector<unsigned char> bytes(header);
    if (!raw.read(address, header, bytes.data()))
        file.fail(object, where + " lies past the end of the file (truncated file?)");
    if (std::memcmp(bytes.data(), "GCOL", 4) != 0 || bytes[4] != 1)
        file.fail(object, where + " has no valid signature (corrupt file)");
    const std::uint64_t size = decode_le(bytes.data() + 8, raw.sizeof_size);
    if (size < header || size > raw.size || address > raw.size - size)
        file.fail(object, where + " declares " + std::to_string(size) + " bytes, beyond the file's " +
                              std::to_string(raw.size) + " (corrupt or truncated file)");
    bytes.resize(static_cast<std::size_t>(size));
    if (!raw.read(address, bytes.size(), bytes.data())) file.fail(object, where + " cannot be read");
    std::map<std::uint16_t, std::uint64_t> objects;
    std::uint64_t position = header;
    while (position < size) {
        if (size - position < object_header) break;  // too small for an object: free space
        const auto index = static_cast<std::uint16_t>(decode_le(bytes.data() + position, 2));
        const std::uint64_t object_size = decode_le(bytes.data() + position + 8, raw.sizeof_size);
        std::uint64_t need = 0;
        if (index > 0) {
            if (object_size > size) file.fail(object, where + ": object " + std::to_string(index) + " overruns it");
            need = object_header + ((object_size + 7) & ~std::uint64_t{7});
            objects[index] = object_size;
        } else {
            need = object_size;  // the free space runs to the end
        }
        if (need == 0 || need > size - position)
            file.fail(object, where + ": object " + std::to_string(index) + " at offset " + std::to_string(position) +
                                  " declares " + std::to_string(object_size) + " bytes, inconsistent with the collection (corrupt file)");
        position += need;
    }
    return objects;
}

/// The raw descriptors of elements [offset, offset + count) of a variable-length string
/// dataset, or nullopt when its layout gives no raw access (see above).
std::optional<std::vector<unsigned char>> raw_descriptors(const File& file, const std::string& object, hid_t dataset,
                                                          const RawFile& raw, std::size_t width, std::int64_t offset,
                                                          std::int64_t count, std::int64_t total) {
    Handle create(H5Dget_create_plist(dataset), H5Pclose);
    if (!create) return std::nullopt;
    const H5D_layout_t layout = H5Pget_layout(create.get());
    std::vector<unsigned char> out(static_cast<std::size_t>(count) * width);
    if (layout == H5D_CONTIGUOUS) {
        const haddr_t address = H5Dget_offset(dataset);
        if (address == HADDR_UNDEF) return std::nullopt;  // never written: nothing on a heap
        if (!raw.read(address + static_cast<std::uint64_t>(offset) * width, out.size(), out.data()))
            file.fail(object, "string data lies past the end of the file (truncated file?)");
        return out;
    }
    if (layout != H5D_CHUNKED) return std::nullopt;
    hsize_t chunk_dims[1] = {0};
    if (H5Pget_chunk(create.get(), 1, chunk_dims) != 1 || chunk_dims[0] == 0) return std::nullopt;
    bool deflate = false, shuffle = false;
    const int num_filters = H5Pget_nfilters(create.get());
    for (int index = 0; index < num_filters; ++index) {
        unsigned flags = 0, config = 0;
        std::size_t num_values = 8;
        unsigned values[8];
        char name[64];
        const H5Z_filter_t filter =
            H5Pget_filter2(create.get(), static_cast<unsigned>(index), &flags, &num_values, values, sizeof name, name, &config);
        if (filter == H5Z_FILTER_DEFLATE) deflate = true;
        else if (filter == H5Z_FILTER_SHUFFLE && !deflate) shuffle = true;
        else return std::nullopt;
    }
    const std::uint64_t chunk_elements = chunk_dims[0];
    const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_elements) * width;
    std::vector<unsigned char> stored, decoded(chunk_bytes), plain(chunk_bytes);
    const std::uint64_t first = static_cast<std::uint64_t>(offset) / chunk_elements;
    const std::uint64_t last = (static_cast<std::uint64_t>(offset + count) - 1) / chunk_elements;
    for (std::uint64_t chunk = first; chunk <= last; ++chunk) {
        hsize_t coordinate = chunk * chunk_elements, bytes = 0;
        const std::uint64_t chunk_begin = chunk * chunk_elements;
        const std::uint64_t from = std::max<std::uint64_t>(chunk_begin, static_cast<std::uint64_t>(offset));
        const std::uint64_t to = std::min<std::uint64_t>({chunk_begin + chunk_elements,
                                                          static_cast<std::uint64_t>(offset + count),
                                                          static_cast<std::uint64_t>(total)});
        unsigned char* target = out.data() + (from - static_cast<std::uint64_t>(offset)) * width;
        if (H5Dget_chunk_storage_size(dataset, &coordinate, &bytes) < 0 || bytes == 0) {
            std::memset(target, 0, static_cast<std::size_t>(to - from) * width);  // unallocated: empty strings
            continue;
        }
        if (bytes > raw.size) file.fail(object, "chunk " + std::to_string(chunk) + " is larger than the file");
        stored.resize(static_cast<std::size_t>(bytes));
        std::uint32_t mask = 0;
        if (H5Dread_chunk(dataset, H5P_DEFAULT, &coordinate, &mask, stored.data()) < 0)
            file.fail(object, "chunk " + std::to_string(chunk) + " cannot be read (truncated file?)");
        const unsigned char* current = stored.data();
        std::size_t current_size = stored.size();
        if (deflate && !(mask & (shuffle ? 2u : 1u))) {
            uLongf produced = static_cast<uLongf>(chunk_bytes);
            const int status = uncompress(decoded.data(), &produced, current, static_cast<uLong>(current_size));
            if (status != Z_OK && status != Z_BUF_ERROR)
                file.fail(object, "chunk " + std::to_string(chunk) + " holds a corrupt deflate stream");
            current = decoded.data();
            current_size = produced;
        }
        if (current_size != chunk_bytes)
            file.fail(object, "chunk " + std::to_string(chunk) + " decodes to " + std::to_string(current_size) +
                                  " bytes; expected " + std::to_string(chunk_bytes));
        if (shuffle && !(mask & 1u)) {
            for (std::size_t byte = 0; byte < width; ++byte)
                for (std::uint64_t element = 0; element < chunk_elements; ++element)
                    plain[element * width + byte] = current[byte * chunk_elements + element];
            current = plain.data();
        }
        std::memcpy(target, current + (from - chunk_begin) * width, static_cast<std::size_t>(to - from) * width);
    }
    return out;
}

/// Opens the raw bytes of `file` (or its in-memory image); false when unavailable.
bool open_raw(const File& file, RawFile& raw) {
    Handle create(H5Fget_create_plist(file.id()), H5Pclose);
    hsize_t userblock = 0;
    if (!create || H5Pget_userblock(create.get(), &userblock) < 0 ||
        H5Pget_sizes(create.get(), &raw.sizeof_addr, &raw.sizeof_size) < 0)
        return false;
    if (raw.sizeof_addr > 8 || raw.sizeof_size > 8 || raw.sizeof_size < 2 || raw.sizeof_addr < 2) return false;
    raw.base = userblock;
    if (const FileImage* image = image_for(file.path())) {
        raw.image = image->data;
        raw.size = image->size;
        return true;
    }
    raw.descriptor = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (raw.descriptor < 0) return false;
    struct stat info {};
    if (::fstat(raw.descriptor, &info) != 0 || !S_ISREG(info.st_mode)) return false;
    raw.size = static_cast<std::uint64_t>(info.st_size);
    return true;
}

/// Checks `count` descriptors (length, collection address, object index) against the
/// collections they name; `what` names the element in messages.
void check_descriptors(const File& file, const std::string& object, const RawFile& raw,
                       const std::vector<unsigned char>& descriptors, std::int64_t count, std::int64_t first,
                       const std::string& what) {
    const std::size_t width = 4 + raw.sizeof_addr + 4;
    std::map<std::uint64_t, std::map<std::uint16_t, std::uint64_t>> collections;
    for (std::int64_t element = 0; element < count; ++element) {
        const unsigned char* entry = descriptors.data() + static_cast<std::size_t>(element) * width;
        const std::uint64_t length = decode_le(entry, 4);
        const std::uint64_t address = decode_le(entry + 4, raw.sizeof_addr);
        const std::uint64_t index = decode_le(entry + 4 + raw.sizeof_addr, 4);
        if (address == 0 && length == 0) continue;  // empty (null) string
        auto found = collections.find(address);
        if (found == collections.end())
            found = collections.emplace(address, parse_heap_collection(file, object, raw, address)).first;
        const auto heap_object = index <= 0xFFFF ? found->second.find(static_cast<std::uint16_t>(index))
                                                 : found->second.end();
        if (heap_object == found->second.end() || heap_object->second < length)
            file.fail(object, what + " " + std::to_string(first + element) + " refers to heap object " +
                                  std::to_string(index) + " of the global heap collection at address " +
                                  std::to_string(address) + ", which is missing or shorter than the string (corrupt file)");
    }
}

void check_string_heaps(const File& file, const std::string& object, hid_t dataset, std::int64_t offset,
                        std::int64_t count, std::int64_t total) {
    if (count <= 0) return;
    RawFile raw;
    if (!open_raw(file, raw)) return;
    const std::size_t width = 4 + raw.sizeof_addr + 4;
    const auto descriptors = raw_descriptors(file, object, dataset, raw, width, offset, count, total);
    if (!descriptors) return;
    check_descriptors(file, object, raw, *descriptors, count, offset, "string");
}

/// Calls `visit(type, data, size)` for each message of the object header of `object`
/// (version 1 and 2 headers and their continuation blocks) until it returns true.
/// Returns false when the header could not be located or has an unknown version;
/// throws FormatError when the header is inconsistent (blocks past the end of the
/// file, messages overrunning their block).
template <typename Visit>
bool walk_header_at(const File& file, const std::string& object, const RawFile& raw, std::uint64_t header, Visit&& visit);

template <typename Visit>
bool walk_header(const File& file, const std::string& object, const RawFile& raw, Visit&& visit) {
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t info;
    if (H5Oget_info_by_name3(file.id(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
    haddr_t address = HADDR_UNDEF;
    if (H5VLnative_token_to_addr(file.id(), info.token, &address) < 0) return false;
    const std::uint64_t header = address;
#else
    H5O_info_t info;
    if (H5Oget_info_by_name2(file.id(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return false;
    const std::uint64_t header = info.addr;
#endif
    return walk_header_at(file, object, raw, header, std::forward<Visit>(visit));
}

/// walk_header() for the header at `header` (no libhdf5 call: usable before libhdf5
/// has loaded the header).
template <typename Visit>
bool walk_header_at(const File& file, const std::string& object, const RawFile& raw, std::uint64_t header, Visit&& visit) {
    const std::string where = "object header at address " + std::to_string(header);
    unsigned char prefix[32] = {};
    if (!raw.read(header, 16, prefix)) file.fail(object, where + " lies past the end of the file (truncated file?)");
    struct Block {
        std::uint64_t address, length;
        bool v2;
    };
    std::vector<Block> blocks;
    const bool v2 = std::memcmp(prefix, "OHDR", 4) == 0;
    bool creation_order = false;
    if (v2) {
        if (!raw.read(header, 32, prefix)) file.fail(object, where + " cannot be read");
        const unsigned flags = prefix[5];
        creation_order = flags & 0x04;
        std::size_t position = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
        const std::size_t size_bytes = std::size_t{1} << (flags & 3);
        const std::uint64_t chunk = decode_le(prefix + position, size_bytes);
        blocks.push_back({header + position + size_bytes, chunk, true});
    } else {
        if (prefix[0] != 1) return false;
        blocks.push_back({header + 16, decode_le(prefix + 8, 4), false});
    }
    std::vector<unsigned char> bytes;
    for (std::size_t block = 0; block < blocks.size(); ++block) {
        if (block > 256) file.fail(object, where + ": more than 256 continuation blocks (corrupt file)");
        const Block current = blocks[block];
        if (current.length > raw.size) file.fail(object, where + ": a block larger than the file (corrupt file)");
        bytes.resize(static_cast<std::size_t>(current.length));
        if (!raw.read(current.address, bytes.size(), bytes.data()))
            file.fail(object, where + ": a block lies past the end of the file (truncated file?)");
        std::size_t position = 0;
        std::size_t end = bytes.size();
        if (current.v2 && block > 0) {  // "OCHK" ... checksum
            if (end < 8 || std::memcmp(bytes.data(), "OCHK", 4) != 0) file.fail(object, where + ": bad continuation block");
            position = 4;
            end -= 4;
        }
        const std::size_t message_header = current.v2 ? 4 + (creation_order ? 2 : 0) : 8;
        while (position + message_header <= end) {
            const unsigned type = current.v2 ? bytes[position] : static_cast<unsigned>(decode_le(&bytes[position], 2));
            const std::size_t size = static_cast<std::size_t>(decode_le(&bytes[position + (current.v2 ? 1 : 2)], 2));
            const std::size_t data = position + message_header;
            if (size > end - data) file.fail(object, where + ": a message overruns its block (corrupt file)");
            const unsigned char* message = bytes.data() + data;
            if (type == 0x10 && size >= raw.sizeof_addr + raw.sizeof_size)  // continuation
                blocks.push_back({decode_le(message, raw.sizeof_addr), decode_le(message + raw.sizeof_addr, raw.sizeof_size),
                                  current.v2});
            else if (visit(type, message, size))
                return true;
            position = data + size;
        }
    }
    return true;
}

/// The raw data of attribute `name` of `object`, from its object header (attributes in
/// dense storage are not found). nullopt when not found or its datatype is shared.
std::optional<std::vector<unsigned char>> attribute_raw_data(const File& file, const std::string& object,
                                                             const std::string& name, const RawFile& raw) {
    std::optional<std::vector<unsigned char>> found;
    walk_header(file, object, raw, [&](unsigned type, const unsigned char* message, std::size_t size) {
        if (type != 0x0C || size < 8) return false;  // attribute messages only
        const unsigned version = message[0], flags = message[1];
        const std::size_t name_size = decode_le(message + 2, 2), type_size = decode_le(message + 4, 2),
                          space_size = decode_le(message + 6, 2);
        auto pad = [&](std::size_t n) { return version == 1 ? (n + 7) & ~std::size_t{7} : n; };
        const std::size_t name_at = version == 3 ? 9 : 8;
        const std::size_t data_at = name_at + pad(name_size) + pad(type_size) + pad(space_size);
        if (version < 1 || version > 3 || data_at > size) file.fail(object, "a corrupt attribute message");
        const std::string stored(reinterpret_cast<const char*>(message + name_at),
                                 strnlen(reinterpret_cast<const char*>(message + name_at), name_size));
        if (stored != name) return false;
        if (!(version >= 2 && (flags & 0x01))) found.emplace(message + data_at, message + size);  // not shared
        return true;
    });
    return found;
}

/// The first block of the object header at `address` must lie inside the file: libhdf5
/// 1.10 allocates whatever size a corrupt header prefix declares (16 GiB, found by
/// fuzz_h5ad) before it reads the block.
void check_header_size(const File& file, const std::string& object, std::uint64_t address) {
    RawFile raw;
    if (!open_raw(file, raw)) return;
    unsigned char prefix[32] = {};
    if (!raw.read(address, 16, prefix)) file.fail(object, "object header lies past the end of the file (corrupt file)");
    std::uint64_t size = 0;
    if (std::memcmp(prefix, "OHDR", 4) == 0) {
        if (!raw.read(address, 32, prefix)) file.fail(object, "object header cannot be read (corrupt file)");
        const unsigned flags = prefix[5];
        const std::size_t position = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
        size = decode_le(prefix + position, std::size_t{1} << (flags & 3));
    } else if (prefix[0] == 1) {
        size = decode_le(prefix + 8, 4);
    } else {
        return;  // libhdf5 refuses unknown versions itself
    }
    if (size > raw.size || address > raw.size - size)
        file.fail(object, "object header declares " + std::to_string(size) + " bytes at " + std::to_string(address) +
                              ", beyond the file's " + std::to_string(raw.size) + " bytes (corrupt file)");
    // Its continuation blocks too (a 4 GiB continuation was the next fuzz finding).
    walk_header_at(file, object, raw, address, [](unsigned, const unsigned char*, std::size_t) { return false; });
}

/// The attribute messages of an object header, checked for sizes that fit their message
/// before libhdf5 decodes them (a corrupt one made H5O__msg_iterate_real copy past its
/// buffer).
void check_attribute_messages(const File& file, const std::string& object, const RawFile& raw) {
    walk_header(file, object, raw, [&](unsigned type, const unsigned char* message, std::size_t size) {
        if (type != 0x0C) return false;
        if (size < 8) file.fail(object, "an attribute message of " + std::to_string(size) + " bytes (corrupt file)");
        const unsigned version = message[0];
        const std::size_t name_size = decode_le(message + 2, 2), type_size = decode_le(message + 4, 2),
                          space_size = decode_le(message + 6, 2);
        auto pad = [&](std::size_t n) { return version == 1 ? (n + 7) & ~std::size_t{7} : n; };
        const std::size_t name_at = version == 3 ? 9 : 8;
        if (version < 1 || version > 3 || name_size == 0 || name_at + pad(name_size) + pad(type_size) + pad(space_size) > size)
            file.fail(object, "an attribute message whose parts (" + std::to_string(name_size) + " + " +
                                  std::to_string(type_size) + " + " + std::to_string(space_size) +
                                  " bytes) do not fit its " + std::to_string(size) + " bytes (corrupt file)");
        return false;
    });
}

/// An old-style group (symbol table, what h5py writes by default) keeps its link names
/// in a local heap; libhdf5 1.10 reads a heap whose data segment lies outside the file
/// through a null buffer (a crash in H5HL_protect). Checked before any lookup in it.
void check_local_heap(const File& file, const std::string& object, const RawFile& raw) {
    walk_header(file, object, raw, [&](unsigned type, const unsigned char* message, std::size_t size) {
        if (type != 0x11 || size < 2 * raw.sizeof_addr) return false;  // symbol table message
        const std::uint64_t heap = decode_le(message + raw.sizeof_addr, raw.sizeof_addr);
        const std::string where = "local heap (link names) at address " + std::to_string(heap);
        unsigned char prefix[8 + 2 * 8 + 8] = {};
        const std::size_t prefix_size = 8 + 2 * raw.sizeof_size + raw.sizeof_addr;
        if (!raw.read(heap, prefix_size, prefix)) file.fail(object, where + " lies past the end of the file (corrupt file)");
        if (std::memcmp(prefix, "HEAP", 4) != 0 || prefix[4] != 0) file.fail(object, where + " has no valid signature (corrupt file)");
        const std::uint64_t data_size = decode_le(prefix + 8, raw.sizeof_size);
        const std::uint64_t free_list = decode_le(prefix + 8 + raw.sizeof_size, raw.sizeof_size);
        const std::uint64_t data = decode_le(prefix + 8 + 2 * raw.sizeof_size, raw.sizeof_addr);
        const std::uint64_t undefined = raw.sizeof_size == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * raw.sizeof_size)) - 1;
        if (data_size == 0 || data_size > raw.size || data > raw.size - data_size || raw.base > raw.size - data - data_size ||
            (free_list != undefined && free_list >= data_size))
            file.fail(object, where + " declares a data segment of " + std::to_string(data_size) + " bytes at " +
                                  std::to_string(data) + ", outside the file's " + std::to_string(raw.size) + " bytes (corrupt file)");
        return true;
    });
}

void check_attribute_heaps(const File& file, const std::string& object, const std::string& name, std::int64_t count) {
    if (count <= 0) return;
    RawFile raw;
    if (!open_raw(file, raw)) return;
    const auto data = attribute_raw_data(file, object, name, raw);
    if (!data) return;
    const std::size_t width = 4 + raw.sizeof_addr + 4;
    if (data->size() / width < static_cast<std::uint64_t>(count))
        file.fail(object, "attribute '" + name + "' holds fewer bytes than its " + std::to_string(count) +
                              " strings (corrupt file)");
    check_descriptors(file, object, raw, *data, count, 0, "attribute '" + name + "' string");
}

/// An intact file that H5Fopen refuses because another process writes it: HDF5 holds
/// an flock() on files open for writing, and a version 2/3 superblock carries a
/// "file open for writing" flag. Throws ReadError saying so; returns otherwise.
void explain_open_failure(const std::string& path) {
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return;
    const bool locked = ::flock(descriptor, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!locked) ::flock(descriptor, LOCK_UN);
    unsigned char superblock[12] = {};
    const bool flagged = ::pread(descriptor, superblock, sizeof superblock, 0) == static_cast<ssize_t>(sizeof superblock) &&
                         superblock[8] >= 2 && (superblock[11] & 0x05) != 0;
    ::close(descriptor);
    if (locked)
        throw ReadError(path, "is locked: another program has it open for writing (HDF5 file lock); wait until it has "
                              "finished writing, or close the file there, and open it again");
    if (flagged)
        throw ReadError(path, "is marked as open for writing by another program (HDF5 superblock flag); if no program "
                              "writes it any more, 'h5clear -s " + path + "' clears the mark");
}

}  // namespace

void File::set_read_once(bool on) noexcept {
    if (m_read_once && !on) {
        if (const int handle = descriptor(); handle >= 0) ::posix_fadvise(handle, 0, 0, POSIX_FADV_DONTNEED);
    }
    m_read_once = on;
    m_last_drop = std::chrono::steady_clock::now();
}

void File::drop_read_pages() const noexcept {
    if (!m_read_once) return;
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - m_last_drop).count() < kReadOnceDropSeconds) return;
    if (const int handle = descriptor(); handle >= 0) ::posix_fadvise(handle, 0, 0, POSIX_FADV_DONTNEED);
    m_last_drop = now;
}

int File::descriptor() const noexcept {
    const Handle access(H5Fget_access_plist(m_file.get()), H5Pclose);
    if (!access || H5Pget_driver(access.get()) != H5FD_SEC2) return -1;
    void* handle = nullptr;
    if (H5Fget_vfd_handle(m_file.get(), access.get(), &handle) < 0 || handle == nullptr) return -1;
    return *static_cast<int*>(handle);
}

File File::open_read(const std::string& path) {
    silence_errors();
    if (const FileImage* image = image_for(path)) {
        Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
        if (!access || H5Pset_fapl_core(access.get(), 1 << 16, 0) < 0 ||
            H5Pset_file_image(access.get(), const_cast<unsigned char*>(image->data), image->size) < 0)
            throw ReadError(path, "cannot set up the in-memory file image");
        hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get());
        if (id < 0) throw FormatError(path, "", "HDF5 file cannot be opened (truncated or corrupt)");
        return File(path, Handle(id, H5Fclose));
    }
    detail::require_regular_file(path);  // before any open: a FIFO would block
    if (FILE* probe = std::fopen(path.c_str(), "rb")) {
        std::fclose(probe);
    } else {
        throw ReadError(path, std::strerror(errno));
    }
    const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
    if (is_hdf5 <= 0) throw FormatError(path, "", "not an HDF5 file (no HDF5 signature)");
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) {
        explain_open_failure(path);
        throw FormatError(path, "", "HDF5 file cannot be opened (truncated or corrupt)");
    }
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
    // One link at a time from the parent group's handle: linear in the depth (a path
    // lookup from the root per prefix is quadratic, and deep uns trees are cubic).
    Handle current(H5Oopen(m_file.get(), "/", H5P_DEFAULT), H5Oclose);
    if (!current) fail("/", "root group cannot be opened");
    std::size_t position = object.front() == '/' ? 1 : 0;
    while (position < object.size()) {
        std::size_t next = object.find('/', position);
        if (next == std::string::npos) next = object.size();
        const std::string name = object.substr(position, next - position);
        const std::string parent = position > 1 ? object.substr(0, position - 1) : std::string("/");
        position = next + 1;
        if (name.empty()) continue;
        // A link below a dataset does not exist.
        if (H5Iget_type(current.get()) != H5I_GROUP) return false;
        check_group(parent);
        if (H5Lexists(current.get(), name.c_str(), H5P_DEFAULT) <= 0) return false;
        H5L_info_t link{};
        if (H5Lget_info(current.get(), name.c_str(), &link, H5P_DEFAULT) < 0)
            fail(object.substr(0, next), "link cannot be read");
        if (link.type == H5L_TYPE_HARD) check_header_size(*this, object.substr(0, next), link.u.address);
        if (H5Oexists_by_name(current.get(), name.c_str(), H5P_DEFAULT) <= 0) {
            // A soft or external link whose target is absent, or a cycle of links: an
            // error, never "absent" (X, obs or var would silently read as missing).
            std::string target;
            if ((link.type == H5L_TYPE_SOFT || link.type == H5L_TYPE_EXTERNAL) && link.u.val_size > 0 &&
                link.u.val_size < (1u << 16)) {
                std::vector<char> value(link.u.val_size + 1, '\0');
                if (H5Lget_val(current.get(), name.c_str(), value.data(), value.size(), H5P_DEFAULT) >= 0) {
                    if (link.type == H5L_TYPE_SOFT) {
                        target = std::string(value.data());
                    } else {
                        const char* file_name = nullptr;
                        const char* object_name = nullptr;
                        unsigned flags = 0;
                        if (H5Lunpack_elink_val(value.data(), value.size(), &flags, &file_name, &object_name) >= 0 &&
                            file_name && object_name)
                            target = std::string(object_name) + " in file " + file_name;
                    }
                }
            }
            const char* kind = link.type == H5L_TYPE_SOFT       ? "soft link"
                               : link.type == H5L_TYPE_EXTERNAL ? "external link"
                                                                : "link";
            fail(object.substr(0, next), std::string("is a ") + kind + (target.empty() ? "" : " to '" + target + "'") +
                                             " whose target does not exist (dangling link or a cycle of links)");
        }
        Handle child(H5Oopen(current.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
        if (!child) fail(object.substr(0, next), "cannot be opened");
        current = std::move(child);
    }
    return true;
}

void File::check_group(const std::string& group) const {
    if (m_writable || m_checked_groups.count(group)) return;  // a file being written is not checked
    RawFile raw;
    if (open_raw(*this, raw)) check_local_heap(*this, group, raw);
    m_checked_groups.insert(group);
}

std::string File::object_address(const std::string& object) const {
    if (!exists(object)) fail(object, "missing");
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t info;
    if (H5Oget_info_by_name3(m_file.get(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        fail(object, "object header cannot be read");
    return std::string(reinterpret_cast<const char*>(&info.token), sizeof info.token);
#else
    H5O_info_t info;
    if (H5Oget_info_by_name2(m_file.get(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        fail(object, "object header cannot be read");
    return std::string(reinterpret_cast<const char*>(&info.addr), sizeof info.addr);
#endif
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
    check_group(group);
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
    Handle dataset(id, H5Dclose);
    // Data kept in other files (virtual datasets, external raw storage) reads as the
    // fill value when those files are missing: refused, whatever they hold.
    Handle create(H5Dget_create_plist(id), H5Pclose);
    if (!create) fail(object, "creation properties cannot be read");
    if (H5Pget_layout(create.get()) == H5D_VIRTUAL)
        fail(object, "is a virtual dataset (its data lives in other files); not supported: make the file "
                     "self-contained first (h5repack -l CONTI)");
    if (H5Pget_external_count(create.get()) > 0)
        fail(object, "keeps its data in external raw files; not supported: make the file self-contained first "
                     "(h5repack -l CONTI)");
    // Stored bytes against the elements they hold: libhdf5 1.10 copies from a null or
    // short buffer for compact storage smaller than its elements (a crash) and reads
    // contiguous storage past the end of the file.
    const H5D_layout_t layout = H5Pget_layout(create.get());
    if (layout == H5D_COMPACT || layout == H5D_CONTIGUOUS) {
        Handle type(H5Dget_type(id), H5Tclose);
        Handle space(H5Dget_space(id), H5Sclose);
        const hssize_t points = space ? H5Sget_simple_extent_npoints(space.get()) : -1;
        const std::size_t element = type ? H5Tget_size(type.get()) : 0;
        if (points < 0 || element == 0) fail(object, "type or dataspace cannot be read");
        const std::uint64_t needed = static_cast<std::uint64_t>(points) * element;
        const std::uint64_t stored = H5Dget_storage_size(id);
        if (layout == H5D_COMPACT && stored != needed)
            fail(object, "compact storage holds " + std::to_string(stored) + " bytes for " + std::to_string(points) +
                             " elements of " + std::to_string(element) + " bytes (corrupt file)");
        const haddr_t address = layout == H5D_CONTIGUOUS ? H5Dget_offset(id) : HADDR_UNDEF;
        if (address != HADDR_UNDEF) {
            hsize_t file_size = 0;
            if (stored < needed)
                fail(object, "stores " + std::to_string(stored) + " bytes for " + std::to_string(points) + " elements of " +
                                 std::to_string(element) + " bytes (corrupt file)");
            if (H5Fget_filesize(m_file.get(), &file_size) >= 0 && (address > file_size || stored > file_size - address))
                fail(object, "data lies past the end of the file (" + std::to_string(stored) + " bytes at " +
                                 std::to_string(address) + ", file " + std::to_string(file_size) +
                                 " bytes): truncated or corrupt file");
        }
    }
    // Chunks larger than a fixed dimension: libhdf5 refuses to create such a dataset but
    // 1.10 reads one (a fuzzed loom matrix) past its buffers.
    if (layout == H5D_CHUNKED) {
        Handle space(H5Dget_space(id), H5Sclose);
        const int rank = space ? H5Sget_simple_extent_ndims(space.get()) : -1;
        if (rank < 0 || rank > 32) fail(object, "dataspace cannot be read");
        std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maximum(static_cast<std::size_t>(rank)),
            chunk(static_cast<std::size_t>(rank));
        if (rank > 0 && (H5Sget_simple_extent_dims(space.get(), dims.data(), maximum.data()) < 0 ||
                         H5Pget_chunk(create.get(), rank, chunk.data()) != rank))
            fail(object, "chunk layout does not match its " + std::to_string(rank) + "-dimensional dataspace (corrupt file)");
        for (std::size_t axis = 0; axis < chunk.size(); ++axis)
            if (chunk[axis] == 0 || (maximum[axis] != H5S_UNLIMITED && chunk[axis] > maximum[axis]))
                fail(object, "chunk dimension " + std::to_string(axis) + " is " + std::to_string(chunk[axis]) +
                                 " for a fixed extent of " + std::to_string(maximum[axis]) + " (corrupt file)");
    }
    return dataset;
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
    if (count > 0)
        detail::check_declared_size(m_path, object, std::to_string(count) + " elements", static_cast<std::uint64_t>(count),
                                    sizeof(T));
    std::vector<T> values;
    // Large reads: the pages first touched by every thread (core/memory/first_touch.hpp).
    resize_touched_in_parallel(values, static_cast<std::size_t>(std::max<std::int64_t>(0, count)));
    read_to(object, offset, count, values.data());
    return values;
}

template <typename T>
void File::read_to(const std::string& object, std::int64_t offset, std::int64_t count, T* out) const {
    const Info info = dataset_info(object);
    if (info.type_class != TypeClass::Integer && info.type_class != TypeClass::Float &&
        info.type_class != TypeClass::Enum)
        fail(object, "expected a numeric dataset");
    T* values = out;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
        // Large reads of compressed 1-D datasets: chunks decoded in parallel.
        // Small reads (indptr slices, names) skip the extra dataset open entirely.
        if (info.dims.size() == 1 && count >= k_min_parallel_elements && offset >= 0 && offset <= info.dims[0] &&
            count <= info.dims[0] - offset) {
            Handle dataset = open_dataset(object);
            if (read_chunked_parallel(*this, dataset.get(), object, values, offset, count)) {
                drop_read_pages();
                return;
            }
        }
    }
    read_into(object, native_type<T>(), values, offset, count);
    drop_read_pages();
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
    if (row_end > row_begin && cols > 0 &&
        static_cast<std::uint64_t>(row_end - row_begin) > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(cols))
        fail(object, "rows x columns overflow");
    detail::check_declared_size(m_path, object,
                                std::to_string(row_end - row_begin) + " rows x " + std::to_string(cols) + " columns",
                                static_cast<std::uint64_t>(row_end - row_begin) * static_cast<std::uint64_t>(cols), sizeof(T));
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
    if (H5Tis_variable_str(type.get()) > 0) {
        detail::check_declared_size(m_path, object, std::to_string(count) + " strings", static_cast<std::uint64_t>(count),
                            sizeof(char*) + sizeof(std::string));
        check_string_heaps(*this, object, dataset.get(), offset, count, total);
    } else {
        detail::check_declared_size(m_path, object, std::to_string(count) + " strings", static_cast<std::uint64_t>(count),
                            H5Tget_size(type.get()) + sizeof(std::string));
    }
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
    // The object's attribute messages, checked once (the key cannot be a group path).
    if (!m_writable && m_checked_groups.insert(std::string("\n attributes of ") + object).second) {
        RawFile raw;
        if (open_raw(*this, raw)) check_attribute_messages(*this, object, raw);
    }
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
    if (H5Tis_variable_str(type.get()) > 0) check_attribute_heaps(*this, object, name, count);
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
    template void File::read_to<T>(const std::string&, std::int64_t, std::int64_t, T*) const;                \
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
