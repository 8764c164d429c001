#pragma once
/// Writing half of the HDF5 layer (an additive extension of detail/hdf5.hpp): chunked
/// 1-D datasets grown by appending (streaming writers keep memory bounded), scalar
/// datasets, h5py-style booleans and numpy 'S' fixed-length byte strings. Not part of
/// the public API: include only from core/io sources. Every failure throws
/// io::WriteError naming the file and the object.
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/detail/hdf5.hpp"

namespace fathom::io::h5 {

/// How an appendable dataset is laid out on disk.
struct AppendOptions {
    std::int64_t chunk_elements = 1 << 17;  ///< elements per HDF5 chunk (>= 1)
    int gzip_level = 0;                     ///< 0 = uncompressed; 1-9 = deflate
    /// HDF5's byte-shuffle filter before deflate (CellRanger's layout); gzip only.
    bool shuffle = false;
    /// Chunks buffered before they are written (appends of whole chunks are written
    /// from the caller's memory instead). With gzip the chunks of one batch are
    /// compressed in parallel (oneTBB, libdeflate) and stored with H5Dwrite_chunk, so
    /// readers see an ordinary deflate-filtered dataset.
    std::int64_t chunks_per_batch = 8;
    /// Write-behind: once the file has grown this many bytes past the last check, its
    /// dirty pages are sent to the disk (sync_file_range), and the pages more than this
    /// many bytes behind the end are waited for and dropped from the page cache. The
    /// page cache then holds a window of the file, not all of it: writing 1.6 GB through
    /// it took 4.3-6.0 s of system time on this project's machines (fresh pages for
    /// all of it), written behind 0.7 s (the disk takes 1.9 GB/s). 0 = off.
    std::int64_t write_behind_bytes = std::int64_t{64} << 20;
};

/// A chunked 1-D dataset with unlimited maximum extent, written by appending. Values
/// are buffered up to one batch of chunks and written whole-chunk-aligned; finish()
/// writes the tail and leaves the dataset with exactly size() elements. Holds at most
/// chunk_elements * chunks_per_batch elements in memory.
class AppendableDataset {
public:
    AppendableDataset() = default;
    AppendableDataset(const AppendableDataset&) = delete;
    AppendableDataset& operator=(const AppendableDataset&) = delete;
    AppendableDataset(AppendableDataset&&) noexcept = default;
    AppendableDataset& operator=(AppendableDataset&&) noexcept = default;

    /// Creates `object` (parent group must exist) holding elements of numeric type T
    /// (float, double, int8..int64, uint8..uint64).
    template <typename T>
    static AppendableDataset create(const File& file, const std::string& object, const AppendOptions& options = {});
    /// Creates `object` holding numpy 'S<width>' strings (NULL-padded ASCII, as CellRanger
    /// writes barcodes and feature names). width >= 1.
    static AppendableDataset create_fixed_strings(const File& file, const std::string& object, std::size_t width,
                                                  const AppendOptions& options = {});

    /// Appends `count` elements; T must be the type given to create().
    template <typename T>
    void append(const T* values, std::int64_t count);
    template <typename T>
    void append(const std::vector<T>& values) {
        append(values.data(), static_cast<std::int64_t>(values.size()));
    }
    /// Appends strings to a fixed-string dataset; a string longer than the width throws.
    void append_strings(const std::vector<std::string>& values);

    /// Elements appended so far (written or buffered).
    std::int64_t size() const noexcept { return m_written + m_buffered; }
    /// Writes the buffered elements and closes the dataset. Idempotent.
    void finish();
    const std::string& object() const noexcept { return m_object; }

private:
    AppendableDataset(const File& file, std::string object, Handle type, std::size_t element_size,
                      const AppendOptions& options);
    void append_bytes(const void* values, std::int64_t count);
    void write_buffer(bool final_chunk);
    /// Stores `count` elements of `data` as whole chunks after the m_written elements
    /// (the last chunk padded when count is not a multiple of the chunk).
    void write_chunks(const unsigned char* data, std::int64_t count);
    /// AppendOptions::write_behind_bytes, after the chunks of a batch are written.
    void write_behind();
    [[noreturn]] void fail(const std::string& problem) const;

    std::string m_file_path;
    int m_descriptor = -1;                ///< the file's descriptor for write-behind (-1: none)
    std::int64_t m_write_behind = 0;      ///< AppendOptions::write_behind_bytes
    std::int64_t m_checked_size = 0;      ///< file size at the last write-behind
    std::string m_object;
    Handle m_dataset;
    Handle m_type;
    std::size_t m_element_size = 0;
    bool m_is_string = false;
    std::size_t m_string_width = 0;
    int m_gzip_level = 0;
    bool m_shuffle = false;
    std::int64_t m_chunk_elements = 0;
    std::int64_t m_batch_elements = 0;
    std::vector<unsigned char> m_buffer;  ///< m_batch_elements * m_element_size bytes
    std::int64_t m_buffered = 0;          ///< elements in m_buffer
    std::int64_t m_written = 0;           ///< elements stored in the file (chunk-aligned until finish)
};

/// N-D numeric dataset of any native type (int16 included, which File::write lacks);
/// `dims` empty writes a scalar. Chunked + deflated when gzip_level > 0.
template <typename T>
void write_array(const File& file, const std::string& object, const std::vector<std::int64_t>& dims, const T* values,
                 int gzip_level = 0);
/// Scalar (rank-0) numeric dataset, as h5py writes numpy scalars (anndata numeric-scalar).
template <typename T>
void write_scalar(const File& file, const std::string& object, T value);
/// Scalar h5py boolean dataset (int8 enum {FALSE, TRUE}).
void write_bool_scalar(const File& file, const std::string& object, bool value);
/// Scalar variable-length UTF-8 string dataset (anndata "string" encoding).
void write_string_scalar(const File& file, const std::string& object, const std::string& value);
/// 1-D h5py boolean dataset (int8 enum {FALSE, TRUE}); values are 0 or non-zero.
void write_bools(const File& file, const std::string& object, const std::vector<std::uint8_t>& values,
                 int gzip_level = 0);
/// 1-D numpy 'S<width>' dataset, width = the longest value (at least 1).
void write_fixed_strings(const File& file, const std::string& object, const std::vector<std::string>& values,
                         int gzip_level = 0);
/// 1-D compound dataset with one field per column, as h5py writes a NumPy record
/// array: text fields as variable-length UTF-8 strings, numbers as float32 or float64.
/// Every column has the same length; either `strings` or `numbers` is used.
void write_records(const File& file, const std::string& object, const std::vector<std::string>& fields,
                   const std::vector<std::vector<std::string>>& strings, const std::vector<std::vector<double>>& numbers,
                   bool single_precision);
/// Scalar numeric attribute (h5py shows a numpy scalar, not a 1-element array).
template <typename T>
void write_scalar_attribute(const File& file, const std::string& object, const std::string& name, T value);
/// 1-D numpy 'S<width>' string attribute (CellRanger's library_ids).
void write_fixed_string_attribute(const File& file, const std::string& object, const std::string& name,
                                  const std::vector<std::string>& values);

}  // namespace fathom::io::h5
