// Hostile files: each test writes the smallest file that once crashed, hung or fooled a
// reader (with tests/fuzz/make_corpus.py's writers) and checks the clean refusal: the
// error type, the file and object named, and the cause in the message.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/io/RowSource.hpp"
#include "core/io/errors.hpp"
#include "core/io/readers.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;

/// Runs `body` (Python) with make_corpus's writers imported as `mc` and numpy as `np`,
/// `path` as sys.argv[1]; fails the test when it fails.
void write_with_python(const fs::path& path, const std::string& body) {
    const std::string script = "import sys, h5py, numpy as np\nsys.path.insert(0, '" FATHOM_SOURCE_DIR
                               "/tests/fuzz')\nimport make_corpus as mc\npath = sys.argv[1]\n" + body + "\n";
    const auto result = test::run_python(script, {path.string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
}

/// open_dataset and a read of every row; returns the message of the expected error type.
template <typename Error>
std::string refusal(const fs::path& path) {
    try {
        auto opened = io::open_dataset(path.string());
        opened.source->read_rows(0, opened.meta.shape.num_cells);
    } catch (const Error& error) {
        return error.what();
    } catch (const std::exception& error) {
        ADD_FAILURE() << "wrong error type for " << path << ": " << error.what();
        return {};
    }
    ADD_FAILURE() << "accepted " << path;
    return {};
}

void expect_format_error(const fs::path& path, const std::string& object, const std::string& fragment) {
    try {
        auto opened = io::open_dataset(path.string());
        opened.source->read_rows(0, opened.meta.shape.num_cells);
        ADD_FAILURE() << "accepted " << path << "; expected a FormatError naming " << object;
    } catch (const io::FormatError& error) {
        const std::string message = error.what();
        EXPECT_EQ(error.file(), path.string()) << message;
        EXPECT_EQ(error.object(), object) << message;
        EXPECT_NE(message.find(fragment), std::string::npos) << "missing '" << fragment << "' in: " << message;
    }
}

class HostileFiles : public ::testing::Test {
protected:
    void SetUp() override { FATHOM_REQUIRE_PYTHON("h5py", "numpy"); }
    fs::path file(const std::string& name) { return test::temp_dir("hostile") / name; }
};

// ---------------------------------------------------------------- chunk decoding

TEST_F(HostileFiles, ShuffleChunkLargerThanAChunkIsRefusedNotOverflowed) {
    // 2^18+ elements take the parallel decoder; chunk 1 stores more bytes than a chunk.
    const auto path = file("shuffle-long.h5ad");
    write_with_python(path, R"PY(
big = mc.base_matrix(seed=3, cells=600, genes=500, density=0.95)
mc.write_h5ad(path, dense=big)
indptr, indices, data = mc.csr(big)
with h5py.File(path, "r+") as f:
    del f["X/data"]
    d = f["X"].create_dataset("data", data=data, shuffle=True, chunks=(65536,))
    d.id.write_direct_chunk((65536,), bytes(65536 * 4 * 2))
)PY");
    expect_format_error(path, "/X/data", "before unshuffling");
}

TEST_F(HostileFiles, DeflateChunkThatDecodesShortIsRefused) {
    const auto path = file("deflate-short.h5ad");
    write_with_python(path, R"PY(
import zlib
big = mc.base_matrix(seed=3, cells=600, genes=500, density=0.95)
mc.write_h5ad(path, dense=big)
indptr, indices, data = mc.csr(big)
with h5py.File(path, "r+") as f:
    del f["X/data"]
    d = f["X"].create_dataset("data", data=data, compression="gzip", chunks=(65536,))
    d.id.write_direct_chunk((0,), zlib.compress(bytes(1000)))
)PY");
    expect_format_error(path, "/X/data", "decodes to 1000 bytes");
}

TEST_F(HostileFiles, LzfChunkThatDecodesShortIsRefusedNotReadAsGarbage) {
    const auto path = file("lzf-short.h5ad");
    write_with_python(path, R"PY(
mc.write_h5ad(path)
indptr, indices, data = mc.csr(mc.base_matrix())
with h5py.File(path, "r+") as f:
    del f["X/data"]
    d = f["X"].create_dataset("data", data=data, compression="lzf", chunks=(len(data),))
    payload = data.tobytes()[: len(data) * 2]
    d.id.write_direct_chunk((0,), b"".join(bytes([len(payload[i:i + 32]) - 1]) + payload[i:i + 32]
                                           for i in range(0, len(payload), 32)))
)PY");
    expect_format_error(path, "/X/data", "read failed");
}

// ---------------------------------------------------------------- global heap

TEST_F(HostileFiles, GlobalHeapWithAZeroSizedObjectIsRefusedInsteadOfHanging) {
    // 64 zeroed bytes after a collection header: an object of size 0, on which
    // libhdf5 1.10's H5HG_read loops forever.
    const auto path = file("heap-zero.h5ad");
    write_with_python(path, R"PY(
mc.write_h5ad(path, uns=False)
raw = bytearray(open(path, "rb").read())
at = raw.index(b"GCOL")
raw[at + 16:at + 80] = bytes(64)
open(path, "wb").write(bytes(raw))
)PY");
    const auto start = std::chrono::steady_clock::now();
    const std::string message = refusal<io::FormatError>(path);
    EXPECT_NE(message.find("global heap collection"), std::string::npos) << message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(HostileFiles, GlobalHeapCollectionSizeBeyondTheFileIsRefused) {
    const auto path = file("heap-size.h5ad");
    write_with_python(path, R"PY(
import struct
mc.write_h5ad(path, uns=False)
raw = bytearray(open(path, "rb").read())
for at in [i for i in range(len(raw)) if raw.startswith(b"GCOL", i)]:
    struct.pack_into("<Q", raw, at + 8, 2**40)
open(path, "wb").write(bytes(raw))
)PY");
    const std::string message = refusal<io::FormatError>(path);
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
}

TEST_F(HostileFiles, LocalHeapOutsideTheFileIsRefusedBeforeLibhdf5ReadsIt) {
    // The root group's link names: a data segment declared past the end of the file
    // made libhdf5 1.10 copy from a null buffer (found by fuzz_h5ad).
    const auto path = file("local-heap.h5ad");
    write_with_python(path, R"PY(
import struct
mc.write_h5ad(path)
raw = bytearray(open(path, "rb").read())
at = raw.index(b"HEAP")
struct.pack_into("<Q", raw, at + 24, len(raw) - 8)
open(path, "wb").write(bytes(raw))
)PY");
    const std::string message = refusal<io::FormatError>(path);
    EXPECT_NE(message.find("local heap (link names)"), std::string::npos) << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
}

TEST_F(HostileFiles, ChunkLargerThanAFixedDimensionIsRefusedBeforeLibhdf5ReadsPastItsBuffer) {
    // A loom matrix whose layout message declares 48-row chunks for 24 fixed rows (found
    // by fuzz_loom: libhdf5 1.10 reads such a dataset past its buffers).
    const auto path = file("chunk-beyond-extent.loom");
    write_with_python(path, R"PY(
import struct
with h5py.File(path, "w") as f:
    f.attrs["LOOM_SPEC_VERSION"] = "3.0.0"
    f.create_dataset("matrix", data=np.arange(24 * 18, dtype=np.float32).reshape(24, 18), chunks=(12, 9))
    f.create_group("layers")
    f["row_attrs/Gene"] = np.array([b"g%d" % g for g in range(24)])
    f["col_attrs/CellID"] = np.array([b"c%d" % c for c in range(18)])
    f.create_group("row_graphs")
    f.create_group("col_graphs")
data = bytearray(open(path, "rb").read())
old, new = struct.pack("<III", 12, 9, 4), struct.pack("<III", 48, 9, 4)
assert data.count(old) == 1, data.count(old)
data = data.replace(old, new)
open(path, "wb").write(bytes(data))
)PY");
    const std::string message = refusal<io::FormatError>(path);
    EXPECT_NE(message.find("chunk dimension 0 is 48 for a fixed extent of 24"), std::string::npos) << message;
    EXPECT_NE(message.find("matrix"), std::string::npos) << message;
}

TEST_F(HostileFiles, CompactStorageSmallerThanItsElementsIsRefused) {
    // A compact dataset whose layout message says 0 bytes for 2 int32: libhdf5 1.10
    // copied from a null buffer (found by fuzz_10x).
    const auto path = file("compact.h5");
    write_with_python(path, R"PY(
mc.write_10x(path)
with h5py.File(path, "r+") as f:
    del f["matrix/shape"]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple((2,))
    d = h5py.h5d.create(f["matrix"].id, b"shape", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([mc.GENES, mc.CELLS], np.int32))
raw = bytearray(open(path, "rb").read())
at = raw.index(b"\x03\x00\x08\x00" + np.array([mc.GENES, mc.CELLS], np.int32).tobytes())
raw[at + 2] = 0
open(path, "wb").write(bytes(raw))
)PY");
    expect_format_error(path, "/matrix/shape", "compact storage holds 0 bytes for 2 elements");
}

TEST_F(HostileFiles, AttributeMessageLargerThanItselfIsRefused) {
    const auto path = file("attribute.h5ad");
    write_with_python(path, R"PY(
mc.write_h5ad(path)
raw = bytearray(open(path, "rb").read())
at = raw.index(b"encoding-type\x00") - 8
assert raw[at] == 1 and raw[at + 2] == 14
raw[at + 2:at + 4] = b"\xff\x7f"
open(path, "wb").write(bytes(raw))
)PY");
    const std::string message = refusal<io::FormatError>(path);
    EXPECT_NE(message.find("an attribute message whose parts"), std::string::npos) << message;
}

TEST_F(HostileFiles, ObjectHeaderLargerThanTheFileIsRefusedBeforeLibhdf5AllocatesIt) {
    const auto path = file("header.h5ad");
    write_with_python(path, R"PY(
import struct
mc.write_h5ad(path)
with h5py.File(path, "r") as f:
    address = h5py.h5o.get_info(f["obs"].id).addr
raw = bytearray(open(path, "rb").read())
assert raw[address] == 1
struct.pack_into("<I", raw, address + 8, 0x7FFFFFF0)
open(path, "wb").write(bytes(raw))
)PY");
    expect_format_error(path, "/obs", "object header declares 2147483632 bytes");
}

// ---------------------------------------------------------------- uns

TEST_F(HostileFiles, UnsHardLinkCycleIsRefused) {
    const auto path = file("uns-loop.h5ad");
    write_with_python(path, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    f["uns"].create_group("a")["loop"] = f["uns"]
)PY");
    io::ReadOptions options;
    options.read_annotations = true;
    try {
        io::open_dataset(path.string(), options);
        ADD_FAILURE() << "accepted a cyclic uns";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.object(), "/uns/a/loop") << error.what();
        EXPECT_NE(std::string(error.what()).find("cycle"), std::string::npos) << error.what();
    }
}

TEST_F(HostileFiles, DeepUnsIsRefusedQuicklyAndModerateDepthIsRead) {
    const auto deep = file("uns-deep.h5ad");
    const auto moderate = file("uns-moderate.h5ad");
    write_with_python(deep, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    g = f["uns"]
    for level in range(400):
        g = g.create_group(f"l{level}")
)PY");
    write_with_python(moderate, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    g = f["uns"]
    for level in range(30):
        g = g.create_group(f"l{level}")
    g.create_dataset("leaf", data=np.arange(3))
)PY");
    io::ReadOptions options;
    options.read_annotations = true;
    const auto start = std::chrono::steady_clock::now();
    try {
        io::open_dataset(deep.string(), options);
        ADD_FAILURE() << "accepted uns 400 deep";
    } catch (const io::FormatError& error) {
        EXPECT_NE(std::string(error.what()).find("deeper than"), std::string::npos) << error.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    const auto opened = io::open_dataset(moderate.string(), options);
    const UnsNode* node = &opened.meta.uns;
    for (int level = 0; level < 30 && node; ++level) node = node->find("l" + std::to_string(level));
    ASSERT_NE(node, nullptr);
    const UnsNode* leaf = node->find("leaf");
    ASSERT_NE(leaf, nullptr);
    EXPECT_EQ(std::get<std::vector<std::int64_t>>(leaf->value), (std::vector<std::int64_t>{0, 1, 2}));
}

// ---------------------------------------------------------------- not a regular file

TEST_F(HostileFiles, FifoIsRefusedWithoutBlocking) {
    const auto path = file("pipe.h5ad");
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    const std::string message = refusal<io::ReadError>(path);
    EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
    const auto device = file("zero.h5");
    fs::create_symlink("/dev/zero", device);
    EXPECT_NE(refusal<io::ReadError>(device).find("character device"), std::string::npos);
}

// ---------------------------------------------------------------- links and storage

TEST_F(HostileFiles, DanglingCyclicAndExternalLinksAreErrorsNotAbsentElements) {
    const auto dangling = file("x-dangling.h5ad");
    write_with_python(dangling, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    del f["X"]
    f["X"] = h5py.SoftLink("/nowhere")
)PY");
    expect_format_error(dangling, "/X", "soft link to '/nowhere' whose target does not exist");

    const auto external = file("var-external.h5ad");
    write_with_python(external, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    del f["var"]
    f["var"] = h5py.ExternalLink("missing-file.h5", "/var")
)PY");
    expect_format_error(external, "/var", "external link to '/var in file missing-file.h5'");

    const auto cycle = file("obs-cycle.h5ad");
    write_with_python(cycle, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    del f["obs"]
    f["obs"] = h5py.SoftLink("/obs2")
    f["obs2"] = h5py.SoftLink("/obs")
)PY");
    expect_format_error(cycle, "/obs", "cycle of links");
}

TEST_F(HostileFiles, DataInOtherFilesIsRefused) {
    const auto vds = file("vds.h5ad");
    write_with_python(vds, R"PY(
mc.write_h5ad(path)
n = len(mc.csr(mc.base_matrix())[2])
with h5py.File(path, "r+") as f:
    layout = h5py.VirtualLayout(shape=(n,), dtype="f4")
    layout[:] = h5py.VirtualSource("missing-source.h5", "data", shape=(n,))
    del f["X/data"]
    f["X"].create_virtual_dataset("data", layout, fillvalue=0)
)PY");
    expect_format_error(vds, "/X/data", "virtual dataset");

    const auto external = file("external.h5ad");
    write_with_python(external, R"PY(
mc.write_h5ad(path)
n = len(mc.csr(mc.base_matrix())[2])
with h5py.File(path, "r+") as f:
    del f["X/data"]
    f["X"].create_dataset("data", shape=(n,), dtype="f4", external=[("missing.bin", 0, n * 4)])
)PY");
    expect_format_error(external, "/X/data", "external raw files");
}

// ---------------------------------------------------------------- names

TEST_F(HostileFiles, NamesThatAreNotUtf8AreRefused) {
    const auto h5ad = file("var-latin1.h5ad");
    write_with_python(h5ad, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    names = [f"g{i}".encode() for i in range(mc.GENES)]
    names[1] = b"caf\xe9"
    del f["var/_index"]
    f["var"].create_dataset("_index", data=np.array(names, dtype=object), dtype=h5py.string_dtype("utf-8"))
)PY");
    try {
        io::open_dataset(h5ad.string());
        ADD_FAILURE() << "accepted a name that is not UTF-8";
    } catch (const io::FormatError& error) {
        EXPECT_EQ(error.object(), "var names (entry 1)");
        EXPECT_NE(std::string(error.what()).find("'caf\\xe9'"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("not valid UTF-8"), std::string::npos) << error.what();
    }
    const auto folder = test::temp_dir("hostile-folder");
    write_with_python(folder, R"PY(
mc.write_mtx_folder(path, mc.base_matrix(), gz=False)
with open(path + "/features.tsv", "wb") as f:
    f.write(b"".join(b"E%d\tg\xff%d\tGene Expression\n" % (i, i) for i in range(mc.GENES)))
)PY");
    EXPECT_NE(refusal<io::FormatError>(folder).find("not valid UTF-8"), std::string::npos);
}

// ---------------------------------------------------------------- sizes

TEST_F(HostileFiles, SizesBeyondMemoryAreRefusedBeforeAllocating) {
    const auto mtx = file("huge.mtx");
    std::ofstream(mtx) << "%%MatrixMarket matrix coordinate integer general\n1000000000000 1000 0\n";
    const std::string message = refusal<io::FormatError>(mtx);
    EXPECT_NE(message.find("declares 1000000000000 cells x 1000 genes (needs "), std::string::npos) << message;
    EXPECT_NE(message.find("GiB"), std::string::npos) << message;

    const auto h5ad = file("huge.h5ad");
    write_with_python(h5ad, R"PY(
mc.write_h5ad(path)
with h5py.File(path, "r+") as f:
    f["X"].attrs["shape"] = np.array([2**40, mc.GENES])
    del f["X/indptr"]
    f["X"].create_dataset("indptr", shape=(2**40 + 1,), dtype="i8", chunks=(1024,))
    del f["obs"]
)PY");
    expect_format_error(h5ad, "/X", "declares 1099511627776 cells x 8 genes");
}

TEST_F(HostileFiles, EmptyMatricesAreRefusedByEveryReader) {
    const auto mtx = file("zero-genes.mtx");
    std::ofstream(mtx) << "%%MatrixMarket matrix coordinate integer general\n3 0 0\n";
    EXPECT_NE(refusal<io::FormatError>(mtx).find("empty matrix: 3 cells x 0 genes"), std::string::npos);
    const auto cells = file("zero-cells.mtx");
    std::ofstream(cells) << "%%MatrixMarket matrix coordinate integer general\n0 3 0\n";
    EXPECT_NE(refusal<io::FormatError>(cells).find("empty matrix: 0 cells x 3 genes"), std::string::npos);
    const auto tenx = file("zero.h5");
    write_with_python(tenx, R"PY(
mc.write_10x(path)
with h5py.File(path, "r+") as f:
    del f["matrix/shape"]
    f["matrix"].create_dataset("shape", data=np.array([mc.GENES, 0], np.int32))
)PY");
    expect_format_error(tenx, "/matrix/shape", "empty matrix");
}

// ---------------------------------------------------------------- locked files

TEST_F(HostileFiles, AFileOpenForWritingElsewhereIsReportedAsLockedNotCorrupt) {
    const auto path = file("busy.h5ad");
    write_with_python(path, "mc.write_h5ad(path)");
    const auto stop = file("busy.stop");
    const auto ready = file("busy.ready");
    // A writer holds the file open (HDF5 takes its lock) until `stop` appears.
    const std::string command = "/usr/bin/python3 -c " +
                                test::shell_quote("import h5py, os, sys, time\nf = h5py.File(sys.argv[1], 'r+')\n"
                                                  "open(sys.argv[3], 'w').close()\n"
                                                  "while not os.path.exists(sys.argv[2]): time.sleep(0.05)\nf.close()\n") +
                                " " + test::shell_quote(path.string()) + " " + test::shell_quote(stop.string()) + " " +
                                test::shell_quote(ready.string());
    std::thread writer([&] { test::run_command(command + " 2>&1"); });
    for (int wait = 0; wait < 400 && !fs::exists(ready); ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(ready)) << "the writer did not start";
    const std::string message = refusal<io::ReadError>(path);
    std::ofstream(stop).close();
    writer.join();
    EXPECT_NE(message.find("locked"), std::string::npos) << message;
    EXPECT_EQ(message.find("corrupt"), std::string::npos) << message;
    // Once the writer has closed it, the same file reads.
    EXPECT_EQ(io::open_dataset(path.string()).meta.shape.num_cells, 12);
}

}  // namespace
}  // namespace fathom
