// libFuzzer target: the HDF5 readers (h5ad; 10x v2 / v3 with FATHOM_FUZZ_TENX; loom with
// FATHOM_FUZZ_LOOM) on an in-memory file image: HDF5's core driver opens the input bytes
// (H5Pset_file_image), so no file is written. Built three times: fuzz_h5ad, fuzz_10x and
// fuzz_loom.
#include "core/io/detail/hdf5.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fathom;
    static const std::string path = "in-memory.h5";
    io::h5::set_file_image(path, data, size);
    io::ReadOptions options;
    options.read_annotations = true;  // obsm, varm, obsp, uns too
#if defined(FATHOM_FUZZ_TENX)
    fuzz::read_everything([&] { return io::open_10x_h5(path, options); });
#elif defined(FATHOM_FUZZ_LOOM)
    fuzz::read_everything([&] { return io::open_loom(path, options); });
#else
    fuzz::read_everything([&] { return io::open_h5ad(path, options); });
#endif
    io::h5::clear_file_image();
    return 0;
}
