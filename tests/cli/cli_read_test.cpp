// What fathom-cli reads and says about it: recipes on a non-integer X (a warning on
// stderr and in the report), repeated gene names made unique as anndata does (info,
// convert, run; --keep-duplicate-names), the read options (--layer, --feature-types).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/io/RowSource.hpp"
#include "tests/support/h5ad_fixtures.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"
#include "tests/support/tenx_fixtures.hpp"

namespace fathom {
namespace {

using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

/// 400 cells x 120 genes of Poisson counts, each value times a factor in [0.3, 1.7)
/// (float32: corrected or down-sampled counts), written by anndata.
std::string noninteger_input() {
    static const std::string path = [] {
        const auto file = test::temp_dir("cli-read-noninteger") / "noninteger.h5ad";
        const auto result = test::run_python(R"(
import sys
import anndata, numpy as np, pandas as pd, scipy.sparse as sp
rng = np.random.default_rng(3)
counts = rng.poisson(rng.gamma(0.6, 2.0, size=(1, 120)) * rng.uniform(0.5, 1.5, size=(400, 1))).astype(np.float32)
X = sp.csr_matrix(counts)
X.data = (X.data * rng.uniform(0.3, 1.7, size=X.data.shape)).astype(np.float32)
obs = pd.DataFrame(index=["cell%d" % c for c in range(400)])
var = pd.DataFrame(index=["gene%d" % g for g in range(120)])
anndata.AnnData(X=X, obs=obs, var=var).write_h5ad(sys.argv[1])
)",
                                             {file.string()});
        EXPECT_EQ(result.exit_code, 0) << result.output;
        return file.string();
    }();
    return path;
}

TEST(CliRead, RecipeOnNonIntegerXRunsAndWarns) {
    FATHOM_REQUIRE_PYTHON("anndata", "pandas", "scipy");
    const auto folder = test::temp_dir("cli-read-noninteger-run");
    // In memory, and streamed from the file (--memory-budget -1): the same warning, the
    // same results.
    std::vector<Dataset> outputs;
    for (const std::string budget : {"", " --memory-budget -1"}) {
        const auto out = (folder / ("out" + std::to_string(outputs.size()) + ".h5ad")).string();
        const auto report = (folder / "report.json").string();
        const auto result = run_command(cli + " run " + shell_quote(noninteger_input()) +
                                        " --recipe zheng17 --n-top-genes 40 --n-pcs 5" + budget + " --out " +
                                        shell_quote(out) + " --report " + shell_quote(report) + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << budget << "\n" << result.output;
        const std::string warning = "X holds non-integer values: Zheng17 expects raw counts";
        EXPECT_NE(result.output.find("fathom-cli: warning: " + warning), std::string::npos) << result.output;
        std::ifstream in(report);
        const auto json = nlohmann::json::parse(in);
        ASSERT_EQ(json.at("warnings").size(), 1u);
        EXPECT_EQ(json["warnings"][0].get<std::string>().rfind(warning, 0), 0u) << json["warnings"];
        EXPECT_EQ(json.at("ranks")[0].at("streamed").get<bool>(), !budget.empty());
        outputs.push_back(io::open_dataset(out).meta);
    }
    test::expect_tables_equal(outputs[1].obs, outputs[0].obs);
    test::expect_tables_equal(outputs[1].var, outputs[0].var);
    EXPECT_EQ(outputs[1].obsm.at("X_pca").values(), outputs[0].obsm.at("X_pca").values());
    // info says what X holds and how that was decided.
    const auto info = run_command(cli + " info " + shell_quote(noninteger_input()) + " 2>&1");
    ASSERT_EQ(info.exit_code, 0) << info.output;
    EXPECT_NE(info.output.find("values: non-integer counts (non-negative, not integer, values up to "), std::string::npos)
        << info.output;
    EXPECT_NE(info.output.find("recipe that fits: zheng17"), std::string::npos) << info.output;
}

/// A Matrix Market folder (10x layout, plain text) whose symbols repeat, including a
/// name that the renaming would produce ("LTB-1").
std::filesystem::path duplicate_names_folder() {
    const auto folder = test::temp_dir("cli-read-duplicates") / "mtx";
    std::filesystem::create_directories(folder);
    const std::vector<std::string> names = {"LTB", "CD3E", "LTB", "LTB-1", "LTB", "CD3E", "MS4A1"};
    std::ofstream features(folder / "features.tsv");
    for (std::size_t gene = 0; gene < names.size(); ++gene)
        features << "ENSG" << gene << "\t" << names[gene] << "\tGene Expression\n";
    std::ofstream barcodes(folder / "barcodes.tsv");
    for (int cell = 0; cell < 5; ++cell) barcodes << "CELL" << cell << "-1\n";
    std::ofstream matrix(folder / "matrix.mtx");
    matrix << "%%MatrixMarket matrix coordinate integer general\n" << names.size() << " 5 " << names.size() * 5 << "\n";
    for (std::size_t gene = 0; gene < names.size(); ++gene)
        for (int cell = 0; cell < 5; ++cell) matrix << gene + 1 << " " << cell + 1 << " " << gene + cell + 1 << "\n";
    return folder;
}

TEST(CliRead, DuplicateGeneNamesMadeUniqueAsAnndata) {
    FATHOM_REQUIRE_PYTHON("anndata");
    const auto input = duplicate_names_folder();
    auto result = run_command(cli + " info " + shell_quote(input.string()) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("var names: 3 duplicate gene names made unique"), std::string::npos) << result.output;
    result = run_command(cli + " info " + shell_quote(input.string()) + " --keep-duplicate-names 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("var names: 3 duplicate gene names kept as stored"), std::string::npos) << result.output;

    // convert writes anndata's var_names_make_unique names, with the gene ids beside them.
    const auto out = (input.parent_path() / "out.h5ad").string();
    result = run_command(cli + " convert " + shell_quote(input.string()) + " " + shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("3 duplicate gene names made unique"), std::string::npos) << result.output;
    const auto check = test::run_python(R"(
import sys, warnings
import anndata, pandas as pd
warnings.simplefilter("ignore")
written = anndata.read_h5ad(sys.argv[1])
stored = pd.read_csv(sys.argv[2] + "/features.tsv", sep="\t", header=None)
expected = anndata.AnnData(var=pd.DataFrame(index=list(stored[1])))
expected.var_names_make_unique()
assert list(written.var_names) == list(expected.var_names), (list(written.var_names), list(expected.var_names))
assert list(written.var["gene_ids"]) == list(stored[0]), list(written.var["gene_ids"])
assert written.var_names.is_unique
print("ok", list(written.var_names))
)",
                                          {out, input.string()});
    EXPECT_EQ(check.exit_code, 0) << check.output;
    // --keep-duplicate-names keeps them.
    result = run_command(cli + " convert " + shell_quote(input.string()) + " " + shell_quote(out) +
                         " --keep-duplicate-names 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto kept = test::run_python(R"(
import sys, warnings
import anndata
warnings.simplefilter("ignore")
assert list(anndata.read_h5ad(sys.argv[1]).var_names) == ["LTB", "CD3E", "LTB", "LTB-1", "LTB", "CD3E", "MS4A1"]
)",
                                       {out});
    EXPECT_EQ(kept.exit_code, 0) << kept.output;
}

// X absent (anndata X = None): run analyses raw/X and says so; without raw/X it says what
// to choose. --layer NAME analyses a layer.
TEST(CliRead, AbsentXUsesRawAndLayerChoosesALayer) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const auto folder = test::temp_dir("cli-read-absent-x");
    const auto with_raw = folder / "with_raw.h5ad", without_raw = folder / "without_raw.h5ad";
    const auto written = test::run_python(R"(
import sys
import anndata, h5py, numpy as np, pandas as pd, scipy.sparse as sp
rng = np.random.default_rng(8)
counts = sp.csr_matrix(rng.poisson(1.5, size=(300, 80)).astype(np.float32))
obs = pd.DataFrame(index=["c%d" % c for c in range(300)]); var = pd.DataFrame(index=["g%d" % g for g in range(80)])
adata = anndata.AnnData(X=counts.copy(), obs=obs, var=var, layers={"counts": counts.copy()})
adata.raw = adata
adata.write_h5ad(sys.argv[1])
adata2 = anndata.AnnData(X=counts.copy(), obs=obs, var=var, layers={"counts": counts.copy()})
adata2.write_h5ad(sys.argv[2])
for path in sys.argv[1:3]:
    with h5py.File(path, "a") as f:
        del f["X"]
)",
                                          {with_raw.string(), without_raw.string()});
    ASSERT_EQ(written.exit_code, 0) << written.output;
    const auto out = (folder / "out.h5ad").string();
    auto result = run_command(cli + " run " + shell_quote(with_raw.string()) + " --n-top-genes 20 --n-pcs 5 --out " +
                              shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("fathom-cli: X is absent (anndata X = None): analysing raw/X"), std::string::npos)
        << result.output;
    result = run_command(cli + " run " + shell_quote(without_raw.string()) + " --n-top-genes 20 --n-pcs 5 --out " +
                         shell_quote(out) + " 2>&1");
    EXPECT_EQ(result.exit_code, 3) << result.output;
    EXPECT_NE(result.output.find("/X: absent (anndata X = None), and the file has no raw/X: nothing to analyse "
                                 "(choose a layer: --layer NAME)"),
              std::string::npos)
        << result.output;
    result = run_command(cli + " run " + shell_quote(without_raw.string()) +
                         " --layer counts --n-top-genes 20 --n-pcs 5 --out " + shell_quote(out) + " 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_command(cli + " info " + shell_quote(without_raw.string()) + " --layer counts 2>&1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("matrix: layers/counts"), std::string::npos) << result.output;
    result = run_command(cli + " info " + shell_quote(without_raw.string()) + " --layer counts --matrix raw 2>&1");
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--layer counts and --matrix raw name two matrices"), std::string::npos) << result.output;
}

