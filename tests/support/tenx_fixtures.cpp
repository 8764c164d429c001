#include "tests/support/tenx_fixtures.hpp"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/io/detail/hdf5.hpp"

namespace fathom::test {

namespace {

const char* const gene_expression = "Gene Expression";

std::string barcode_of(std::int64_t cell, std::mt19937_64& random) {
    static const char bases[] = "ACGT";
    std::string barcode;
    for (int base = 0; base < 16; ++base) barcode += bases[random() % 4];
    return barcode + "-" + std::to_string(1 + cell % 2);
}

}  // namespace

TenxFixture make_tenx_fixture(std::int64_t num_cells, std::int64_t num_features, std::uint64_t seed,
                              std::int64_t num_antibody, double density, bool two_genomes) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    TenxFixture fixture;
    for (std::int64_t cell = 0; cell < num_cells; ++cell) fixture.barcodes.push_back(barcode_of(cell, random));
    for (std::int64_t feature = 0; feature < num_features; ++feature) {
        const bool antibody = feature >= num_features - num_antibody;
        fixture.feature_ids.push_back((antibody ? "AB" : "ENSG") + std::to_string(100000 + feature));
        fixture.feature_names.push_back(antibody ? "CD" + std::to_string(feature) : "GENE" + std::to_string(feature));
        fixture.feature_types.push_back(antibody ? "Antibody Capture" : gene_expression);
        fixture.genomes.push_back(two_genomes && feature >= num_features / 2 ? "mm10" : "GRCh38");
    }
    // Duplicated symbol, as real annotations have (scanpy keeps it unless made unique).
    if (num_features - num_antibody >= 3) fixture.feature_names[2] = fixture.feature_names[1];
    fixture.cells.resize(static_cast<std::size_t>(num_cells));
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        if (cell % 7 == 3) continue;  // empty cells
        auto& entries = fixture.cells[static_cast<std::size_t>(cell)];
        for (std::int64_t feature = 0; feature < num_features; ++feature)
            if (uniform(random) < density)
                entries.emplace_back(feature, static_cast<double>(1 + random() % 20));
        std::shuffle(entries.begin(), entries.end(), random);
    }
    return fixture;
}

std::vector<std::int64_t> kept_features(const TenxFixture& fixture, const std::string& feature_type,
                                        const std::string& genome) {
    std::vector<std::int64_t> kept;
    for (std::int64_t feature = 0; feature < fixture.num_features(); ++feature) {
        const auto at = static_cast<std::size_t>(feature);
        if ((feature_type.empty() || fixture.feature_types[at] == feature_type) &&
            (genome.empty() || fixture.genomes[at] == genome))
            kept.push_back(feature);
    }
    return kept;
}

CsrShard expected_csr(const TenxFixture& fixture, const std::string& feature_type, const std::string& genome) {
    const auto kept = kept_features(fixture, feature_type, genome);
    std::vector<std::int32_t> map(static_cast<std::size_t>(fixture.num_features()), -1);
    for (std::size_t gene = 0; gene < kept.size(); ++gene) map[static_cast<std::size_t>(kept[gene])] = static_cast<std::int32_t>(gene);
    CsrShard shard;
    shard.num_genes = static_cast<std::int64_t>(kept.size());
    for (const auto& entries : fixture.cells) {
        std::vector<std::pair<std::int32_t, float>> row;
        for (const auto& [feature, value] : entries)
            if (map[static_cast<std::size_t>(feature)] >= 0)
                row.emplace_back(map[static_cast<std::size_t>(feature)], static_cast<float>(value));
        std::sort(row.begin(), row.end());
        for (const auto& [gene, value] : row) {
            shard.gene_indices.push_back(gene);
            shard.values.push_back(value);
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.values.size()));
    }
    return shard;
}

