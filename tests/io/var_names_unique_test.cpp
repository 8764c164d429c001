// Repeated var names made unique as anndata's var_names_make_unique does (the second
// LTB becomes LTB-1, or LTB-2 when LTB-1 is already a name), checked against anndata's
// own result on an anndata-written file.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

TEST(VarNamesMakeUnique, GivesAnndatasNames) {
    FATHOM_REQUIRE_PYTHON("anndata", "pandas", "scipy");
    const auto folder = test::temp_dir("var-names-unique");
    const auto path = folder / "duplicates.h5ad", names_path = folder / "names.json";
    const auto written = test::run_python(R"(
import json, sys, warnings
import anndata, numpy as np, pandas as pd, scipy.sparse as sp
warnings.simplefilter("ignore")
names = ["LTB", "CD3E", "LTB", "LTB-1", "LTB", "CD3E", "MT-1", "MT", "MT", "MT-1", "X-1-1", "X-1", "X", "X", "X-1", "LTB"]
X = sp.csr_matrix(np.arange(3 * len(names), dtype=np.float32).reshape(3, len(names)))
ids = ["ENSG%03d" % gene for gene in range(len(names))]
anndata.AnnData(X=X, var=pd.DataFrame({"gene_ids": ids}, index=names)).write_h5ad(sys.argv[1])
adata = anndata.read_h5ad(sys.argv[1])
stored = list(adata.var_names)
adata.var_names_make_unique()
json.dump({"stored": stored, "unique": list(adata.var_names), "gene_ids": list(adata.var["gene_ids"])},
          open(sys.argv[2], "w"))
)",
                                          {path.string(), names_path.string()});
    ASSERT_EQ(written.exit_code, 0) << written.output;
    std::ifstream in(names_path);
    const auto expected = nlohmann::json::parse(in);
    const auto stored = expected["stored"].get<std::vector<std::string>>();
    const auto unique = expected["unique"].get<std::vector<std::string>>();

    io::ReadOptions options;
    options.make_var_names_unique = true;
    const Dataset made_unique = io::open_dataset(path.string(), options).meta;
    EXPECT_EQ(made_unique.var.index(), unique);
    std::int64_t renamed = 0;
    for (std::size_t gene = 0; gene < stored.size(); ++gene) renamed += stored[gene] != unique[gene];
    EXPECT_EQ(made_unique.num_var_names_made_unique, renamed);
    // The gene ids stay beside the new names.
    const auto* ids = std::get_if<StringColumn>(&made_unique.var.find("gene_ids")->data);
    ASSERT_NE(ids, nullptr);
    EXPECT_EQ(ids->values, expected["gene_ids"].get<std::vector<std::string>>());

    // Off: the names as stored.
    const Dataset as_stored = io::open_dataset(path.string()).meta;
    EXPECT_EQ(as_stored.var.index(), stored);
    EXPECT_EQ(as_stored.num_var_names_made_unique, 0);
}

}  // namespace
}  // namespace fathom
