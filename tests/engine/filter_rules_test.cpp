// Rule rows <-> text form of marker-gene filters (core/engine/filter_rules.hpp).
#include "core/engine/filter_rules.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/paths.hpp"

namespace fathom {
namespace {

FilterRule rule(std::string gene, RuleOp op, float value, float upper = 0.0f, bool negated = false,
                RuleJoin join = RuleJoin::And) {
    return {std::move(gene), op, value, upper, negated, join};
}

TEST(FilterRules, RowsToTextAndBackGiveTheSameRows) {
    const std::vector<FilterRule> rules = {
        rule("CD3E", RuleOp::Greater, 1.0f),
        rule("MS4A1", RuleOp::Greater, 0.0f, 0.0f, true, RuleJoin::And),
        rule("NKG7", RuleOp::Between, 0.25f, 3.5f, false, RuleJoin::Or),
        rule("HLA-DRA", RuleOp::LessEqual, -0.125f, 0.0f, false, RuleJoin::And),
        rule("and", RuleOp::Equal, 2.0f, 0.0f, true, RuleJoin::Or),  // a keyword as a gene name: quoted
        rule("GENE X", RuleOp::GreaterEqual, 0.7071068f),            // a space: quoted
        rule("CD8A", RuleOp::Less, 1e-5f, 0.0f, false, RuleJoin::Or),
    };
    const std::string text = filter_rules_text(rules);
    EXPECT_EQ(text,
              "CD3E > 1 and not MS4A1 > 0 or NKG7 between 0.25 3.5 and HLA-DRA <= -0.125 or not \"and\" == 2 "
              "and \"GENE X\" >= 0.7071068 or CD8A < 1e-05");
    const FilterRulesParse parsed = parse_filter_rules(text);
    ASSERT_TRUE(parsed.ok) << parsed.message;
    ASSERT_TRUE(parsed.representable);
    EXPECT_EQ(parsed.rules, rules);
    EXPECT_EQ(parsed.genes, (std::vector<std::string>{"CD3E", "MS4A1", "NKG7", "HLA-DRA", "and", "GENE X", "CD8A"}));
    EXPECT_EQ(filter_rules_text(parsed.rules), text);
}

TEST(FilterRules, TextToRowsToTextIsCanonicalAndKeepsPrecedence) {
    // "and" binds tighter than "or": the rows keep that reading, and extra spaces,
    // keyword case, && / || / ! and redundant parentheses take the canonical spelling.
    const FilterRulesParse parsed = parse_filter_rules("  cd3e>1 AND !MS4A1 > 0 || (NKG7 between 1 2 && not not GNLY < 3)");
    ASSERT_TRUE(parsed.ok) << parsed.message;
    ASSERT_TRUE(parsed.representable);
    ASSERT_EQ(parsed.rules.size(), 4u);
    EXPECT_EQ(parsed.rules[0], rule("cd3e", RuleOp::Greater, 1.0f));
    EXPECT_EQ(parsed.rules[1], rule("MS4A1", RuleOp::Greater, 0.0f, 0.0f, true, RuleJoin::And));
    EXPECT_EQ(parsed.rules[2], rule("NKG7", RuleOp::Between, 1.0f, 2.0f, false, RuleJoin::Or));
    EXPECT_EQ(parsed.rules[3], rule("GNLY", RuleOp::Less, 3.0f, 0.0f, false, RuleJoin::And));  // double negation cancels
    EXPECT_EQ(filter_rules_text(parsed.rules), "cd3e > 1 and not MS4A1 > 0 or NKG7 between 1 2 and GNLY < 3");
}

TEST(FilterRules, ExpressionsRowsCannotShowStayValidText) {
    for (const char* text : {"not (A > 1 or B > 1)", "(A > 1 or B > 1) and C > 1", "A > 1 and (B > 1 or C > 2)"}) {
        const FilterRulesParse parsed = parse_filter_rules(text);
        EXPECT_TRUE(parsed.ok) << text << ": " << parsed.message;
        EXPECT_FALSE(parsed.representable) << text;
        EXPECT_TRUE(parsed.rules.empty()) << text;
    }
    const FilterRulesParse empty = parse_filter_rules("   ");
    EXPECT_TRUE(empty.ok);
    EXPECT_TRUE(empty.representable);
    EXPECT_TRUE(empty.rules.empty());
    EXPECT_EQ(filter_rules_text({}), "");
}

TEST(FilterRules, SyntaxErrorsPointAtTheMistakeWithACaret) {
    const FilterRulesParse parsed = parse_filter_rules("CD3E 1 and not MS4A1 > 0");
    EXPECT_FALSE(parsed.ok);
    EXPECT_EQ(parsed.offset, 5u);
    EXPECT_EQ(parsed.column, 6u);
    EXPECT_NE(parsed.problem.find("comparison operator"), std::string::npos) << parsed.problem;
    // The message repeats the text with a caret under column 6.
    EXPECT_NE(parsed.message.find("\n  CD3E 1 and not MS4A1 > 0\n       ^"), std::string::npos) << parsed.message;

    const FilterRulesParse early = parse_filter_rules("CD3E > ");
    EXPECT_FALSE(early.ok);
    EXPECT_EQ(early.offset, 7u);
}

TEST(FilterRules, UnknownGenesAreReportedWithSuggestionsWhenNamesAreGiven) {
    const std::vector<std::string> names = {"CD3E", "CD3D", "MS4A1"};
    const std::vector<std::string> ids = {"ENSG00000198851", "ENSG00000167286", "ENSG00000156738"};
    const FilterRulesParse unknown = parse_filter_rules("MS4A1 > 0 and CD3F > 1", names, ids);
    EXPECT_FALSE(unknown.ok);
    EXPECT_EQ(unknown.offset, 14u);
    EXPECT_EQ(unknown.length, 4u);
    EXPECT_NE(unknown.problem.find("CD3F"), std::string::npos);
    EXPECT_NE(unknown.problem.find("CD3E"), std::string::npos) << "suggestion: " << unknown.problem;
    EXPECT_NE(unknown.message.find("^^^^"), std::string::npos) << unknown.message;
    // Gene ids are accepted like names.
    EXPECT_TRUE(parse_filter_rules("ENSG00000156738 > 0", names, ids).ok);
}

TEST(FilterRules, AmbiguousGenesAreReportedLikeUnknownOnes) {
    const std::vector<std::string> names = {"TBCE", "CD3E", "TBCE"};
    const std::vector<std::string> ids = {"ENSG1", "ENSG2", "ENSG3"};
    const FilterRulesParse ambiguous = parse_filter_rules("CD3E > 1 and TBCE > 0", names, ids);
    EXPECT_FALSE(ambiguous.ok);
    EXPECT_EQ(ambiguous.offset, 13u);
    EXPECT_EQ(ambiguous.length, 4u);
    EXPECT_NE(ambiguous.problem.find("ambiguous gene 'TBCE' (it is the var name of 2 genes (gene ids ENSG1, ENSG3)"),
              std::string::npos)
        << ambiguous.problem;
    EXPECT_TRUE(parse_filter_rules("CD3E > 1 and ENSG3 > 0", names, ids).ok);
}

TEST(FilterRules, SyntaxErrorOfAnyTextTheEmptyOneIncluded) {
    EXPECT_EQ(filter_syntax_error("CD3E > 1 and not MS4A1 > 0"), "");
    EXPECT_EQ(filter_syntax_error("UNKNOWN_GENE > 1"), "") << "genes are not looked up";
    const std::string empty = filter_syntax_error("  ");
    EXPECT_NE(empty.find("filter: the expression is empty at column 1"), std::string::npos) << empty;
    EXPECT_NE(empty.find("^"), std::string::npos) << empty;
    const std::string bad = filter_syntax_error("CD3E = 1");
    EXPECT_NE(bad.find("(use '==')"), std::string::npos) << bad;
    EXPECT_NE(bad.find("\n  CD3E = 1\n       ^"), std::string::npos) << bad;
}

TEST(FilterRules, GeneListFilesAreReadOrNamedInTheError) {
    const auto folder = test::temp_dir("filter-rules");
    const auto path = folder / "set.csv";
    std::ofstream(path) << "gene,weight\nCD3E,1\nMS4A1,2\nCD3E,3\n";
    EXPECT_EQ(read_gene_list_file(path.string()), (std::vector<std::string>{"CD3E", "MS4A1"}));
    try {
        read_gene_list_file((folder / "missing.txt").string());
        FAIL() << "no error for a missing file";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("missing.txt"), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace fathom