TenxH5Group tenx_h5_group(const TenxFixture& fixture) {
    TenxH5Group group;
    group.indptr.push_back(0);
    for (const auto& entries : fixture.cells) {
        for (const auto& [feature, value] : entries) {
            group.indices.push_back(feature);
            group.data.push_back(value);
        }
        group.indptr.push_back(static_cast<std::int64_t>(group.data.size()));
    }
    group.shape = {fixture.num_features(), fixture.num_cells()};
    group.barcodes = fixture.barcodes;
    group.ids = fixture.feature_ids;
    group.names = fixture.feature_names;
    group.feature_types = fixture.feature_types;
    group.genomes = fixture.genomes;
    return group;
}

namespace {

void write_group(const io::h5::File& file, const std::string& prefix, const TenxH5Group& group, bool v3) {
    auto wanted = [&](const std::string& name) { return group.omit.count(name) == 0; };
    auto object = [&](const std::string& name) { return prefix + "/" + name; };
    auto size_of = [](const auto& values) { return std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())}; };
    if (wanted("data")) {
        if (group.data_as_float64) {
            file.write<double>(object("data"), size_of(group.data), group.data.data(), 4);
        } else {
            std::vector<std::int32_t> counts(group.data.begin(), group.data.end());
            file.write<std::int32_t>(object("data"), size_of(counts), counts.data(), 4);
        }
    }
    if (wanted("indices")) file.write<std::int64_t>(object("indices"), size_of(group.indices), group.indices.data(), 4);
    if (wanted("indptr")) file.write<std::int64_t>(object("indptr"), size_of(group.indptr), group.indptr.data());
    if (wanted("shape")) {
        std::vector<std::int32_t> shape(group.shape.begin(), group.shape.end());
        file.write<std::int32_t>(object("shape"), size_of(shape), shape.data());
    }
    if (wanted("barcodes")) file.write_strings(object("barcodes"), group.barcodes);
    if (v3) {
        file.create_group(object("features"));
        if (wanted("features/id")) file.write_strings(object("features/id"), group.ids);
        if (wanted("features/name")) file.write_strings(object("features/name"), group.names);
        if (wanted("features/feature_type")) file.write_strings(object("features/feature_type"), group.feature_types);
        if (wanted("features/genome")) file.write_strings(object("features/genome"), group.genomes);
    } else {
        if (wanted("genes")) file.write_strings(object("genes"), group.ids);
        if (wanted("gene_names")) file.write_strings(object("gene_names"), group.names);
    }
}

}  // namespace

void write_10x_h5_v3(const std::filesystem::path& path, const TenxH5Group& group) {
    auto file = io::h5::File::create(path.string());
    file.create_group("/matrix");
    write_group(file, "/matrix", group, true);
    file.close();
}

void write_10x_h5_v2(const std::filesystem::path& path, const std::vector<std::pair<std::string, TenxH5Group>>& genomes) {
    auto file = io::h5::File::create(path.string());
    for (const auto& [genome, group] : genomes) {
        file.create_group("/" + genome);
        write_group(file, "/" + genome, group, false);
    }
    file.close();
}

std::string mtx_text(const TenxFixture& fixture, const MtxFolderOptions& options, std::uint64_t seed) {
    struct Line {
        std::int64_t feature, cell;
        double value;
    };
    std::vector<Line> lines;
    for (std::int64_t cell = 0; cell < fixture.num_cells(); ++cell)
        for (const auto& [feature, value] : fixture.cells[static_cast<std::size_t>(cell)])
            lines.push_back({feature, cell, value});
    if (options.shuffle_entries) {
        std::mt19937_64 random(seed);
        std::shuffle(lines.begin(), lines.end(), random);
    }
    std::ostringstream out;
    out << "%%MatrixMarket matrix coordinate " << (options.real_field ? "real" : "integer") << " general\n";
    out << "%metadata_json: {\"software_version\": \"fathom-test\", \"format_version\": 2}\n";
    out << fixture.num_features() << " " << fixture.num_cells() << " " << lines.size() << "\n";
    for (const auto& line : lines) {
        out << line.feature + 1 << " " << line.cell + 1 << " ";
        if (options.real_field)
            out << static_cast<std::int64_t>(line.value) << ".0\n";  // integral values with a decimal point
        else
            out << static_cast<std::int64_t>(line.value) << "\n";
    }
    return out.str();
}

