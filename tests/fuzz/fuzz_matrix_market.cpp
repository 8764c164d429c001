// libFuzzer target: the Matrix Market parser (a single .mtx file, plain or gzip).
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fathom;
    // A leading gzip magic makes it a .mtx.gz; either way the reader sniffs the bytes.
    const bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    const auto path = fuzz::scratch() / (gz ? "input.mtx.gz" : "input.mtx");
    fuzz::write_file(path, data, size);
    fuzz::read_everything([&] { return io::open_matrix_market(path.string(), io::ReadOptions{}); });
    return 0;
}
