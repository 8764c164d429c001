#pragma once
/// h5ad writer (anndata's on-disk format, encoding-version 0.1.0 elements as anndata 0.8+
/// writes them). Always writes to "<path>.tmp-<pid>" and renames into place, so a
/// failure never leaves a broken or half-written file at `path`.
#include <string>

#include "core/data/Dataset.hpp"
#include "core/io/RowSource.hpp"

namespace fathom::io {

struct H5adWriteOptions {
    int gzip_level = 0;            ///< 0 = uncompressed; 1-9 = gzip (chunked datasets)
    bool write_matrix = true;      ///< false writes obs/var/obsm/varm/uns only (X omitted)
    std::int64_t rows_per_block = 65536;  ///< rows streamed from the source per block
};

/// Writes `meta` (obs, var, obsm, varm, uns) and, when `matrix` is given and
/// options.write_matrix, the matrix streamed block by block from `matrix` as CSR X.
/// Throws WriteError naming the path (nothing is left at `path` on failure) and
/// std::invalid_argument when meta's tables disagree with the matrix shape.
void write_h5ad(const std::string& path, const Dataset& meta, RowSource* matrix, const H5adWriteOptions& options = {});

}  // namespace fathom::io
