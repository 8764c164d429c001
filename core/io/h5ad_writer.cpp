// Placeholder until the writer lands.
#include "core/io/errors.hpp"
#include "core/io/h5ad_writer.hpp"
namespace fathom::io {
void write_h5ad(const std::string& path, const Dataset&, RowSource*, const H5adWriteOptions&) {
    throw WriteError(path, "writer not built yet");
}
}  // namespace fathom::io
