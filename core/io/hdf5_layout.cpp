#include "core/io/detail/hdf5.hpp"
#include "core/io/readers.hpp"

namespace fathom::io {

DatasetFormat detect_hdf5_layout(const std::string& path) {
    const h5::File file = h5::File::open_read(path);
    if (file.is_dataset("/matrix") && (file.is_group("/row_attrs") || file.is_group("/col_attrs"))) return DatasetFormat::Loom;
    if (file.is_group("/matrix")) return DatasetFormat::TenxH5V3;
    const bool anndata_root = file.attribute_string("/", "encoding-type").value_or("") == "anndata";
    if (anndata_root || file.exists("/X") || file.exists("/obs") || file.exists("/var")) return DatasetFormat::H5ad;
    // CellRanger v2: one group per genome holding data/indices/indptr/shape.
    for (const auto& member : file.members("/")) {
        const std::string group = "/" + member;
        if (file.is_group(group) && file.exists(group + "/indptr") && file.exists(group + "/data"))
            return DatasetFormat::TenxH5V2;
    }
    throw FormatError(path, "/", "HDF5 file is neither h5ad (/X, /obs, /var), 10x (/matrix or genome groups) nor loom (/matrix with /row_attrs, /col_attrs)");
}

}  // namespace fathom::io
