#include "core/io/detail/hdf5_write.hpp"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace fathom::io::h5 {

namespace {

Handle fixed_string_type(std::size_t width) {
    // numpy 'S<width>': fixed-length, NULL-padded, ASCII (h5py's mapping).
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), width);
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
    H5Tset_cset(type.get(), H5T_CSET_ASCII);
    return type;
}

Handle bool_type() {
    // h5py stores numpy bools as an int8 enum {FALSE: 0, TRUE: 1}.
    Handle type(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
    std::int8_t false_value = 0, true_value = 1;
    H5Tenum_insert(type.get(), "FALSE", &false_value);
    H5Tenum_insert(type.get(), "TRUE", &true_value);
    return type;
}

// Creates a dataset of `type` and `dims`, chunked + deflated when gzip_level > 0.
void write_whole(const File& file, const std::string& object, hid_t type, const std::vector<hsize_t>& dims,
                 const void* values, int gzip_level) {
    Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                              : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                 H5Sclose);
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    hsize_t total = 1;
    for (auto d : dims) total *= d;
    if (gzip_level > 0 && !dims.empty() && total > 0) {
        std::vector<hsize_t> chunk = dims;
        chunk[0] = std::min<hsize_t>(dims[0], 1 << 16);
        H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data());
        H5Pset_deflate(properties.get(), static_cast<unsigned>(gzip_level));
    }
    Handle dataset(H5Dcreate2(file.id(), object.c_str(), type, space.get(), H5P_DEFAULT, properties.get(),
                              H5P_DEFAULT),
                   H5Dclose);
    if (!dataset) throw WriteError(file.path(), "cannot create dataset " + object);
    if (total > 0 && H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
        throw WriteError(file.path(), "cannot write dataset " + object);
}

void write_attribute_raw(const File& file, const std::string& object, const std::string& name, hid_t type,
                         hid_t space, const void* values) {
    Handle attribute(H5Acreate_by_name(file.id(), object.c_str(), name.c_str(), type, space, H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    if (!attribute || H5Awrite(attribute.get(), type, values) < 0)
        throw WriteError(file.path(), "cannot write attribute " + name + " on " + object);
}

std::vector<char> pack_fixed(const std::vector<std::string>& values, std::size_t width) {
    std::vector<char> packed(values.size() * width, '\0');
    for (std::size_t index = 0; index < values.size(); ++index)
        std::memcpy(packed.data() + index * width, values[index].data(), values[index].size());
    return packed;
}

std::size_t longest(const std::vector<std::string>& values) {
    std::size_t width = 1;
    for (const auto& value : values) width = std::max(width, value.size());
    return width;
}

}  // namespace

// ---- AppendableDataset ----

AppendableDataset::AppendableDataset(const File& file, std::string object, Handle type, std::size_t element_size,
                                     const AppendOptions& options)
    : m_file_path(file.path()), m_object(std::move(object)), m_type(std::move(type)), m_element_size(element_size),
      m_gzip_level(options.gzip_level), m_shuffle(options.shuffle && options.gzip_level > 0) {
    if (options.chunk_elements < 1) fail("chunk_elements must be >= 1");
    if (options.write_behind_bytes < 0) fail("write_behind_bytes must be >= 0");
    m_write_behind = options.write_behind_bytes;
    if (m_write_behind > 0) m_descriptor = file.descriptor();
    if (options.gzip_level < 0 || options.gzip_level > 9) fail("gzip level must be in [0, 9]");
    m_chunk_elements = options.chunk_elements;
    m_batch_elements = m_chunk_elements * std::max<std::int64_t>(1, options.chunks_per_batch);
    hsize_t initial = 0, maximum = H5S_UNLIMITED, chunk = static_cast<hsize_t>(m_chunk_elements);
    Handle space(H5Screate_simple(1, &initial, &maximum), H5Sclose);
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!space || !properties || H5Pset_chunk(properties.get(), 1, &chunk) < 0) fail("cannot set up chunking");
    if (m_shuffle && H5Pset_shuffle(properties.get()) < 0) fail("cannot enable shuffle");
    if (m_gzip_level > 0 && H5Pset_deflate(properties.get(), static_cast<unsigned>(m_gzip_level)) < 0)
        fail("cannot enable deflate");
    hid_t id = H5Dcreate2(file.id(), m_object.c_str(), m_type.get(), space.get(), H5P_DEFAULT, properties.get(),
                          H5P_DEFAULT);
    if (id < 0) fail("cannot create dataset");
    m_dataset = Handle(id, H5Dclose);
    m_buffer.resize(static_cast<std::size_t>(m_batch_elements) * m_element_size);
}

