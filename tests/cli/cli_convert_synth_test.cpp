// fathom-cli synth and convert: outputs anndata / h5py read back, exit codes and
// messages naming the option.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

TEST(CliSynth, SynthThenConvertGiveFilesAnndataReads) {
    const auto folder = test::temp_dir("cli-synth");
    const auto tenx = (folder / "synth.h5").string();
    const auto direct = (folder / "synth.h5ad").string();
    const auto converted = (folder / "converted.h5ad").string();

    const auto made = run_command(cli + " synth --cells 400 --genes 2000 --seed 5 --cell-types 4 --out " +
                                  shell_quote(tenx) + " 2>&1");
    ASSERT_EQ(made.exit_code, 0) << made.output;
    EXPECT_NE(made.output.find("400 cells x 2000 genes"), std::string::npos) << made.output;
    EXPECT_NE(made.output.find("non-zeros"), std::string::npos) << made.output;
    EXPECT_NE(made.output.find("synth: 400 / 400 cells"), std::string::npos) << "progress line: " << made.output;
    const auto same = run_command(cli + " synth --cells 400 --genes 2000 --seed 5 --cell-types 4 --quiet --out " +
                                  shell_quote(direct) + " 2>&1");
    ASSERT_EQ(same.exit_code, 0) << same.output;
    EXPECT_EQ(same.output.find("synth:"), std::string::npos) << "--quiet prints no progress";
    const auto convert = run_command(cli + " convert " + shell_quote(tenx) + " " + shell_quote(converted) + " 2>&1");
    ASSERT_EQ(convert.exit_code, 0) << convert.output;

    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const auto result = test::run_python(R"PY(
import sys, json, h5py, numpy as np, scipy.sparse as sp, anndata as ad
with h5py.File(sys.argv[1], "r") as f:
    m = f["matrix"]
    M, N = m["shape"][:]
    X = sp.csr_matrix((m["data"][:].astype(np.float32), m["indices"][:], m["indptr"][:]), shape=(N, M))
    barcodes = m["barcodes"][:].astype(str).tolist()
    names = m["features"]["name"][:].astype(str).tolist()
direct = ad.read_h5ad(sys.argv[2])
converted = ad.read_h5ad(sys.argv[3])
print("\nFATHOM-JSON:" + json.dumps({
    "tenx_shape": [int(N), int(M)], "tenx_sum": float(X.sum()),
    "direct_shape": list(direct.shape), "converted_shape": list(converted.shape),
    "direct_same": bool((direct.X != X).nnz == 0), "converted_same": bool((converted.X != X).nnz == 0),
    "direct_names": list(direct.obs_names) == barcodes and list(direct.var_names) == names,
    "converted_names": list(converted.obs_names) == barcodes and list(converted.var_names) == names,
    "types": [str(c) for c in direct.obs["cell_type"].cat.categories],
    "converted_gene_ids": "gene_ids" in converted.var.columns,
    "mt_genes": int(converted.var_names.str.startswith("MT-").sum())}))
)PY",
                                         {tenx, direct, converted});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto marker = result.output.rfind("\nFATHOM-JSON:");
    ASSERT_NE(marker, std::string::npos) << result.output;
    const auto got = nlohmann::json::parse(result.output.substr(marker + 13));
    EXPECT_EQ(got["tenx_shape"], nlohmann::json::array({400, 2000}));
    EXPECT_GT(got["tenx_sum"].get<double>(), 400.0 * 1000.0);
    EXPECT_EQ(got["direct_shape"], nlohmann::json::array({400, 2000}));
    EXPECT_EQ(got["converted_shape"], nlohmann::json::array({400, 2000}));
    EXPECT_TRUE(got["direct_same"].get<bool>()) << "synth .h5ad == synth .h5 for one seed";
    EXPECT_TRUE(got["converted_same"].get<bool>()) << "convert keeps every count";
    EXPECT_TRUE(got["direct_names"].get<bool>());
    EXPECT_TRUE(got["converted_names"].get<bool>());
    EXPECT_EQ(got["types"], nlohmann::json::array({"type01", "type02", "type03", "type04"}));
    EXPECT_TRUE(got["converted_gene_ids"].get<bool>());
    EXPECT_EQ(got["mt_genes"], 13);
}

