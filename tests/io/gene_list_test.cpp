// Tests of core/io/gene_list (read_gene_list): plain lists, comments and blank lines,
// CSV / TSV with and without a header, quoted fields, repeats, CRLF, a UTF-8 byte-order
// mark, gzip, and the errors for a missing file and a file that names no gene. Every
// fixture is written by the test into its own temporary folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <zlib.h>

#include "core/io/errors.hpp"
#include "core/io/gene_list.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;
using Genes = std::vector<std::string>;

/// Writes `content` byte for byte to folder/name and returns the path.
std::string write_file(const fs::path& folder, const std::string& name, const std::string& content) {
    const fs::path path = folder / name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    EXPECT_TRUE(out.good()) << path;
    return path.string();
}

std::string write_gzip(const fs::path& folder, const std::string& name, const std::string& content) {
    const std::string path = (folder / name).string();
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr) << path;
    if (file == nullptr) return path;
    EXPECT_EQ(gzwrite(file, content.data(), static_cast<unsigned>(content.size())), static_cast<int>(content.size()));
    EXPECT_EQ(gzclose(file), Z_OK);
    return path;
}

TEST(GeneList, OneGenePerLine) {
    const auto folder = test::temp_dir("gene-list-plain");
    EXPECT_EQ(io::read_gene_list(write_file(folder, "a.txt", "CD3E\nMS4A1\nHLA-DRA\n")), (Genes{"CD3E", "MS4A1", "HLA-DRA"}));
    // No final newline.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "b.txt", "CD3E\nMS4A1")), (Genes{"CD3E", "MS4A1"}));
    // Comments, blank lines, surrounding whitespace, CRLF; repeats dropped (first kept).
    const std::string messy =
        "# T cells\r\n"
        "  CD3E  \r\n"
        "\r\n"
        "\tCD3D\t# a comment after the gene\r\n"
        "   \r\n"
        "CD3E\r\n"
        "#CD8A (commented out)\r\n"
        "CD8A\r\n";
    EXPECT_EQ(io::read_gene_list(write_file(folder, "c.txt", messy)), (Genes{"CD3E", "CD3D", "CD8A"}));
    // Names are kept as written: case matters, odd characters stay.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "d.txt", "cd3e\nCD3E\nRP11-34P13.7\nENSG00000160255\n7SK\n")),
              (Genes{"cd3e", "CD3E", "RP11-34P13.7", "ENSG00000160255", "7SK"}));
    // A single-column first line is a gene, not a header.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "e.txt", "SON\nITGB2\n")), (Genes{"SON", "ITGB2"}));
}

TEST(GeneList, CsvAndTsvFirstColumn) {
    const auto folder = test::temp_dir("gene-list-csv");
    // A header named like a gene column is skipped (any case); the first field is the gene.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "a.csv", "gene,score\nCD3E,1.5\nMS4A1,0.2\n")), (Genes{"CD3E", "MS4A1"}));
    EXPECT_EQ(io::read_gene_list(write_file(folder, "b.csv", "Gene_Symbol,logfc,pval\nCD3E,1,0.01\n")), (Genes{"CD3E"}));
    EXPECT_EQ(io::read_gene_list(write_file(folder, "c.tsv", "names\tscores\nCD3E\t3.2\nCD3D\t2.1\n")), (Genes{"CD3E", "CD3D"}));
    for (const char* header : {"gene", "genes", "gene_name", "gene_names", "gene_symbol", "symbol", "name", "names", "gene_id",
                               "gene_ids", "feature", "features", "id", "GENE", "Features", "ID"}) {
        EXPECT_EQ(io::read_gene_list(write_file(folder, "h.csv", std::string(header) + ",x\nCD3E,1\n")), (Genes{"CD3E"})) << header;
    }
    // pandas' to_csv of a frame indexed by gene (unnamed index): an empty first header field.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "d.csv", ",logfoldchanges,pvals\nCD3E,2.5,1e-5\nLYZ,3.1,1e-9\n")),
              (Genes{"CD3E", "LYZ"}));
    // Quoted fields (pandas quotes some, R's write.csv every one).
    EXPECT_EQ(io::read_gene_list(write_file(folder, "e.csv", "\"gene\",\"score\"\n\"CD3E\",\"1\"\n\"HLA-DRA\",2\n")),
              (Genes{"CD3E", "HLA-DRA"}));
    // No header: the first row is data.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "f.csv", "CD3E,1.5\nMS4A1,0.2\n")), (Genes{"CD3E", "MS4A1"}));
    // Only the first row can be a header; spaces around fields are trimmed; repeats dropped.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "g.csv", "gene,score\n CD3E , 1\ngene,2\nCD3E,3\n\nMS4A1 ,4\r\n")),
              (Genes{"CD3E", "gene", "MS4A1"}));
    // Rows whose first field is empty are skipped.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "h2.csv", "gene,score\n,1\n\"\",2\nCD3E,3\n")), (Genes{"CD3E"}));
    // A comment line before the header does not make it data.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "i.csv", "# markers of cluster 3\ngene,score\nNKG7,4\n")), (Genes{"NKG7"}));
}