// 10x HDF5 with two feature types and two genomes: Gene Expression by default (scanpy's
// gex_only), --feature-types "" keeps every feature, --genome one genome's; scanpy
// (anndata) reads the converted files with the same features.
TEST(CliRead, TenxFeatureTypesAndGenomes) {
    FATHOM_REQUIRE_PYTHON("anndata");
    const auto folder = test::temp_dir("cli-read-10x-types");
    const auto fixture = test::make_tenx_fixture(30, 24, 9, 4, 0.3, true);
    const auto input = folder / "multi.h5";
    test::write_10x_h5_v3(input, test::tenx_h5_group(fixture));
    const auto check = [&](const std::string& options, const std::string& feature_type, const std::string& genome) {
        const auto out = (folder / "out.h5ad").string();
        const auto result = run_command(cli + " convert " + shell_quote(input.string()) + " " + shell_quote(out) + " " +
                                        options + " 2>&1");
        ASSERT_EQ(result.exit_code, 0) << options << ": " << result.output;
        std::string ids;
        for (const auto feature : test::kept_features(fixture, feature_type, genome))
            ids += (ids.empty() ? "" : ",") + fixture.feature_ids[static_cast<std::size_t>(feature)];
        const auto read = test::run_python(R"(
import sys, warnings
import anndata
warnings.simplefilter("ignore")
adata = anndata.read_h5ad(sys.argv[1])
assert ",".join(adata.var["gene_ids"]) == sys.argv[2], (list(adata.var["gene_ids"]), sys.argv[2])
assert adata.var_names.is_unique
)",
                                           {out, ids});
        EXPECT_EQ(read.exit_code, 0) << options << ": " << read.output;
    };
    check("", "Gene Expression", "");
    check("--feature-types ''", "", "");
    check("--feature-types 'Antibody Capture'", "Antibody Capture", "");
    check("--feature-types '' --genome mm10", "", "mm10");
}

}  // namespace
}  // namespace fathom