template <typename T>
AppendableDataset AppendableDataset::create(const File& file, const std::string& object,
                                            const AppendOptions& options) {
    return AppendableDataset(file, object, Handle(H5Tcopy(native_type<T>()), H5Tclose), sizeof(T), options);
}

AppendableDataset AppendableDataset::create_fixed_strings(const File& file, const std::string& object,
                                                          std::size_t width, const AppendOptions& options) {
    if (width < 1) throw WriteError(file.path(), object + ": fixed string width must be >= 1");
    AppendableDataset dataset(file, object, fixed_string_type(width), width, options);
    dataset.m_is_string = true;
    dataset.m_string_width = width;
    return dataset;
}

void AppendableDataset::fail(const std::string& problem) const {
    throw WriteError(m_file_path, m_object + ": " + problem);
}

template <typename T>
void AppendableDataset::append(const T* values, std::int64_t count) {
    if (m_is_string || sizeof(T) != m_element_size) fail("appended values do not match the dataset's type");
    append_bytes(values, count);
}

void AppendableDataset::append_strings(const std::vector<std::string>& values) {
    if (!m_is_string) fail("strings appended to a numeric dataset");
    for (const auto& value : values)
        if (value.size() > m_string_width)
            fail("string '" + value + "' is longer than the dataset's " + std::to_string(m_string_width) +
                 " characters");
    const std::vector<char> packed = pack_fixed(values, m_string_width);
    append_bytes(packed.data(), static_cast<std::int64_t>(values.size()));
}

void AppendableDataset::append_bytes(const void* values, std::int64_t count) {
    if (!m_dataset) fail("appended to after finish()");
    const auto* bytes = static_cast<const unsigned char*>(values);
    while (count > 0) {
        if (m_buffered % m_chunk_elements != 0 || count < m_chunk_elements) {
            // Up to the next chunk boundary through the buffer.
            const std::int64_t take = std::min(count, m_chunk_elements - m_buffered % m_chunk_elements);
            std::memcpy(m_buffer.data() + static_cast<std::size_t>(m_buffered) * m_element_size, bytes,
                        static_cast<std::size_t>(take) * m_element_size);
            m_buffered += take;
            bytes += static_cast<std::size_t>(take) * m_element_size;
            count -= take;
            if (m_buffered == m_batch_elements) write_buffer(false);
            continue;
        }
        // Chunk-aligned with at least one whole chunk to go: the buffered chunks, then
        // the caller's whole chunks straight from its memory (no copy).
        write_buffer(false);
        const std::int64_t direct = count / m_chunk_elements * m_chunk_elements;
        write_chunks(bytes, direct);
        bytes += static_cast<std::size_t>(direct) * m_element_size;
        count -= direct;
    }
}

