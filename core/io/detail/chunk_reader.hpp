#pragma once
/// Parallel decoding of compressed 1-D HDF5 datasets. HDF5 runs a dataset's filter
/// pipeline on the calling thread, one chunk after another, so reading a
/// deflate-compressed matrix is bound by one core's inflate speed. Here the raw chunks
/// are fetched with H5Dread_chunk (plain I/O, on the calling thread: the serial HDF5
/// library is not thread-safe) and decoded in parallel (oneTBB): inflate (libdeflate),
/// byte unshuffle, and the conversion of the stored element type, exactly as HDF5's
/// H5Z_FILTER_DEFLATE, H5Z_FILTER_SHUFFLE and numeric conversion would do.
#include <hdf5.h>

#include <cstdint>
#include <string>

namespace fathom::io::h5 {

class File;

/// Below this many elements a read goes through H5Dread (the setup is not worth it).
inline constexpr std::int64_t k_min_parallel_elements = std::int64_t{1} << 18;

/// Reads elements [offset, offset + count) of the rank-1 dataset `dataset` (an open
/// dataset of `file`, path `object` for messages) into `out` (count elements of T),
/// decoding its chunks in parallel. Handles chunked layouts whose filters are deflate
/// and/or shuffle (in any order, with per-chunk filter masks) over little-endian
/// integer or floating-point elements; returns false, having read nothing, for any
/// other layout, for unallocated chunks, and for reads of fewer than 2^18 elements, so
/// that the caller falls back to H5Dread. A corrupt chunk throws FormatError naming the
/// object and the chunk. The range must lie inside the dataset (the caller checks).
template <typename T>
bool read_chunked_parallel(const File& file, hid_t dataset, const std::string& object, T* out, std::int64_t offset,
                           std::int64_t count);

}  // namespace fathom::io::h5
