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

bool has_matrix_market_banner(const std::string& path) {
    std::string first_line;
    if (path.ends_with(".gz")) return path.ends_with(".mtx.gz");  // checked again when parsed
    std::ifstream stream(path);
    std::getline(stream, first_line);
    return first_line.rfind("%%MatrixMarket", 0) == 0;
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
    }
    if (options.make_var_names_unique) make_names_unique(opened.meta.var.index());
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
