// Placeholder until the reader lands.
#include "core/io/errors.hpp"
#include "core/io/readers.hpp"
namespace fathom::io {
OpenedDataset open_h5ad(const std::string& path, const ReadOptions&) { throw ReadError(path, "reader not built yet"); }
}  // namespace fathom::io
