// obs columns in anndata 0.10+'s encodings (nullable-integer, nullable-boolean,
// string-array, categorical with integer categories), written here with h5py exactly as
// the anndata 0.10 on-disk spec lays them out (Debian's anndata 0.8 cannot write them).
#include <gtest/gtest.h>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

TEST(H5adNewerEncodings, NullableStringArrayAndNumericCategoriesRead) {
    FATHOM_REQUIRE_PYTHON("h5py", "numpy");
    const auto path = test::temp_dir("h5ad-newer-encodings") / "newer.h5ad";
    const auto written = test::run_python(R"(
import sys
import h5py, numpy as np
str_dtype = h5py.string_dtype("utf-8")
def attrs(node, kind, version):
    node.attrs["encoding-type"] = kind
    node.attrs["encoding-version"] = version
with h5py.File(sys.argv[1], "w") as f:
    attrs(f, "anndata", "0.1.0")
    X = f.create_group("X"); attrs(X, "csr_matrix", "0.1.0"); X.attrs["shape"] = (4, 2)
    X["data"] = np.array([1, 2, 3], dtype=np.float32); X["indices"] = np.array([0, 1, 1], dtype=np.int32)
    X["indptr"] = np.array([0, 1, 2, 2, 3], dtype=np.int64)
    obs = f.create_group("obs"); attrs(obs, "dataframe", "0.2.0")
    obs.attrs["_index"] = "_index"
    obs.attrs["column-order"] = np.array(["count", "flag", "label", "batch"], dtype=object).astype(str_dtype)
    index = obs.create_dataset("_index", data=np.array(["a", "b", "c", "d"], dtype=object), dtype=str_dtype)
    attrs(index, "string-array", "0.2.0")
    count = obs.create_group("count"); attrs(count, "nullable-integer", "0.1.0")
    count["values"] = np.array([5, 0, 7, 9], dtype=np.int64); count["mask"] = np.array([False, True, False, False])
    flag = obs.create_group("flag"); attrs(flag, "nullable-boolean", "0.1.0")
    flag["values"] = np.array([True, False, False, True]); flag["mask"] = np.array([False, False, True, False])
    label = obs.create_dataset("label", data=np.array(["x", "y\u00e9", "z", "x"], dtype=object), dtype=str_dtype)
    attrs(label, "string-array", "0.2.0")
    batch = obs.create_group("batch"); attrs(batch, "categorical", "0.2.0"); batch.attrs["ordered"] = False
    batch["codes"] = np.array([1, 0, -1, 1], dtype=np.int8)
    batch["categories"] = np.array([10, 20], dtype=np.int64)
    var = f.create_group("var"); attrs(var, "dataframe", "0.2.0"); var.attrs["_index"] = "_index"
    var.attrs["column-order"] = np.array([], dtype=str_dtype)
    vindex = var.create_dataset("_index", data=np.array(["g1", "g2"], dtype=object), dtype=str_dtype)
    attrs(vindex, "string-array", "0.2.0")
    for group in ("obsm", "varm", "obsp", "varp", "layers", "uns"):
        attrs(f.create_group(group), "dict", "0.1.0")
)",
                                          {path.string()});
    ASSERT_EQ(written.exit_code, 0) << written.output;
    const Dataset meta = io::open_dataset(path.string()).meta;
    EXPECT_EQ(meta.obs.index(), (std::vector<std::string>{"a", "b", "c", "d"}));
    const auto& count = std::get<IntColumn>(meta.obs.find("count")->data);
    EXPECT_EQ(count.values[0], 5);
    EXPECT_EQ(count.values[2], 7);
    EXPECT_EQ(count.missing, (std::vector<std::uint8_t>{0, 1, 0, 0}));
    const auto& flag = std::get<BoolColumn>(meta.obs.find("flag")->data);
    EXPECT_EQ(flag.values[0], 1);
    EXPECT_EQ(flag.values[3], 1);
    EXPECT_EQ(flag.missing, (std::vector<std::uint8_t>{0, 0, 1, 0}));
    EXPECT_EQ(std::get<StringColumn>(meta.obs.find("label")->data).values,
              (std::vector<std::string>{"x", "y\xc3\xa9", "z", "x"}));
    // pandas shows integer categories as their numbers.
    const auto& batch = std::get<CategoricalColumn>(meta.obs.find("batch")->data);
    EXPECT_EQ(batch.categories, (std::vector<std::string>{"10", "20"}));
    EXPECT_EQ(batch.codes, (std::vector<std::int32_t>{1, 0, -1, 1}));
}

}  // namespace
}  // namespace fathom
