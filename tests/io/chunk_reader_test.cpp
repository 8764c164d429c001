// Tests of core/io/detail/chunk_reader: parallel chunk decoding gives exactly what
// HDF5's own filter pipeline (H5Dread) gives, for every filter order, stored type and
// range, and names the object and chunk when a chunk is corrupt.
#include "core/io/detail/chunk_reader.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/io/detail/hdf5.hpp"
#include "tests/support/paths.hpp"

namespace fathom::io::h5 {
namespace {

enum class Filters { None, Deflate, ShuffleDeflate, DeflateShuffle };

/// Writes `values` (stored as `file_type`) as a chunked 1-D dataset with the filters.
template <typename T>
void write_dataset(const std::string& path, const std::string& name, const std::vector<T>& values, hid_t file_type,
                   hid_t memory_type, hsize_t chunk, Filters filters) {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    hsize_t length = values.size();
    hid_t space = H5Screate_simple(1, &length, nullptr);
    hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(create, 1, &chunk);
    if (filters == Filters::ShuffleDeflate) H5Pset_shuffle(create);
    if (filters != Filters::None) H5Pset_deflate(create, 4);
    if (filters == Filters::DeflateShuffle) H5Pset_shuffle(create);
    hid_t dataset = H5Dcreate2(file, name.c_str(), file_type, space, H5P_DEFAULT, create, H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    ASSERT_GE(H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    H5Dclose(dataset);
    H5Pclose(create);
    H5Sclose(space);
    H5Fclose(file);
}

std::string new_file(const std::string& label) {
    const std::string path = (test::temp_dir("chunk-reader") / (label + ".h5")).string();
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(file, 0);
    H5Fclose(file);
    return path;
}

/// Counts-like data: mostly small integers, some large, compressible as real matrices are.
std::vector<std::int64_t> sample_values(std::size_t count, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::geometric_distribution<int> small(0.4);
    std::vector<std::int64_t> values(count);
    for (auto& value : values) value = generator() % 97 == 0 ? static_cast<std::int64_t>(generator() % 30000) : small(generator);
    return values;
}

/// Reads [offset, offset + count) through the parallel path and through H5Dread.
template <typename T>
void expect_same_as_hdf5(const std::string& path, const std::string& name, std::int64_t offset, std::int64_t count,
                         bool expect_parallel) {
    const File file = File::open_read(path);
    hid_t dataset = H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    std::vector<T> parallel(static_cast<std::size_t>(count));
    const bool used = read_chunked_parallel(file, dataset, name, parallel.data(), offset, count);
    EXPECT_EQ(used, expect_parallel) << name;
    H5Dclose(dataset);
    const std::vector<T> reference = file.read<T>(name, offset, count);  // may itself take the parallel path
    std::vector<T> plain(static_cast<std::size_t>(count));
    {
        hid_t handle = H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT);
        hid_t space = H5Dget_space(handle);
        hsize_t start = static_cast<hsize_t>(offset), length = static_cast<hsize_t>(count);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &length, nullptr);
        hid_t memory = H5Screate_simple(1, &length, nullptr);
        hid_t memory_type = std::is_same_v<T, float>          ? H5T_NATIVE_FLOAT
                            : std::is_same_v<T, double>       ? H5T_NATIVE_DOUBLE
                            : std::is_same_v<T, std::int32_t> ? H5T_NATIVE_INT32
                                                              : H5T_NATIVE_INT64;
        ASSERT_GE(H5Dread(handle, memory_type, memory, space, H5P_DEFAULT, plain.data()), 0);
        H5Sclose(memory);
        H5Sclose(space);
        H5Dclose(handle);
    }
    if (used) {
        EXPECT_EQ(parallel, plain) << name << " [" << offset << ", " << offset + count << ")";
    }
    EXPECT_EQ(reference, plain) << name << " [" << offset << ", " << offset + count << ")";
}

TEST(ChunkReader, MatchesHdf5ForEveryFilterOrderTypeAndRange) {
    const std::string path = new_file("filters");
    const auto values = sample_values(1'000'003, 7);  // the last chunk is partial
    const std::vector<std::pair<const char*, hid_t>> types{{"i16", H5T_STD_I16LE}, {"u16", H5T_STD_U16LE},
                                                           {"i32", H5T_STD_I32LE}, {"u32", H5T_STD_U32LE},
                                                           {"i64", H5T_STD_I64LE}, {"f32", H5T_IEEE_F32LE},
                                                           {"f64", H5T_IEEE_F64LE}};
    const std::vector<std::pair<const char*, Filters>> pipelines{{"none", Filters::None},
                                                                 {"deflate", Filters::Deflate},
                                                                 {"shuffle+deflate", Filters::ShuffleDeflate},
                                                                 {"deflate+shuffle", Filters::DeflateShuffle}};
    for (const auto& [type_name, type] : types)
        for (const auto& [filter_name, filters] : pipelines)
            write_dataset(path, std::string(type_name) + "-" + filter_name, values, type, H5T_NATIVE_INT64, 65536, filters);
    for (const auto& [type_name, type] : types) {
        for (const auto& [filter_name, filters] : pipelines) {
            const std::string name = std::string(type_name) + "-" + filter_name;
            expect_same_as_hdf5<std::int64_t>(path, name, 0, 1'000'003, true);
            expect_same_as_hdf5<float>(path, name, 70'001, 600'000, true);        // starts and ends mid-chunk
            expect_same_as_hdf5<double>(path, name, 999'000 - 400'000, 401'003, true);  // to the partial last chunk
            expect_same_as_hdf5<std::int32_t>(path, name, 5, 100, false);          // small: left to H5Dread
        }
    }
}

TEST(ChunkReader, ContiguousAndUnallocatedDatasetsFallBackToHdf5) {
    const std::string path = new_file("layouts");
    const auto values = sample_values(600'000, 8);
    {
        hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        hsize_t length = values.size();
        hid_t space = H5Screate_simple(1, &length, nullptr);
        hid_t dataset = H5Dcreate2(file, "contiguous", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
        H5Dclose(dataset);
        // Chunked but never written: every chunk unallocated (reads give the fill value).
        hid_t create = H5Pcreate(H5P_DATASET_CREATE);
        hsize_t chunk = 4096;
        H5Pset_chunk(create, 1, &chunk);
        H5Pset_deflate(create, 4);
        dataset = H5Dcreate2(file, "unallocated", H5T_STD_I64LE, space, H5P_DEFAULT, create, H5P_DEFAULT);
        H5Dclose(dataset);
        H5Pclose(create);
        H5Sclose(space);
        H5Fclose(file);
    }
    expect_same_as_hdf5<std::int64_t>(path, "contiguous", 0, 600'000, false);
    expect_same_as_hdf5<std::int64_t>(path, "unallocated", 0, 600'000, false);
}

TEST(ChunkReader, CorruptChunkIsAFormatErrorNamingTheObjectAndChunk) {
    const std::string path = new_file("corrupt");
    const auto values = sample_values(300'000, 9);
    write_dataset(path, "data", values, H5T_STD_I32LE, H5T_NATIVE_INT64, 65536, Filters::Deflate);
    {
        // Overwrite chunk 2 with bytes that are not a deflate stream.
        hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t dataset = H5Dopen2(file, "data", H5P_DEFAULT);
        std::vector<unsigned char> garbage(1000, 0xAB);
        hsize_t coordinate = 2 * 65536;
        ASSERT_GE(H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, &coordinate, garbage.size(), garbage.data()), 0);
        H5Dclose(dataset);
        H5Fclose(file);
    }
    const File file = File::open_read(path);
    try {
        (void)file.read<std::int64_t>("data", 0, 300'000);
        FAIL() << "no error";
    } catch (const FormatError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("data"), std::string::npos) << message;
        EXPECT_NE(message.find("chunk 2"), std::string::npos) << message;
        EXPECT_NE(message.find(path), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace fathom::io::h5
