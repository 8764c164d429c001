// Fuzzy gene search: scores and ranking over var names and gene ids.
#include "ui/GeneSearch.hpp"

#include <gtest/gtest.h>

#include <QCompleter>
#include <QLineEdit>

namespace fathom::ui {
namespace {

std::vector<std::string> names_of(const std::vector<GeneMatch>& matches, const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const GeneMatch& match : matches) out.push_back(names[static_cast<std::size_t>(match.gene)]);
    return out;
}

TEST(GeneSearch, ScoresOrderExactPrefixSubstringSubsequence) {
    EXPECT_EQ(fuzzy_score("CD3E", "CD3E"), 4001);
    EXPECT_EQ(fuzzy_score("cd3e", "CD3E"), 4000);
    const int prefix = fuzzy_score("cd3", "CD3E");
    const int longer_prefix = fuzzy_score("cd3", "CD3EAP");
    const int substring = fuzzy_score("cd3", "ACD3");
    const int subsequence = fuzzy_score("cd3", "CXD3");
    EXPECT_GT(prefix, longer_prefix);
    EXPECT_GT(longer_prefix, substring);
    EXPECT_GT(substring, subsequence);
    EXPECT_GT(subsequence, 0);
    EXPECT_EQ(fuzzy_score("cd3", "CD8A"), -1);  // not a subsequence
    EXPECT_EQ(fuzzy_score("", "CD8A"), -1);
    EXPECT_EQ(fuzzy_score("CD8AX", "CD8A"), -1);
    // Compact and word-start matches beat scattered ones.
    EXPECT_GT(fuzzy_score("hdra", "HLA-DRA"), fuzzy_score("hdra", "HXXXXDXXXRXXXA"));
    EXPECT_GT(fuzzy_score("rpl", "RPL13A"), fuzzy_score("rpl", "ARHGAP1L"));
}

TEST(GeneSearch, RankingIsBestFirstOverNamesAndIds) {
    const std::vector<std::string> names = {"CD8A", "CXD3", "CD3EAP", "ACD3", "CD3E", "CD3D", "MS4A1", "CD34"};
    const std::vector<std::string> ids = {"ENSG00000153563", "ENSG00000000001", "ENSG00000117877", "ENSG00000000002",
                                          "ENSG00000198851", "ENSG00000167286", "ENSG00000156738", "ENSG00000174059"};
    // Prefixes by length then var order, then the substring, then the subsequence.
    EXPECT_EQ(names_of(rank_genes("cd3", names, ids), names),
              (std::vector<std::string>{"CD3E", "CD3D", "CD34", "CD3EAP", "ACD3", "CXD3"}));
    // The exact name first, even before its prefix matches.
    EXPECT_EQ(names_of(rank_genes("cd3e", names, ids), names), (std::vector<std::string>{"CD3E", "CD3EAP"}));
    // A gene id finds its gene.
    const auto by_id = rank_genes("ENSG00000156738", names, ids);
    ASSERT_FALSE(by_id.empty());
    EXPECT_EQ(names[static_cast<std::size_t>(by_id.front().gene)], "MS4A1");
    EXPECT_TRUE(by_id.front().by_id);
    // A limit keeps the best ones; nothing matches nothing.
    EXPECT_EQ(names_of(rank_genes("cd3", names, ids, 2), names), (std::vector<std::string>{"CD3E", "CD3D"}));
    EXPECT_TRUE(rank_genes("zzz", names, ids).empty());
    EXPECT_TRUE(rank_genes("", names, ids).empty());
    // Ids that do not line up with the names are ignored.
    EXPECT_EQ(names_of(rank_genes("ms4", names, {"X"}), names), (std::vector<std::string>{"MS4A1"}));
}

TEST(GeneSearch, ModelFeedsACompleterWithNamesToInsert) {
    GeneSearchModel model;
    model.setGenes({"CD3E", "CD3D", "MS4A1"}, {"ENSG00000198851", "ENSG00000167286", "ENSG00000156738"});
    model.setQuery(QStringLiteral("ms4"));
    ASSERT_EQ(model.rowCount(), 1);
    EXPECT_EQ(model.data(model.index(0), Qt::EditRole).toString(), QStringLiteral("MS4A1"));
    EXPECT_EQ(model.data(model.index(0), Qt::DisplayRole).toString(), QStringLiteral("MS4A1  (ENSG00000156738)"));
    model.setQuery(QStringLiteral("cd3"));
    EXPECT_EQ(model.rowCount(), 2);
    model.setQuery(QString());
    EXPECT_EQ(model.rowCount(), 0);

    QLineEdit edit;
    QCompleter* completer = attach_gene_search(&edit, &model);
    ASSERT_EQ(edit.completer(), completer);
    EXPECT_EQ(completer->completionMode(), QCompleter::UnfilteredPopupCompletion);
    emit edit.textEdited(QStringLiteral("ENSG00000167286"));
    ASSERT_EQ(model.rowCount(), 1);
    EXPECT_EQ(model.data(model.index(0), Qt::EditRole).toString(), QStringLiteral("CD3D"));
}

}  // namespace
}  // namespace fathom::ui
