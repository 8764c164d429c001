#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/io/RowSource.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

namespace {

bool has_hdf5_signature(const std::string& path) {
    // The HDF5 superblock signature sits at offset 0, 512, 1024, ... (user block).
    static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    std::ifstream stream(path, std::ios::binary);
    if (!stream) return false;
    stream.seekg(0, std::ios::end);
    const auto size = static_cast<std::int64_t>(stream.tellg());
    for (std::int64_t offset = 0; offset + 8 <= size; offset = offset == 0 ? 512 : offset * 2) {
        char buffer[8];
        stream.seekg(offset);
        if (!stream.read(buffer, 8)) return false;
        if (std::equal(buffer, buffer + 8, signature)) return true;
    }
    return false;
}

// True when the first line, gunzipped if need be (zlib reads plain files as they are),
// starts with the Matrix Market banner. Files named *.mtx / *.mtx.gz count too, so
// that the Matrix Market reader reports exactly what is wrong with their banner.
bool has_matrix_market_banner(const std::string& path) {
    if (path.ends_with(".mtx") || path.ends_with(".mtx.gz")) return true;
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file) return false;
    static constexpr char banner[] = "%%MatrixMarket";
    char first[sizeof(banner)] = {};
    const int got = gzread(file, first, sizeof(banner) - 1);
    gzclose_r(file);
    return got == static_cast<int>(sizeof(banner) - 1) && std::equal(first, first + sizeof(banner) - 1, banner);
}

}  // namespace

DatasetFormat detect_format(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (!fs::exists(path, error)) throw ReadError(path, "no such file or folder");
    if (fs::is_directory(path, error)) {
        for (const char* name : {"matrix.mtx", "matrix.mtx.gz"})
            if (fs::exists(fs::path(path) / name, error)) return DatasetFormat::MatrixMarketFolder;
        throw FormatError(path, "", "folder holds no matrix.mtx or matrix.mtx.gz");
    }
    if (has_hdf5_signature(path)) return detect_hdf5_layout(path);
    if (has_matrix_market_banner(path)) return DatasetFormat::MatrixMarketFile;
    throw FormatError(path, "", "unrecognised format: neither HDF5 (h5ad, 10x h5) nor Matrix Market");
}

OpenedDataset open_dataset(const std::string& path, const ReadOptions& options) {
    const DatasetFormat format = detect_format(path);
    OpenedDataset opened;
    switch (format) {
        case DatasetFormat::H5ad: opened = open_h5ad(path, options); break;
        case DatasetFormat::TenxH5V3:
        case DatasetFormat::TenxH5V2: opened = open_10x_h5(path, options); break;
        case DatasetFormat::MatrixMarketFolder:
        case DatasetFormat::MatrixMarketFile: opened = open_matrix_market(path, options); break;
        case DatasetFormat::Loom: opened = open_loom(path, options); break;
    }
    if (options.make_var_names_unique)
        opened.meta.num_var_names_made_unique = make_names_unique(opened.meta.var.index());
    if (options.make_obs_names_unique) make_names_unique(opened.meta.obs.index());
    return opened;
}

ShardedCsr load_shards(RowSource& source, const std::vector<RowRange>& ranges) {
    std::vector<CsrShard> shards;
    shards.reserve(ranges.size());
    for (const auto& range : ranges) shards.push_back(source.read_rows(range.begin, range.end));
    return ShardedCsr(source.shape(), std::move(shards));
}

}  // namespace fathom::io
