// GeneLookup (core/data/GeneLookup.hpp), the one lookup of gene texts: var names first,
// then gene ids; unknown texts named with close matches; duplicated names ambiguous,
// with a message that says how to name each gene; gene_ids(var) only when it fits.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/data/GeneLookup.hpp"
#include "core/data/Table.hpp"

namespace fathom {
namespace {

Table var_of(std::vector<std::string> names, std::vector<std::string> ids) {
    Table var;
    var.index() = std::move(names);
    if (!ids.empty()) var.set("gene_ids", StringColumn{std::move(ids)});
    return var;
}

TEST(GeneLookup, ResolvesVarNamesThenGeneIds) {
    const Table var = var_of({"CD3E", "CD3D", "MS4A1", "my gene"}, {"ENSG01", "ENSG02", "ENSG03", "ENSG04"});
    const GeneLookup lookup(var);
    EXPECT_EQ(lookup.num_genes(), 4);
    EXPECT_EQ(lookup.find("CD3E"), 0);
    EXPECT_EQ(lookup.find("my gene"), 3);
    EXPECT_EQ(lookup.find("ENSG03"), 2);
    EXPECT_EQ(lookup.find("cd3e"), -1) << "case matters";
    EXPECT_EQ(lookup.find(""), -1);
    const GeneResolution by_name = lookup.resolve("MS4A1");
    EXPECT_TRUE(by_name.found());
    EXPECT_FALSE(by_name.by_id);
    EXPECT_EQ(by_name.column, 2);
    const GeneResolution by_id = lookup.resolve("ENSG02");
    EXPECT_TRUE(by_id.by_id);
    EXPECT_EQ(by_id.column, 1);
    EXPECT_TRUE(lookup.problem("CD3D").empty());
    EXPECT_TRUE(lookup.problem("ENSG04").empty());
    // A var name wins over the gene id of another gene.
    const std::vector<std::string> names{"A", "B"}, ids{"B", "X"};
    EXPECT_EQ(GeneLookup(names, ids).find("B"), 1);
    EXPECT_EQ(GeneLookup(names, ids).find("X"), 1);
}

TEST(GeneLookup, UnknownGenesAreNamedWithCloseMatches) {
    const Table var = var_of({"CD3E", "CD3D", "CD3G", "MS4A1"}, {});
    const GeneLookup lookup(var);
    const GeneResolution unknown = lookup.resolve("CD3F");
    EXPECT_FALSE(unknown.found());
    EXPECT_FALSE(unknown.ambiguous());
    EXPECT_EQ(lookup.problem("CD3F"), "gene 'CD3F' is not in var names or var['gene_ids'] (did you mean CD3D, CD3E, CD3G?)");
    EXPECT_EQ(lookup.problem("FOOBAR"), "gene 'FOOBAR' is not in var names or var['gene_ids']");
    EXPECT_EQ(lookup.close_matches("ms4a1"), (std::vector<std::string>{"MS4A1"}));
}

TEST(GeneLookup, DuplicatedNamesAreAmbiguousAndSayHowToNameEachGene) {
    // As 10x files read without var_names_make_unique: two genes share a symbol.
    const Table var = var_of({"TBCE", "CD3E", "TBCE", "X"}, {"ENSG10", "ENSG11", "ENSG12", "ENSG13"});
    const GeneLookup lookup(var);
    const GeneResolution resolution = lookup.resolve("TBCE");
    EXPECT_FALSE(resolution.found());
    EXPECT_TRUE(resolution.ambiguous());
    EXPECT_EQ(resolution.column, -1);
    EXPECT_EQ(resolution.candidates, (std::vector<std::int32_t>{0, 2}));
    EXPECT_EQ(lookup.find("TBCE"), -1);
    EXPECT_EQ(lookup.problem("TBCE"),
              "gene 'TBCE' is ambiguous: it is the var name of 2 genes (gene ids ENSG10, ENSG12); name one by its gene id");
    // Each one by its gene id.
    EXPECT_EQ(lookup.find("ENSG10"), 0);
    EXPECT_EQ(lookup.find("ENSG12"), 2);

    // Without gene ids (or with ids that do not tell them apart): the columns.
    const Table bare = var_of({"TBCE", "TBCE", "TBCE"}, {});
    EXPECT_EQ(GeneLookup(bare).problem("TBCE"),
              "gene 'TBCE' is ambiguous: it is the var name of 3 genes (columns 0, 1, 2); make the var names unique "
              "(anndata's var_names_make_unique)");
    // Duplicated gene ids (and no var name equal to the text): ambiguous by id.
    const Table ids = var_of({"A", "B"}, {"ENSG1", "ENSG1"});
    const GeneResolution by_id = GeneLookup(ids).resolve("ENSG1");
    EXPECT_TRUE(by_id.ambiguous());
    EXPECT_TRUE(by_id.by_id);
    EXPECT_EQ(GeneLookup(ids).problem("ENSG1"),
              "gene 'ENSG1' is ambiguous: it is the gene id of 2 genes (var names A, B); name one by its var name");
}

TEST(GeneLookup, GeneIdsOnlyWhenAStringColumnOfTheRightLength) {
    EXPECT_EQ(gene_ids(var_of({"A", "B"}, {"E1", "E2"})).size(), 2u);
    EXPECT_TRUE(gene_ids(var_of({"A", "B"}, {})).empty());
    Table numeric = var_of({"A", "B"}, {});
    numeric.set("gene_ids", FloatColumn{{1.0, 2.0}});
    EXPECT_TRUE(gene_ids(numeric).empty());
    // Ids that do not fit the names are refused where they are given directly.
    const std::vector<std::string> names{"A", "B"}, ids{"E1"};
    EXPECT_THROW(GeneLookup(names, ids), std::invalid_argument);
}

}  // namespace
}  // namespace fathom
