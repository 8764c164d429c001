#include "core/io/detail/chunk_reader.hpp"

#include <libdeflate.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/io/detail/hdf5.hpp"

namespace fathom::io::h5 {

namespace {

/// Raw chunks fetched per batch: bounds the compressed bytes held at once.
constexpr std::size_t k_batch_chunks = 256;

/// How the stored elements are laid out.
struct StoredType {
    bool is_float = false;
    bool is_signed = true;
    std::size_t size = 0;
};

/// Calls copy(S{}) with S the C++ type of the stored elements.
template <typename Copy>
void with_stored_type(const StoredType& stored, Copy&& copy) {
    if (stored.is_float) {
        if (stored.size == 4) return copy(float{});
        return copy(double{});
    }
    switch (stored.size) {
        case 1: return stored.is_signed ? copy(std::int8_t{}) : copy(std::uint8_t{});
        case 2: return stored.is_signed ? copy(std::int16_t{}) : copy(std::uint16_t{});
        case 4: return stored.is_signed ? copy(std::int32_t{}) : copy(std::uint32_t{});
        default: return stored.is_signed ? copy(std::int64_t{}) : copy(std::uint64_t{});
    }
}

/// Element `index` of a little-endian buffer of `stored` elements, as T (what HDF5's
/// conversion yields for in-range values: the same as a C++ conversion).
template <typename T>
void convert(const unsigned char* bytes, const StoredType& stored, std::size_t first, std::size_t count, T* out) {
    auto copy = [&](auto tag) {
        using S = decltype(tag);
        for (std::size_t index = 0; index < count; ++index) {
            S value;
            std::memcpy(&value, bytes + (first + index) * sizeof(S), sizeof(S));
            out[index] = static_cast<T>(value);
        }
    };
    with_stored_type(stored, copy);
}

/// Elements [first, first + count) of a shuffled buffer of `num_elements` whole elements
/// (H5Z_FILTER_SHUFFLE: byte j of element i is stored at j * num_elements + i), as T:
/// the inverse shuffle and the conversion in one pass, each element assembled in a
/// register from its byte planes (the planes are read in order, `out` written once).
template <typename T>
void unshuffle_convert(const unsigned char* planes, const StoredType& stored, std::size_t num_elements, std::size_t first,
                       std::size_t count, T* out) {
    auto copy = [&](auto tag) {
        using S = decltype(tag);
        constexpr std::size_t size = sizeof(S);
        using Bits = std::conditional_t<size == 8, std::uint64_t, std::conditional_t<size == 4, std::uint32_t,
                                                                  std::conditional_t<size == 2, std::uint16_t, std::uint8_t>>>;
        const unsigned char* base = planes + first;
        for (std::size_t index = 0; index < count; ++index) {
            Bits bits = 0;
            for (std::size_t byte = 0; byte < size; ++byte)
                bits |= static_cast<Bits>(static_cast<Bits>(base[byte * num_elements + index]) << (8 * byte));
            S value;
            std::memcpy(&value, &bits, size);
            out[index] = static_cast<T>(value);
        }
    };
    with_stored_type(stored, copy);
}

/// H5Z_FILTER_SHUFFLE's inverse: byte j of element i is stored at j * n + i.
void unshuffle(const unsigned char* in, unsigned char* out, std::size_t num_elements, std::size_t element_size) {
    for (std::size_t byte = 0; byte < element_size; ++byte) {
        const unsigned char* plane = in + byte * num_elements;
        for (std::size_t element = 0; element < num_elements; ++element) out[element * element_size + byte] = plane[element];
    }
}

struct Decompressor {
    std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> handle{
        libdeflate_alloc_decompressor(), libdeflate_free_decompressor};
    std::vector<unsigned char> first, second;  ///< ping-pong buffers of one chunk
};

}  // namespace

template <typename T>
bool read_chunked_parallel(const File& file, hid_t dataset, const std::string& object, T* out, std::int64_t offset,
                           std::int64_t count) {
    if (count < k_min_parallel_elements) return false;
    Handle create(H5Dget_create_plist(dataset), H5Pclose);
    if (!create || H5Pget_layout(create.get()) != H5D_CHUNKED) return false;
    hsize_t chunk_dims[2] = {0, 0};
    if (H5Pget_chunk(create.get(), 2, chunk_dims) != 1 || chunk_dims[0] == 0) return false;

    // Element type: little-endian integer or IEEE float.
    Handle type(H5Dget_type(dataset), H5Tclose);
    if (!type) return false;
    StoredType stored;
    const H5T_class_t type_class = H5Tget_class(type.get());
    if (type_class == H5T_FLOAT) {
        stored.is_float = true;
        if (H5Tequal(type.get(), H5T_IEEE_F32LE) > 0) stored.size = 4;
        else if (H5Tequal(type.get(), H5T_IEEE_F64LE) > 0) stored.size = 8;
        else return false;
    } else if (type_class == H5T_INTEGER) {
        if (H5Tget_order(type.get()) != H5T_ORDER_LE) return false;
        stored.size = H5Tget_size(type.get());
        stored.is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
        if (stored.size != 1 && stored.size != 2 && stored.size != 4 && stored.size != 8) return false;
    } else {
        return false;
    }
    const std::uint64_t chunk_elements = chunk_dims[0];
    const std::uint64_t chunk_bytes = chunk_elements * stored.size;

    // Filters: deflate and shuffle only.
    std::vector<H5Z_filter_t> filters;  // in the order HDF5 applies them when writing
    const int num_filters = H5Pget_nfilters(create.get());
    if (num_filters < 0) return false;
    for (int index = 0; index < num_filters; ++index) {
        unsigned flags = 0, config = 0;
        std::size_t num_values = 8;
        unsigned values[8];
        char name[64];
        const H5Z_filter_t filter =
            H5Pget_filter2(create.get(), static_cast<unsigned>(index), &flags, &num_values, values, sizeof name, name, &config);
        if (filter != H5Z_FILTER_DEFLATE && filter != H5Z_FILTER_SHUFFLE) return false;
        filters.push_back(filter);
    }

    const std::uint64_t first_chunk = static_cast<std::uint64_t>(offset) / chunk_elements;
    const std::uint64_t last_chunk = (static_cast<std::uint64_t>(offset + count) - 1) / chunk_elements;
    // Every chunk must be allocated (unallocated chunks hold the fill value: H5Dread).
    std::vector<hsize_t> sizes(static_cast<std::size_t>(last_chunk - first_chunk + 1));
    for (std::uint64_t chunk = first_chunk; chunk <= last_chunk; ++chunk) {
        hsize_t coordinate = chunk * chunk_elements, bytes = 0;
        if (H5Dget_chunk_storage_size(dataset, &coordinate, &bytes) < 0 || bytes == 0) return false;
        sizes[static_cast<std::size_t>(chunk - first_chunk)] = bytes;
    }

    tbb::enumerable_thread_specific<Decompressor> decompressors;
    std::vector<std::vector<unsigned char>> raw(k_batch_chunks);
    std::vector<std::uint32_t> masks(k_batch_chunks);
    for (std::uint64_t batch = first_chunk; batch <= last_chunk; batch += k_batch_chunks) {
        const std::uint64_t batch_end = std::min<std::uint64_t>(last_chunk + 1, batch + k_batch_chunks);
        // Fetch: plain reads of the stored bytes, on this thread.
        for (std::uint64_t chunk = batch; chunk < batch_end; ++chunk) {
            auto& buffer = raw[static_cast<std::size_t>(chunk - batch)];
            buffer.resize(static_cast<std::size_t>(sizes[static_cast<std::size_t>(chunk - first_chunk)]));
            hsize_t coordinate = chunk * chunk_elements;
            if (H5Dread_chunk(dataset, H5P_DEFAULT, &coordinate, &masks[static_cast<std::size_t>(chunk - batch)],
                              buffer.data()) < 0)
                file.fail(object, "chunk " + std::to_string(chunk) + " cannot be read (truncated file?)");
        }
        file.drop_read_pages();
        // Decode in parallel, each chunk into its slice of `out`.
        tbb::parallel_for(batch, batch_end, [&](std::uint64_t chunk) {
            Decompressor& state = decompressors.local();
            const auto slot = static_cast<std::size_t>(chunk - batch);
            const std::vector<unsigned char>& input = raw[slot];
            const std::uint32_t mask = masks[slot];
            const unsigned char* current = input.data();
            std::size_t current_size = input.size();
            state.first.resize(static_cast<std::size_t>(chunk_bytes));
            state.second.resize(static_cast<std::size_t>(chunk_bytes));
            bool use_first = true;
            // Shuffle as the pipeline's first filter (h5py's and CellRanger's order) is
            // undone last: that step and the conversion are one pass into `out`.
            bool shuffled = false;
            // Reading undoes the pipeline from its last filter to its first.
            for (int index = static_cast<int>(filters.size()) - 1; index >= 0; --index) {
                if (mask & (1u << index)) continue;  // this filter was skipped for this chunk
                if (filters[static_cast<std::size_t>(index)] == H5Z_FILTER_SHUFFLE) {
                    // The target holds one chunk: a stored chunk larger than that (its
                    // size disagrees with its filters) is corrupt, never copied.
                    if (current_size > chunk_bytes)
                        file.fail(object, "chunk " + std::to_string(chunk) + " holds " + std::to_string(current_size) +
                                              " bytes before unshuffling; a chunk is " + std::to_string(chunk_bytes) +
                                              " bytes");
                    if (index == 0 && stored.size > 1) {
                        shuffled = true;
                        break;
                    }
                }
                unsigned char* target = use_first ? state.first.data() : state.second.data();
                if (filters[static_cast<std::size_t>(index)] == H5Z_FILTER_DEFLATE) {
                    std::size_t produced = 0;
                    const auto status = libdeflate_zlib_decompress(state.handle.get(), current, current_size, target,
                                                                    static_cast<std::size_t>(chunk_bytes), &produced);
                    if (status != LIBDEFLATE_SUCCESS && status != LIBDEFLATE_SHORT_OUTPUT)
                        file.fail(object, "chunk " + std::to_string(chunk) + " holds a corrupt deflate stream");
                    current_size = produced;
                } else {
                    // Bytes past the last whole element stay in place (H5Z_FILTER_SHUFFLE).
                    const std::size_t whole = current_size / stored.size;
                    unshuffle(current, target, whole, stored.size);
                    std::memcpy(target + whole * stored.size, current + whole * stored.size, current_size - whole * stored.size);
                }
                current = target;
                use_first = !use_first;
            }
            if (current_size > chunk_bytes || (current_size < chunk_bytes && chunk != last_chunk))
                file.fail(object, "chunk " + std::to_string(chunk) + " decodes to " + std::to_string(current_size) +
                                      " bytes; expected " + std::to_string(chunk_bytes));
            const std::uint64_t chunk_begin = chunk * chunk_elements;
            const std::uint64_t from = std::max<std::uint64_t>(chunk_begin, static_cast<std::uint64_t>(offset));
            const std::uint64_t to =
                std::min<std::uint64_t>(chunk_begin + chunk_elements, static_cast<std::uint64_t>(offset + count));
            if ((to - chunk_begin) * stored.size > current_size)
                file.fail(object, "chunk " + std::to_string(chunk) + " decodes to " + std::to_string(current_size) +
                                      " bytes, too few for its elements");
            T* const target = out + (from - static_cast<std::uint64_t>(offset));
            if (shuffled)
                unshuffle_convert(current, stored, current_size / stored.size, static_cast<std::size_t>(from - chunk_begin),
                                  static_cast<std::size_t>(to - from), target);
            else
                convert(current, stored, static_cast<std::size_t>(from - chunk_begin), static_cast<std::size_t>(to - from), target);
        });
    }
    return true;
}

template bool read_chunked_parallel<float>(const File&, hid_t, const std::string&, float*, std::int64_t, std::int64_t);
template bool read_chunked_parallel<double>(const File&, hid_t, const std::string&, double*, std::int64_t, std::int64_t);
template bool read_chunked_parallel<std::int32_t>(const File&, hid_t, const std::string&, std::int32_t*, std::int64_t,
                                                  std::int64_t);
template bool read_chunked_parallel<std::int64_t>(const File&, hid_t, const std::string&, std::int64_t*, std::int64_t,
                                                  std::int64_t);

}  // namespace fathom::io::h5
