// io::write_synthetic: determinism (seed, thread count, block size), the layout of both
// outputs, and the biology the model promises (density, MT- fraction, markers,
// over-dispersion), checked on the files read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>
#include <tbb/global_control.h>

#include "core/types/JobContext.hpp"
#include "core/io/RowSource.hpp"
#include "core/io/detail/hdf5.hpp"
#include "core/io/synth.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom::io {
namespace {

namespace fs = std::filesystem;

/// A CSR matrix read back with our HDF5 layer (independent of the readers).
struct StoredCsr {
    std::vector<std::int64_t> indptr;
    std::vector<std::int64_t> indices;
    std::vector<double> data;
    std::vector<std::int32_t> cell_types;  ///< h5ad only
    std::vector<std::int64_t> low_quality; ///< h5ad only
    std::vector<std::string> gene_names;
    std::vector<std::string> barcodes;
    std::int64_t num_cells() const { return static_cast<std::int64_t>(indptr.size()) - 1; }
};

StoredCsr read_stored(const fs::path& path) {
    const auto file = h5::File::open_read(path.string());
    StoredCsr out;
    if (file.exists("/matrix")) {
        out.indptr = file.read_all<std::int64_t>("/matrix/indptr");
        out.indices = file.read_all<std::int64_t>("/matrix/indices");
        out.data = file.read_all<double>("/matrix/data");
        out.gene_names = file.read_strings("/matrix/features/name");
        out.barcodes = file.read_strings("/matrix/barcodes");
    } else {
        out.indptr = file.read_all<std::int64_t>("/X/indptr");
        out.indices = file.read_all<std::int64_t>("/X/indices");
        out.data = file.read_all<double>("/X/data");
        out.cell_types = file.read_all<std::int32_t>("/obs/cell_type/codes");
        out.low_quality = file.read_all<std::int64_t>("/obs/low_quality");
        out.gene_names = file.read_strings("/var/_index");
        out.barcodes = file.read_strings("/obs/_index");
    }
    return out;
}

SynthOptions small_options(std::uint64_t seed = 7) {
    SynthOptions options;
    options.num_cells = 1500;
    options.num_genes = 2000;
    options.num_cell_types = 5;
    options.seed = seed;
    options.cells_per_block = 256;
    return options;
}

std::vector<fs::path> folder_entries(const fs::path& folder) {
    std::vector<fs::path> entries;
    for (const auto& entry : fs::directory_iterator(folder)) entries.push_back(entry.path());
    return entries;
}

TEST(Synth, SameSeedSameMatrixWhateverThreadsOrBlocks) {
    const auto folder = test::temp_dir("synth-determinism");
    SynthOptions options = small_options();
    options.num_cells = 700;
    const auto reference = folder / "a.h5ad";
    write_synthetic(reference.string(), options);
    const StoredCsr expected = read_stored(reference);

    write_synthetic((folder / "b.h5ad").string(), options);
    const StoredCsr again = read_stored(folder / "b.h5ad");
    EXPECT_EQ(again.indptr, expected.indptr);
    EXPECT_EQ(again.indices, expected.indices);
    EXPECT_EQ(again.data, expected.data);
    EXPECT_EQ(again.cell_types, expected.cell_types);

    SynthOptions other_blocks = options;
    other_blocks.cells_per_block = 33;
    write_synthetic((folder / "c.h5ad").string(), other_blocks);
    EXPECT_EQ(read_stored(folder / "c.h5ad").data, expected.data) << "block size must not change the output";
    {
        tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
        write_synthetic((folder / "d.h5ad").string(), options);
    }
    const StoredCsr serial = read_stored(folder / "d.h5ad");
    EXPECT_EQ(serial.indices, expected.indices) << "thread count must not change the output";
    EXPECT_EQ(serial.data, expected.data);

    SynthOptions other_seed = options;
    other_seed.seed = 8;
    write_synthetic((folder / "e.h5ad").string(), other_seed);
    const StoredCsr different = read_stored(folder / "e.h5ad");
    EXPECT_NE(different.data, expected.data);
    EXPECT_NE(different.cell_types, expected.cell_types);
}

TEST(Synth, TenxAndH5adHoldTheSameCounts) {
    const auto folder = test::temp_dir("synth-formats");
    SynthOptions options = small_options();
    options.num_cells = 500;
    write_synthetic((folder / "s.h5").string(), options);
    write_synthetic((folder / "s.h5ad").string(), options);
    const StoredCsr tenx = read_stored(folder / "s.h5");
    const StoredCsr anndata = read_stored(folder / "s.h5ad");
    EXPECT_EQ(tenx.indptr, anndata.indptr);
    EXPECT_EQ(tenx.indices, anndata.indices);
    EXPECT_EQ(tenx.data, anndata.data);
    EXPECT_EQ(tenx.gene_names, anndata.gene_names);
    EXPECT_EQ(tenx.barcodes, anndata.barcodes);

    // CellRanger 3 layout.
    const auto file = h5::File::open_read((folder / "s.h5").string());
    EXPECT_EQ(file.read_all<std::int64_t>("/matrix/shape"), (std::vector<std::int64_t>{2000, 500}));
    const auto data_info = file.dataset_info("/matrix/data");
    EXPECT_EQ(data_info.type_class, h5::TypeClass::Integer);
    EXPECT_EQ(data_info.type_size, 4u);
    EXPECT_EQ(file.dataset_info("/matrix/indices").type_size, 8u);
    EXPECT_EQ(file.dataset_info("/matrix/indptr").type_size, 8u);
    EXPECT_EQ(file.dataset_info("/matrix/barcodes").type_class, h5::TypeClass::String);
    EXPECT_EQ(file.dataset_info("/matrix/barcodes").type_size, 18u) << "numpy 'S18' as CellRanger";
    EXPECT_EQ(file.read_strings("/matrix/features/_all_tag_keys"), std::vector<std::string>{"genome"});
    const auto types = file.read_strings("/matrix/features/feature_type");
    EXPECT_TRUE(std::all_of(types.begin(), types.end(), [](const auto& type) { return type == "Gene Expression"; }));
    EXPECT_EQ(file.read_strings("/matrix/features/id").front(), "SYNG00000000001");
    EXPECT_EQ(file.attribute_string("/", "filetype"), "matrix");
}

TEST(Synth, CountsLookLike10xData) {
    // 28k genes as in a real 10x run; few cells keep it fast.
    const auto folder = test::temp_dir("synth-realism");
    SynthOptions options;
    options.num_cells = 600;
    options.num_genes = 28000;
    options.seed = 3;
    const auto path = folder / "s.h5ad";
    const SynthSummary summary = write_synthetic(path.string(), options);
    const StoredCsr stored = read_stored(path);
    ASSERT_EQ(stored.num_cells(), 600);
    EXPECT_EQ(summary.nnz, static_cast<std::int64_t>(stored.data.size()));
    EXPECT_EQ(summary.num_genes, 28000);

    std::vector<double> library(600, 0.0), mito(600, 0.0), detected(600, 0.0);
    const std::int64_t first_mito = 28000 - 13;
    for (std::int64_t cell = 0; cell < 600; ++cell) {
        const auto begin = stored.indptr[static_cast<std::size_t>(cell)];
        const auto end = stored.indptr[static_cast<std::size_t>(cell) + 1];
        detected[static_cast<std::size_t>(cell)] = static_cast<double>(end - begin);
        std::int64_t previous = -1;
        for (auto entry = begin; entry < end; ++entry) {
            const double value = stored.data[static_cast<std::size_t>(entry)];
            const std::int64_t gene = stored.indices[static_cast<std::size_t>(entry)];
            ASSERT_GT(value, 0.0);
            ASSERT_EQ(value, std::floor(value)) << "raw counts are integers";
            ASSERT_GT(gene, previous) << "sorted, unique indices";
            previous = gene;
            library[static_cast<std::size_t>(cell)] += value;
            if (gene >= first_mito) mito[static_cast<std::size_t>(cell)] += value;
        }
    }
    auto median = [](std::vector<double> values) {
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
        return values[values.size() / 2];
    };
    const double density = static_cast<double>(stored.data.size()) / (600.0 * 28000.0);
    EXPECT_GT(density, 0.04);
    EXPECT_LT(density, 0.10);
    EXPECT_GT(median(detected), 1500.0);
    EXPECT_LT(median(detected), 2500.0);
    EXPECT_GT(median(library), 3000.0);
    EXPECT_LT(median(library), 5000.0);

    // MT- genes: the last 13, ~2-8% of counts in normal cells, higher in the flagged ones.
    for (std::int64_t gene = first_mito; gene < 28000; ++gene)
        EXPECT_EQ(stored.gene_names[static_cast<std::size_t>(gene)].rfind("MT-", 0), 0u);
    EXPECT_EQ(std::count_if(stored.gene_names.begin(), stored.gene_names.end(),
                            [](const std::string& name) { return name.rfind("MT-", 0) == 0; }),
              13);
    std::vector<double> normal_fraction, low_fraction;
    for (std::size_t cell = 0; cell < 600; ++cell)
        (stored.low_quality[cell] ? low_fraction : normal_fraction).push_back(mito[cell] / library[cell]);
    ASSERT_FALSE(low_fraction.empty());
    EXPECT_GT(median(normal_fraction), 0.025);
    EXPECT_LT(median(normal_fraction), 0.06);
    EXPECT_GT(*std::min_element(low_fraction.begin(), low_fraction.end()), 0.1);
    EXPECT_LT(static_cast<double>(low_fraction.size()) / 600.0, 0.12);
}

TEST(Synth, MarkersAreUpInTheirTypeAndCountsAreOverdispersed) {
    const auto folder = test::temp_dir("synth-markers");
    const SynthOptions options = small_options(11);
    const auto path = folder / "s.h5ad";
    write_synthetic(path.string(), options);
    const StoredCsr stored = read_stored(path);
    const SynthModel model = synthetic_model(options);
    ASSERT_EQ(model.markers.size(), 5u);
    ASSERT_EQ(model.gene_names, stored.gene_names);

    const auto num_genes = static_cast<std::size_t>(options.num_genes);
    std::vector<std::vector<double>> sums(5, std::vector<double>(num_genes, 0.0)), squares = sums;
    std::vector<double> cells_of_type(5, 0.0);
    for (std::int64_t cell = 0; cell < stored.num_cells(); ++cell) {
        const auto type = static_cast<std::size_t>(stored.cell_types[static_cast<std::size_t>(cell)]);
        ASSERT_LT(type, 5u);
        cells_of_type[type] += 1.0;
        for (auto entry = stored.indptr[static_cast<std::size_t>(cell)];
             entry < stored.indptr[static_cast<std::size_t>(cell) + 1]; ++entry) {
            const double value = stored.data[static_cast<std::size_t>(entry)];
            const auto gene = static_cast<std::size_t>(stored.indices[static_cast<std::size_t>(entry)]);
            sums[type][gene] += value;
            squares[type][gene] += value * value;
        }
    }
    for (std::size_t type = 0; type < 5; ++type) {
        ASSERT_GT(cells_of_type[type], 30.0) << "every type is populated";
        const auto& markers = model.markers[type];
        ASSERT_GE(markers.size(), 30u);
        double inside = 0.0, outside = 0.0;
        const double others = static_cast<double>(stored.num_cells()) - cells_of_type[type];
        for (auto gene : markers) {
            inside += sums[type][static_cast<std::size_t>(gene)] / cells_of_type[type];
            double rest = 0.0;
            for (std::size_t other = 0; other < 5; ++other)
                if (other != type) rest += sums[other][static_cast<std::size_t>(gene)];
            outside += rest / others;
        }
        EXPECT_GT(inside, 5.0 * outside) << "type " << type << ": markers' mean " << inside / markers.size()
                                         << " inside vs " << outside / markers.size() << " elsewhere";
    }
    // Negative binomial: variance well above the mean for the highly expressed genes
    // within one type (Poisson would give a ratio of 1).
    const std::size_t largest = static_cast<std::size_t>(
        std::max_element(cells_of_type.begin(), cells_of_type.end()) - cells_of_type.begin());
    std::vector<std::size_t> genes(num_genes);
    std::iota(genes.begin(), genes.end(), 0);
    std::sort(genes.begin(), genes.end(), [&](auto a, auto b) { return sums[largest][a] > sums[largest][b]; });
    const double n = cells_of_type[largest];
    for (std::size_t rank = 0; rank < 10; ++rank) {
        const std::size_t gene = genes[rank];
        const double mean = sums[largest][gene] / n;
        const double variance = squares[largest][gene] / n - mean * mean;
        EXPECT_GT(variance / mean, 1.5) << "gene " << model.gene_names[gene] << " mean " << mean;
    }
}

TEST(Synth, BarcodesAreUniqueAndLookLike10x) {
    const std::regex pattern("[ACGT]{16}-1");
    std::set<std::string> seen;
    for (std::int64_t cell = 0; cell < 200000; ++cell) {
        const std::string barcode = synthetic_barcode(cell, 5);
        if (cell < 1000) {
            ASSERT_TRUE(std::regex_match(barcode, pattern)) << barcode;
        }
        seen.insert(barcode);
    }
    EXPECT_EQ(seen.size(), 200000u);
    EXPECT_NE(synthetic_barcode(0, 5), synthetic_barcode(0, 6));
}

TEST(Synth, ValidationNamesTheOptionAndCreatesNothing) {
    const auto folder = test::temp_dir("synth-validate");
    auto message_of = [&](const SynthOptions& options, const std::string& name) -> std::string {
        try {
            write_synthetic((folder / name).string(), options);
        } catch (const std::invalid_argument& error) {
            return error.what();
        }
        return "no error";
    };
    SynthOptions no_cells = small_options();
    no_cells.num_cells = 0;
    EXPECT_NE(message_of(no_cells, "a.h5").find("--cells"), std::string::npos);
    SynthOptions few_genes = small_options();
    few_genes.num_genes = 20;
    EXPECT_NE(message_of(few_genes, "a.h5").find("--genes"), std::string::npos);
    SynthOptions many_types = small_options();
    many_types.num_genes = 60;
    many_types.num_cell_types = 48;
    EXPECT_NE(message_of(many_types, "a.h5").find("--cell-types"), std::string::npos);
    EXPECT_NE(message_of(small_options(), "a.csv").find("--out"), std::string::npos);
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(Synth, CancelLeavesNoFile) {
    const auto folder = test::temp_dir("synth-cancel");
    JobContext ctx;
    ctx.cancel();
    EXPECT_THROW(write_synthetic((folder / "s.h5").string(), small_options(), &ctx), Cancelled);
    EXPECT_THROW(write_synthetic((folder / "s.h5ad").string(), small_options(), &ctx), Cancelled);
    EXPECT_TRUE(folder_entries(folder).empty());
}

TEST(Synth, ProgressIsReportedInOrder) {
    const auto folder = test::temp_dir("synth-progress");
    SynthOptions options = small_options();
    std::vector<std::int64_t> cells;
    options.on_progress = [&](std::int64_t done, std::int64_t) { cells.push_back(done); };
    write_synthetic((folder / "s.h5").string(), options);
    ASSERT_EQ(cells.size(), 6u);  // 1500 cells in blocks of 256
    EXPECT_TRUE(std::is_sorted(cells.begin(), cells.end()));
    EXPECT_EQ(cells.back(), 1500);
}

// Debian's h5py and anndata read both outputs (h5 as scanpy's read_10x_h5 builds it).
TEST(Synth, PythonReadsBothOutputs) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const auto folder = test::temp_dir("synth-python");
    SynthOptions options = small_options();
    options.num_cells = 300;
    write_synthetic((folder / "s.h5").string(), options);
    write_synthetic((folder / "s.h5ad").string(), options);
    const StoredCsr stored = read_stored(folder / "s.h5");
    const double total = std::accumulate(stored.data.begin(), stored.data.end(), 0.0);
    const auto result = test::run_python(R"PY(
import sys, json, h5py, numpy as np, scipy.sparse as sp, anndata as ad
with h5py.File(sys.argv[1], "r") as f:
    m = f["matrix"]
    n_genes, n_cells = m["shape"][:]
    X = sp.csr_matrix((m["data"][:].astype(np.float32), m["indices"][:], m["indptr"][:]), shape=(n_cells, n_genes))
    barcodes = m["barcodes"][:].astype(str).tolist()
    names = m["features"]["name"][:].astype(str).tolist()
a = ad.read_h5ad(sys.argv[2])
print("\nFATHOM-JSON:" + json.dumps({"shape": [int(n_cells), int(n_genes)], "sum": float(X.sum()), "nnz": int(X.nnz),
      "barcode0": barcodes[0], "mt": sum(n.startswith("MT-") for n in names),
      "same": bool((a.X != X).nnz == 0), "obs_names_match": list(a.obs_names) == barcodes,
      "categories": [str(c) for c in a.obs["cell_type"].cat.categories],
      "mt_slice_sum": float(a.X[:, a.var_names.str.startswith("MT-")].sum()),
      "gene_ids0": str(a.var["gene_ids"].iloc[0]), "uns_seed": int(a.uns["synth"]["seed"])}))
)PY",
                                         {(folder / "s.h5").string(), (folder / "s.h5ad").string()});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto marker = result.output.rfind("\nFATHOM-JSON:");
    ASSERT_NE(marker, std::string::npos) << result.output;
    const auto got = nlohmann::json::parse(result.output.substr(marker + 13));
    EXPECT_EQ(got["shape"], nlohmann::json::array({300, 2000}));
    EXPECT_DOUBLE_EQ(got["sum"].get<double>(), total);
    EXPECT_EQ(got["nnz"].get<std::size_t>(), stored.data.size());
    EXPECT_EQ(got["barcode0"], stored.barcodes.front());
    EXPECT_EQ(got["mt"], 13);
    EXPECT_TRUE(got["same"].get<bool>()) << "the h5ad holds the same counts";
    EXPECT_TRUE(got["obs_names_match"].get<bool>());
    EXPECT_EQ(got["categories"], nlohmann::json(synthetic_model(options).cell_type_names));
    EXPECT_GT(got["mt_slice_sum"].get<double>(), 0.0);
    EXPECT_EQ(got["gene_ids0"], "SYNG00000000001");
    EXPECT_EQ(got["uns_seed"], 7);
}