void write_mtx_folder(const std::filesystem::path& folder, const TenxFixture& fixture, const MtxFolderOptions& options) {
    std::filesystem::create_directories(folder);
    const std::string suffix = options.gzip ? ".gz" : "";
    write_text(folder / ("matrix.mtx" + suffix), mtx_text(fixture, options), options.gzip);
    std::string barcodes;
    for (const auto& barcode : fixture.barcodes) barcodes += barcode + "\n";
    write_text(folder / ("barcodes.tsv" + suffix), barcodes, options.gzip);
    std::string features;
    for (std::int64_t feature = 0; feature < fixture.num_features(); ++feature) {
        const auto at = static_cast<std::size_t>(feature);
        features += fixture.feature_ids[at] + "\t" + fixture.feature_names[at];
        if (!options.legacy_genes_tsv) features += "\t" + fixture.feature_types[at];
        features += "\n";
    }
    write_text(folder / (options.legacy_genes_tsv ? "genes.tsv" + suffix : "features.tsv" + suffix), features,
               options.gzip);
}

void write_text(const std::filesystem::path& path, const std::string& text, bool gzip) {
    if (!gzip) {
        std::ofstream stream(path, std::ios::binary);
        stream << text;
        if (!stream) throw std::runtime_error("cannot write " + path.string());
        return;
    }
    gzFile file = gzopen(path.string().c_str(), "wb6");
    if (!file) throw std::runtime_error("cannot create " + path.string());
    const bool ok = text.empty() || gzwrite(file, text.data(), static_cast<unsigned>(text.size())) ==
                                        static_cast<int>(text.size());
    if (gzclose(file) != Z_OK || !ok) throw std::runtime_error("cannot write " + path.string());
}

std::string read_text(const std::filesystem::path& path) {
    gzFile file = gzopen(path.string().c_str(), "rb");
    if (!file) throw std::runtime_error("cannot open " + path.string());
    std::string text;
    char buffer[1 << 16];
    int got = 0;
    while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(got));
    gzclose(file);
    if (got < 0) throw std::runtime_error("cannot read " + path.string());
    return text;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("replace_once: '" + from + "' not found");
    return text.replace(at, from.size(), to);
}

::testing::AssertionResult same_csr(const CsrShard& actual, const CsrShard& expected) {
    if (actual.num_genes != expected.num_genes)
        return ::testing::AssertionFailure() << "num_genes " << actual.num_genes << " != " << expected.num_genes;
    if (actual.num_rows() != expected.num_rows())
        return ::testing::AssertionFailure() << "rows " << actual.num_rows() << " != " << expected.num_rows();
    for (std::size_t row = 0; row < actual.row_offsets.size(); ++row)
        if (actual.row_offsets[row] != expected.row_offsets[row])
            return ::testing::AssertionFailure() << "row_offsets[" << row << "] " << actual.row_offsets[row]
                                                 << " != " << expected.row_offsets[row];
    if (actual.gene_indices.size() != expected.gene_indices.size() || actual.values.size() != expected.values.size())
        return ::testing::AssertionFailure() << "entry arrays differ in size";
    for (std::size_t entry = 0; entry < actual.gene_indices.size(); ++entry) {
        if (actual.gene_indices[entry] != expected.gene_indices[entry])
            return ::testing::AssertionFailure() << "gene_indices[" << entry << "] " << actual.gene_indices[entry]
                                                 << " != " << expected.gene_indices[entry];
        if (actual.values[entry] != expected.values[entry])
            return ::testing::AssertionFailure() << "values[" << entry << "] " << actual.values[entry]
                                                 << " != " << expected.values[entry];
    }
    return ::testing::AssertionSuccess();
}

}  // namespace fathom::test