TEST(CliSynth, BadOptionsExitTwoNamingTheOption) {
    const auto folder = test::temp_dir("cli-synth-bad");
    const auto out = [&](const std::string& name) { return " --out " + shell_quote((folder / name).string()); };
    const std::vector<std::pair<std::string, std::string>> cases{
        {"--cells 0" + out("a.h5"), "--cells"},
        {"--cells many" + out("a.h5"), "--cells"},
        {out("a.h5"), "--cells"},
        {"--cells 10", "--out"},
        {"--cells 10 --genes 10" + out("a.h5"), "--genes"},
        {"--cells 10" + out("a.csv"), "--out"},
        {"--cells 10 --cell-types 0" + out("a.h5"), "--cell-types"},
        {"--cells 10 --genes 60 --cell-types 48" + out("a.h5"), "--cell-types"},
        {"--cells 10 --gzip 11" + out("a.h5"), "--gzip"},
    };
    for (const auto& [args, option] : cases) {
        const auto result = run_command(cli + " synth " + args + " 2>&1");
        EXPECT_EQ(result.exit_code, 2) << args << "\n" << result.output;
        EXPECT_NE(result.output.find(option), std::string::npos) << args << " should name " << option << ":\n"
                                                                 << result.output;
    }
    EXPECT_TRUE(fs::is_empty(folder)) << "nothing written for bad options";
}

TEST(CliSynth, UnwritableDestinationExitsThreeNamingThePath) {
    const auto folder = test::temp_dir("cli-synth-dest");
    const auto out = (folder / "missing" / "a.h5").string();
    const auto result = run_command(cli + " synth --cells 10 --genes 100 --quiet --out " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find(out), std::string::npos) << result.output;
}

// Scanpy's tutorial file: uns['rank_genes_groups'] holds structured arrays whose field
// names (cell types) contain '/'. They convert, and anndata reads them back unchanged.
TEST(CliConvert, StructuredArraysWithSlashesInTheirFieldNamesRoundTrip) {
    const auto input = test::shared_data("scanpy_pbmc68k_reduced/10x_pbmc68k_reduced.h5ad");
    FATHOM_REQUIRE_PATH(input);
    FATHOM_REQUIRE_PYTHON("anndata", "h5py");
    const auto out = (test::temp_dir("cli-convert-recarray") / "pbmc68k.h5ad").string();
    auto result = run_command(cli + " convert " + shell_quote(input.string()) + " " + shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = test::run_python(R"PY(
import sys, warnings
import anndata
warnings.simplefilter("ignore")
ours, theirs = anndata.read_h5ad(sys.argv[1]), anndata.read_h5ad(sys.argv[2])
for key in ("names", "scores"):
    a, b = ours.uns["rank_genes_groups"][key], theirs.uns["rank_genes_groups"][key]
    assert a.dtype.names == b.dtype.names, (key, a.dtype.names, b.dtype.names)
    for field in b.dtype.names:
        assert (a[field] == b[field]).all(), (key, field)
assert "CD4+/CD25 T Reg" in ours.uns["rank_genes_groups"]["names"].dtype.names
print("ok", len(ours.uns["rank_genes_groups"]["names"].dtype.names))
)PY",
                              {out, input.string()});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("ok 10"), std::string::npos) << result.output;
}

// A structured array of mixed fields is read as a dict of its fields; a field name with
// '/' cannot be a group member name, so it is renamed with a warning instead of
// stopping the whole write.
TEST(CliConvert, AnUnsKeyHdf5CannotHoldIsRenamedWithAWarning) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "numpy");
    const auto folder = test::temp_dir("cli-convert-rename");
    const auto input = (folder / "mixed.h5ad").string(), out = (folder / "out.h5ad").string();
    auto result = test::run_python(R"PY(
import sys
import anndata, h5py, numpy as np
anndata.AnnData(np.ones((3, 2), dtype=np.float32)).write_h5ad(sys.argv[1])
with h5py.File(sys.argv[1], "r+") as f:
    d = f["uns"].create_dataset("mixed", data=np.array([(1, b"x"), (2, b"y")], dtype=[("a/b", "i8"), ("c", "S1")]))
    d.attrs["encoding-type"] = "rec-array"
    d.attrs["encoding-version"] = "0.2.0"
)PY",
                                   {input});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_command(cli + " convert " + shell_quote(input) + " " + shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("warning: uns/mixed: 'a/b' was written as 'a_b'"), std::string::npos) << result.output;
    result = test::run_python(R"PY(
import sys, warnings
import anndata
warnings.simplefilter("ignore")
mixed = anndata.read_h5ad(sys.argv[1]).uns["mixed"]
print(sorted(mixed.keys()), list(mixed["a_b"]))
)PY",
                              {out});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("['a_b', 'c'] [1, 2]"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace fathom