// Our own readers (io::open_dataset) on both outputs.
TEST(Synth, OwnReadersReadBothOutputs) {
    const auto folder = test::temp_dir("synth-own");
    SynthOptions options = small_options();
    options.num_cells = 300;
    for (const char* name : {"s.h5", "s.h5ad"}) {
        SCOPED_TRACE(name);
        const auto path = folder / name;
        const SynthSummary summary = write_synthetic(path.string(), options);
        const StoredCsr stored = read_stored(path);
        OpenedDataset opened = open_dataset(path.string());
        EXPECT_EQ(opened.meta.format, std::string(name) == "s.h5" ? DatasetFormat::TenxH5V3 : DatasetFormat::H5ad);
        EXPECT_EQ(opened.meta.shape, (MatrixShape{300, 2000}));
        EXPECT_EQ(opened.meta.nnz, summary.nnz);
        EXPECT_EQ(opened.meta.obs.index(), stored.barcodes);
        EXPECT_EQ(opened.meta.var.index(), stored.gene_names);
        const CsrShard rows = opened.source->read_rows(100, 300);
        ASSERT_EQ(rows.num_rows(), 200);
        const auto offset = stored.indptr[100];
        for (std::size_t entry = 0; entry < rows.values.size(); ++entry) {
            ASSERT_EQ(rows.gene_indices[entry], stored.indices[static_cast<std::size_t>(offset) + entry]);
            ASSERT_EQ(rows.values[entry], stored.data[static_cast<std::size_t>(offset) + entry]);
        }
    }
}

}  // namespace
}  // namespace fathom::io