TEST(GeneList, ByteOrderMarkIsNotPartOfTheFirstName) {
    // Excel's "CSV UTF-8" and Notepad put a byte-order mark before the first line.
    const auto folder = test::temp_dir("gene-list-bom");
    const std::string bom = "\xEF\xBB\xBF";
    EXPECT_EQ(io::read_gene_list(write_file(folder, "a.txt", bom + "CD3E\nMS4A1\n")), (Genes{"CD3E", "MS4A1"}));
    EXPECT_EQ(io::read_gene_list(write_file(folder, "b.csv", bom + "gene,score\r\nCD3E,1\r\n")), (Genes{"CD3E"}));
    // Only at the very start: elsewhere the bytes are part of a name.
    EXPECT_EQ(io::read_gene_list(write_file(folder, "c.txt", "CD3E\n" + bom + "X\n")), (Genes{"CD3E", bom + "X"}));
}

TEST(GeneList, GzipCompressed) {
    const auto folder = test::temp_dir("gene-list-gzip");
    EXPECT_EQ(io::read_gene_list(write_gzip(folder, "a.txt.gz", "CD3E\n# c\nMS4A1\n")), (Genes{"CD3E", "MS4A1"}));
    EXPECT_EQ(io::read_gene_list(write_gzip(folder, "b.csv.gz", "gene,score\nLYZ,1\nCD14,2\n")), (Genes{"LYZ", "CD14"}));
    // Compressed or not is read from the content, not the name.
    EXPECT_EQ(io::read_gene_list(write_gzip(folder, "plain-name.txt", "NKG7\n")), (Genes{"NKG7"}));
    // Many genes across buffer refills.
    std::string many;
    Genes expected;
    for (int gene = 0; gene < 50000; ++gene) {
        expected.push_back("GENE" + std::to_string(gene));
        many += expected.back() + "\n";
    }
    EXPECT_EQ(io::read_gene_list(write_gzip(folder, "many.txt.gz", many)), expected);
    EXPECT_EQ(io::read_gene_list(write_file(folder, "many.txt", many)), expected);
}

TEST(GeneList, ErrorsNameTheFile) {
    const auto folder = test::temp_dir("gene-list-errors");
    const std::string missing = (folder / "missing.txt").string();
    try {
        (void)io::read_gene_list(missing);
        ADD_FAILURE() << "no error";
    } catch (const io::ReadError& error) {
        EXPECT_EQ(error.file(), missing);
        EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << error.what();
    }
    for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
             {"empty.txt", ""},
             {"blank.txt", "\n  \n\t\n"},
             {"comments.txt", "# nothing here\n# still nothing\n"},
             {"header-only.csv", "gene,score\n"},
             {"empty-fields.csv", "gene,score\n,1\n,2\n"}}) {
        const std::string path = write_file(folder, name, content);
        try {
            (void)io::read_gene_list(path);
            ADD_FAILURE() << "no error for " << name;
        } catch (const io::FormatError& error) {
            EXPECT_EQ(error.file(), path);
            EXPECT_NE(std::string(error.what()).find("no gene names"), std::string::npos) << error.what();
        }
    }
    // A folder is not a list: an error naming it, not a crash or an empty list.
    const std::string directory = (folder / "a-folder").string();
    fs::create_directories(directory);
    try {
        (void)io::read_gene_list(directory);
        ADD_FAILURE() << "no error for a folder";
    } catch (const io::ReadError& error) {
        EXPECT_NE(std::string(error.what()).find(directory), std::string::npos) << error.what();
    } catch (const io::FormatError& error) {
        EXPECT_NE(std::string(error.what()).find(directory), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace fathom
