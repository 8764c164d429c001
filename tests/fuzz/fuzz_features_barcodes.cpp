// libFuzzer target: the features.tsv / barcodes.tsv parsers of a CellRanger Matrix
// Market folder. The input is split at its first NUL byte: features before it,
// barcodes after; matrix.mtx is a fixed valid 3 genes x 2 cells matrix.
#include <algorithm>

#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fathom;
    const auto folder = fuzz::scratch() / "folder";
    std::filesystem::create_directories(folder);
    static const char matrix[] = "%%MatrixMarket matrix coordinate integer general\n3 2 3\n1 1 4\n3 1 1\n2 2 7\n";
    fuzz::write_file(folder / "matrix.mtx", reinterpret_cast<const std::uint8_t*>(matrix), sizeof matrix - 1);
    const auto* split = std::find(data, data + size, std::uint8_t{0});
    fuzz::write_file(folder / "features.tsv", data, static_cast<std::size_t>(split - data));
    const auto* rest = split == data + size ? split : split + 1;
    fuzz::write_file(folder / "barcodes.tsv", rest, static_cast<std::size_t>(data + size - rest));
    fuzz::read_everything([&] { return io::open_matrix_market(folder.string(), io::ReadOptions{}); });
    return 0;
}