void AppendableDataset::write_behind() {
#ifdef __linux__
    if (m_descriptor < 0) return;
    struct stat info {};
    if (::fstat(m_descriptor, &info) != 0 || !S_ISREG(info.st_mode)) return;
    const std::int64_t size = info.st_size;
    if (size - m_checked_size < m_write_behind) return;
    m_checked_size = size;
    // A failed write-back is a failed write; other errors (a file system without
    // write-back) leave the pages to the kernel.
    const auto check = [&](int status) {
        if (status != 0 && (errno == EIO || errno == ENOSPC))
            fail(std::string("writing to the disk failed (") + (errno == EIO ? "I/O error" : "disk full") + ")");
    };
    check(::sync_file_range(m_descriptor, 0, size, SYNC_FILE_RANGE_WRITE));
    const std::int64_t settled = size - m_write_behind;
    if (settled <= 0) return;
    check(::sync_file_range(m_descriptor, 0, settled,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
    ::posix_fadvise(m_descriptor, 0, settled, POSIX_FADV_DONTNEED);
#endif
}

void AppendableDataset::write_buffer(bool final_chunk) {
    (void)final_chunk;
    if (m_buffered == 0) return;
    write_chunks(m_buffer.data(), m_buffered);
    m_buffered = 0;
}

void AppendableDataset::write_chunks(const unsigned char* data, std::int64_t count) {
    // Every chunk is stored whole with H5Dwrite_chunk (no trip through HDF5's chunk cache
    // and filter pipeline); a partial last chunk (count not a multiple of the chunk, at
    // finish()) is padded with zeros. With gzip the chunks of a batch are compressed in
    // parallel first. The deflate output is a zlib stream, what HDF5's
    // H5Z_FILTER_DEFLATE produces and reads, and the byte shuffle is
    // H5Z_FILTER_SHUFFLE's (byte j of element i goes to j * n + i over the whole chunk).
    // A chunk that does not shrink is stored raw with every filter marked as skipped in
    // its filter mask (bit k = filter k of the pipeline).
    if (count == 0) return;
    const std::int64_t new_size = m_written + count;
    hsize_t extent = static_cast<hsize_t>(new_size);
    if (H5Dset_extent(m_dataset.get(), &extent) < 0) fail("cannot extend to " + std::to_string(new_size) + " elements");
    const std::int64_t num_chunks = (count + m_chunk_elements - 1) / m_chunk_elements;
    const std::size_t chunk_bytes = static_cast<std::size_t>(m_chunk_elements) * m_element_size;
    const std::size_t used_bytes = static_cast<std::size_t>(count) * m_element_size;
    // The chunk at `index` of `data`, padded when it is the partial last one.
    std::vector<unsigned char> padded;
    const auto chunk_data = [&](std::int64_t index) -> const unsigned char* {
        const std::size_t at = static_cast<std::size_t>(index) * chunk_bytes;
        if (at + chunk_bytes <= used_bytes) return data + at;
        if (padded.empty()) {
            padded.assign(chunk_bytes, 0);
            std::memcpy(padded.data(), data + at, used_bytes - at);
        }
        return padded.data();
    };
    if (num_chunks > 0) chunk_data(num_chunks - 1);  // pad before any parallel use
    if (m_gzip_level == 0) {
        for (std::int64_t chunk = 0; chunk < num_chunks; ++chunk) {
            hsize_t offset = static_cast<hsize_t>(m_written + chunk * m_chunk_elements);
            if (H5Dwrite_chunk(m_dataset.get(), H5P_DEFAULT, 0, &offset, chunk_bytes, chunk_data(chunk)) < 0)
                fail("chunk write failed (disk full?)");
            write_behind();
        }
        m_written = new_size;
        return;
    }
    const std::size_t element_size = m_element_size;
    const bool shuffle = m_shuffle && element_size > 1;
    const std::uint32_t skip_all = m_shuffle ? 3u : 1u;
    const int level = m_gzip_level;
    struct Compressor {
        std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> handle{nullptr, libdeflate_free_compressor};
        std::vector<unsigned char> shuffled;
    };
    tbb::enumerable_thread_specific<Compressor> compressors;
    const std::int64_t batch = std::max<std::int64_t>(1, m_batch_elements / m_chunk_elements);
    std::vector<std::vector<unsigned char>> compressed(static_cast<std::size_t>(std::min(batch, num_chunks)));
    for (std::int64_t first = 0; first < num_chunks; first += batch) {
        const std::int64_t last = std::min(num_chunks, first + batch);
        tbb::parallel_for(first, last, [&](std::int64_t chunk) {
            Compressor& state = compressors.local();
            if (!state.handle) state.handle.reset(libdeflate_alloc_compressor(level));
            auto& out = compressed[static_cast<std::size_t>(chunk - first)];
            out.clear();
            if (!state.handle) return;  // out of memory: stored raw
            const unsigned char* input = chunk_data(chunk);
            if (shuffle) {
                state.shuffled.resize(chunk_bytes);
                const std::size_t count_in_chunk = chunk_bytes / element_size;
                for (std::size_t element = 0; element < count_in_chunk; ++element)
                    for (std::size_t byte = 0; byte < element_size; ++byte)
                        state.shuffled[byte * count_in_chunk + element] = input[element * element_size + byte];
                input = state.shuffled.data();
            }
            out.resize(libdeflate_zlib_compress_bound(state.handle.get(), chunk_bytes));
            const std::size_t length = libdeflate_zlib_compress(state.handle.get(), input, chunk_bytes, out.data(), out.size());
            out.resize(length);  // 0: did not fit, stored raw
        });
        for (std::int64_t chunk = first; chunk < last; ++chunk) {
            const auto& out = compressed[static_cast<std::size_t>(chunk - first)];
            hsize_t offset = static_cast<hsize_t>(m_written + chunk * m_chunk_elements);
            herr_t result;
            if (!out.empty() && out.size() < chunk_bytes)
                result = H5Dwrite_chunk(m_dataset.get(), H5P_DEFAULT, 0, &offset, out.size(), out.data());
            else
                result = H5Dwrite_chunk(m_dataset.get(), H5P_DEFAULT, skip_all, &offset, chunk_bytes, chunk_data(chunk));
            if (result < 0) fail("chunk write failed (disk full?)");
        }
        write_behind();
    }
    m_written = new_size;
}

void AppendableDataset::finish() {
    if (!m_dataset) return;
    write_buffer(true);
    if (H5Dclose(m_dataset.release()) < 0) fail("close failed");
    m_buffer.clear();
    m_buffer.shrink_to_fit();
}

// ---- whole-dataset and attribute writers ----

template <typename T>
void write_array(const File& file, const std::string& object, const std::vector<std::int64_t>& dims, const T* values,
                 int gzip_level) {
    std::vector<hsize_t> extent;
    for (auto d : dims) {
        if (d < 0) throw WriteError(file.path(), object + ": negative dimension");
        extent.push_back(static_cast<hsize_t>(d));
    }
    write_whole(file, object, native_type<T>(), extent, values, gzip_level);
}

template <typename T>
void write_scalar(const File& file, const std::string& object, T value) {
    write_whole(file, object, native_type<T>(), {}, &value, 0);
}

void write_bool_scalar(const File& file, const std::string& object, bool value) {
    Handle type = bool_type();
    std::int8_t stored = value ? 1 : 0;
    write_whole(file, object, type.get(), {}, &stored, 0);
}

void write_string_scalar(const File& file, const std::string& object, const std::string& value) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    const char* pointer = value.c_str();
    write_whole(file, object, type.get(), {}, &pointer, 0);
}

void write_records(const File& file, const std::string& object, const std::vector<std::string>& fields,
                   const std::vector<std::vector<std::string>>& strings, const std::vector<std::vector<double>>& numbers,
                   bool single_precision) {
    const bool text = !strings.empty();
    const std::size_t num_fields = fields.size();
    if ((text ? strings.size() : numbers.size()) != num_fields)
        throw std::invalid_argument(object + ": " + std::to_string(num_fields) + " record fields but " +
                                    std::to_string(text ? strings.size() : numbers.size()) + " columns");
    const std::size_t rows = num_fields == 0 ? 0 : (text ? strings.front().size() : numbers.front().size());
    for (std::size_t field = 0; field < num_fields; ++field)
        if ((text ? strings[field].size() : numbers[field].size()) != rows)
            throw std::invalid_argument(object + ": record field '" + fields[field] + "' has a different length");
    Handle member(text ? H5Tcopy(H5T_C_S1) : H5Tcopy(single_precision ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE), H5Tclose);
    if (text) {
        H5Tset_size(member.get(), H5T_VARIABLE);
        H5Tset_cset(member.get(), H5T_CSET_UTF8);
    }
    const std::size_t member_size = text ? sizeof(const char*) : (single_precision ? sizeof(float) : sizeof(double));
    const std::size_t record_size = std::max<std::size_t>(1, num_fields) * member_size;
    Handle type(H5Tcreate(H5T_COMPOUND, record_size), H5Tclose);
    for (std::size_t field = 0; field < num_fields; ++field)
        H5Tinsert(type.get(), fields[field].c_str(), field * member_size, member.get());
    std::vector<unsigned char> packed(std::max<std::size_t>(1, rows * record_size));
    for (std::size_t row = 0; row < rows; ++row) {
        unsigned char* record = packed.data() + row * record_size;
        for (std::size_t field = 0; field < num_fields; ++field) {
            unsigned char* slot = record + field * member_size;
            if (text) {
                const char* pointer = strings[field][row].c_str();
                std::memcpy(slot, &pointer, sizeof pointer);
            } else if (single_precision) {
                const auto value = static_cast<float>(numbers[field][row]);
                std::memcpy(slot, &value, sizeof value);
            } else {
                std::memcpy(slot, &numbers[field][row], sizeof(double));
            }
        }
    }
    write_whole(file, object, type.get(), {static_cast<hsize_t>(rows)}, packed.data(), 0);
}

void write_bools(const File& file, const std::string& object, const std::vector<std::uint8_t>& values,
                 int gzip_level) {
    Handle type = bool_type();
    std::vector<std::int8_t> stored(values.size());
    for (std::size_t index = 0; index < values.size(); ++index) stored[index] = values[index] ? 1 : 0;
    write_whole(file, object, type.get(), {static_cast<hsize_t>(values.size())}, stored.data(), gzip_level);
}

void write_fixed_strings(const File& file, const std::string& object, const std::vector<std::string>& values,
                         int gzip_level) {
    const std::size_t width = longest(values);
    Handle type = fixed_string_type(width);
    const std::vector<char> packed = pack_fixed(values, width);
    write_whole(file, object, type.get(), {static_cast<hsize_t>(values.size())}, packed.data(), gzip_level);
}

template <typename T>
void write_scalar_attribute(const File& file, const std::string& object, const std::string& name, T value) {
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    write_attribute_raw(file, object, name, native_type<T>(), space.get(), &value);
}

void write_fixed_string_attribute(const File& file, const std::string& object, const std::string& name,
                                  const std::vector<std::string>& values) {
    const std::size_t width = longest(values);
    Handle type = fixed_string_type(width);
    hsize_t length = values.size();
    Handle space(H5Screate_simple(1, &length, nullptr), H5Sclose);
    const std::vector<char> packed = pack_fixed(values, width);
    write_attribute_raw(file, object, name, type.get(), space.get(), packed.data());
}

#define FATHOM_H5_WRITE_INSTANTIATE(T)                                                                          \
    template AppendableDataset AppendableDataset::create<T>(const File&, const std::string&, const AppendOptions&); \
    template void AppendableDataset::append<T>(const T*, std::int64_t);                                          \
    template void write_scalar<T>(const File&, const std::string&, T);                                           \
    template void write_array<T>(const File&, const std::string&, const std::vector<std::int64_t>&, const T*, int); \
    template void write_scalar_attribute<T>(const File&, const std::string&, const std::string&, T);

FATHOM_H5_WRITE_INSTANTIATE(float)
FATHOM_H5_WRITE_INSTANTIATE(double)
FATHOM_H5_WRITE_INSTANTIATE(std::int8_t)
FATHOM_H5_WRITE_INSTANTIATE(std::int16_t)
FATHOM_H5_WRITE_INSTANTIATE(std::int32_t)
FATHOM_H5_WRITE_INSTANTIATE(std::int64_t)
FATHOM_H5_WRITE_INSTANTIATE(std::uint8_t)
FATHOM_H5_WRITE_INSTANTIATE(std::uint32_t)
FATHOM_H5_WRITE_INSTANTIATE(std::uint64_t)
#undef FATHOM_H5_WRITE_INSTANTIATE

}  // namespace fathom::io::h5
