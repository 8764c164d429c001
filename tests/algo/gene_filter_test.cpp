// Tests of core/algo/gene_filter: the parser (every operator, precedence of not / and /
// or, parentheses, quoting, keyword case), positioned error messages, gene lookup with
// suggestions, and the evaluator against a brute-force mask computed here from a dense
// copy (simulated data on 1 and 3 shards, counts and LogNorm, hand-written and random
// expressions; the shared 10x v3 chr21 dataset).
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/algo/gene_filter.hpp"
#include "core/types/JobContext.hpp"
#include "core/io/RowSource.hpp"
#include "tests/algo/algo_helpers.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

// ---------------------------------------------------------------------------------
// Parsing

/// Checks the storage invariants every parsed expression has: children first, root last,
/// gene slots in range, genes distinct.
void expect_well_formed(const FilterExpression& expression) {
    ASSERT_FALSE(expression.nodes.empty()) << expression.text;
    for (std::size_t index = 0; index < expression.nodes.size(); ++index) {
        const FilterNode& node = expression.nodes[index];
        const int self = static_cast<int>(index);
        switch (node.kind) {
            case FilterNode::Kind::Compare:
                EXPECT_GE(node.gene, 0) << expression.text;
                EXPECT_LT(node.gene, static_cast<int>(expression.genes.size())) << expression.text;
                if (node.op == FilterOp::Between) {
                    EXPECT_LE(node.value, node.upper) << expression.text;
                }
                break;
            case FilterNode::Kind::Not:
                EXPECT_GE(node.left, 0) << expression.text;
                EXPECT_LT(node.left, self) << expression.text;
                break;
            case FilterNode::Kind::And:
            case FilterNode::Kind::Or:
                EXPECT_GE(node.left, 0) << expression.text;
                EXPECT_LT(node.left, self) << expression.text;
                EXPECT_GE(node.right, 0) << expression.text;
                EXPECT_LT(node.right, self) << expression.text;
                break;
        }
    }
    for (std::size_t first = 0; first < expression.genes.size(); ++first)
        for (std::size_t second = first + 1; second < expression.genes.size(); ++second)
            EXPECT_NE(expression.genes[first].name, expression.genes[second].name) << expression.text;
}

TEST(GeneFilterParse, EveryComparisonOperator) {
    struct Case {
        const char* text;
        FilterOp op;
        float value;
        float upper;
    };
    const Case cases[] = {
        {"CD3E > 1", FilterOp::Greater, 1.0f, 0.0f},         {"CD3E >= 1.5", FilterOp::GreaterEqual, 1.5f, 0.0f},
        {"CD3E < -2", FilterOp::Less, -2.0f, 0.0f},          {"CD3E <= 2.5e-3", FilterOp::LessEqual, 2.5e-3f, 0.0f},
        {"CD3E == 0", FilterOp::Equal, 0.0f, 0.0f},          {"CD3E between 0.5 4", FilterOp::Between, 0.5f, 4.0f},
        {"CD3E between 2 2", FilterOp::Between, 2.0f, 2.0f}, {"CD3E>1", FilterOp::Greater, 1.0f, 0.0f},
        {"CD3E>=-1", FilterOp::GreaterEqual, -1.0f, 0.0f},   {"CD3E<0.25", FilterOp::Less, 0.25f, 0.0f},
        {"CD3E<=+3", FilterOp::LessEqual, 3.0f, 0.0f},       {"CD3E==7", FilterOp::Equal, 7.0f, 0.0f},
        {"  CD3E \t between\n-1 -0.5  ", FilterOp::Between, -1.0f, -0.5f},
    };
    for (const Case& c : cases) {
        const FilterExpression expression = parse_filter(c.text);
        expect_well_formed(expression);
        EXPECT_EQ(expression.text, c.text);
        ASSERT_EQ(expression.nodes.size(), 1u) << c.text;
        EXPECT_EQ(expression.root(), 0);
        const FilterNode& node = expression.nodes[0];
        EXPECT_EQ(node.kind, FilterNode::Kind::Compare) << c.text;
        EXPECT_EQ(node.op, c.op) << c.text;
        EXPECT_EQ(node.value, c.value) << c.text;
        if (c.op == FilterOp::Between) {
            EXPECT_EQ(node.upper, c.upper) << c.text;
        }
        EXPECT_EQ(node.gene, 0);
        ASSERT_EQ(expression.genes.size(), 1u);
        EXPECT_EQ(expression.genes[0].name, "CD3E");
        EXPECT_EQ(expression.genes[0].length, 4u);
        EXPECT_EQ(expression.genes[0].offset, std::string_view(c.text).find("CD3E"));
        EXPECT_EQ(node.offset, expression.genes[0].offset);
    }
    EXPECT_STREQ(filter_op_text(FilterOp::Greater), ">");
    EXPECT_STREQ(filter_op_text(FilterOp::GreaterEqual), ">=");
    EXPECT_STREQ(filter_op_text(FilterOp::Less), "<");
    EXPECT_STREQ(filter_op_text(FilterOp::LessEqual), "<=");
    EXPECT_STREQ(filter_op_text(FilterOp::Equal), "==");
    EXPECT_STREQ(filter_op_text(FilterOp::Between), "between");
}

TEST(GeneFilterParse, NumbersAreRoundedToFloatOnce) {
    struct Case {
        const char* number;
        double value;
    };
    const Case cases[] = {{"1", 1.0},          {"-0.5", -0.5},     {"+2", 2.0},          {"2.5e-3", 2.5e-3},
                          {"1E2", 100.0},      {"1e+2", 100.0},    {".5", 0.5},          {"5.", 5.0},
                          {"0.1", 0.1},        {"-0", 0.0},        {"16777217", 16777217.0},
                          {"3.4e38", 3.4e38},  {"1e-3", 1e-3},     {"0.30000001", 0.30000001}};
    for (const Case& c : cases) {
        const std::string text = std::string("G > ") + c.number;
        const FilterExpression expression = parse_filter(text);
        ASSERT_EQ(expression.nodes.size(), 1u) << text;
        EXPECT_EQ(expression.nodes[0].value, static_cast<float>(c.value)) << text;
    }
    // ">=" and "==" agree on a value that is not a float: both compare with 0.1f.
    EXPECT_EQ(parse_filter("G == 0.1").nodes[0].value, 0.1f);
    EXPECT_EQ(parse_filter("G >= 0.1").nodes[0].value, 0.1f);
}

TEST(GeneFilterParse, PrecedenceNotAndOrAndParentheses) {
    struct Case {
        const char* text;
        const char* canonical;
    };
    const Case cases[] = {
        {"A > 1", "(A > 1)"},
        {"A > 1 or B > 1 and C > 1", "((A > 1) or ((B > 1) and (C > 1)))"},
        {"A > 1 and B > 1 or C > 1", "(((A > 1) and (B > 1)) or (C > 1))"},
        {"not A > 1 and B > 1", "((not (A > 1)) and (B > 1))"},
        {"not A > 1 or not B > 1 and C > 1", "((not (A > 1)) or ((not (B > 1)) and (C > 1)))"},
        {"A > 1 and B > 1 and C > 1", "(((A > 1) and (B > 1)) and (C > 1))"},
        {"A > 1 or B > 1 or C > 1", "(((A > 1) or (B > 1)) or (C > 1))"},
        {"(A > 1 or B > 1) and C > 1", "(((A > 1) or (B > 1)) and (C > 1))"},
        {"A > 1 and (B > 1 or C > 1)", "((A > 1) and ((B > 1) or (C > 1)))"},
        {"not (A > 1 or B > 1)", "(not ((A > 1) or (B > 1)))"},
        {"not not A > 1", "(not (not (A > 1)))"},
        {"((A > 1))", "(A > 1)"},
        {"( ( A > 1 ) )", "(A > 1)"},
        {"!A > 1 && B < 2 || C == 0", "(((not (A > 1)) and (B < 2)) or (C == 0))"},
        {"A>1&&!(B>1||C>1)", "((A > 1) and (not ((B > 1) or (C > 1))))"},
        {"!!A>1", "(not (not (A > 1)))"},
        {"A > 1 AND NOT B > 1 Or C BETWEEN 1 2", "(((A > 1) and (not (B > 1))) or (C between 1 2))"},
        {"A between 1 2 and B > 1", "((A between 1 2) and (B > 1))"},
        {"A > 1\n\tand\tB > 2\r\nor C < 3", "(((A > 1) and (B > 2)) or (C < 3))"},
        {"not(A > 1)and(B > 1)or(C > 1)", "(((not (A > 1)) and (B > 1)) or (C > 1))"},
        {"A > 0.5 and B >= 1e-3 or not (C <= -2 and D == 4)",
         "(((A > 0.5) and (B >= 0.001)) or (not ((C <= -2) and (D == 4))))"},
    };
    for (const Case& c : cases) {
        const FilterExpression expression = parse_filter(c.text);
        expect_well_formed(expression);
        EXPECT_EQ(expression.to_string(), c.canonical) << c.text;
        // The canonical text parses to the same tree.
        EXPECT_EQ(parse_filter(expression.to_string()).to_string(), c.canonical) << c.text;
    }
}

TEST(GeneFilterParse, TreeShapeAndOffsets) {
    const FilterExpression expression = parse_filter("CD3E > 1 and not MS4A1 > 0");
    expect_well_formed(expression);
    ASSERT_EQ(expression.nodes.size(), 4u);
    const FilterNode& root = expression.nodes[static_cast<std::size_t>(expression.root())];
    EXPECT_EQ(root.kind, FilterNode::Kind::And);
    EXPECT_EQ(root.offset, 0u);
    const FilterNode& left = expression.nodes[static_cast<std::size_t>(root.left)];
    EXPECT_EQ(left.kind, FilterNode::Kind::Compare);
    EXPECT_EQ(left.gene, 0);
    const FilterNode& negation = expression.nodes[static_cast<std::size_t>(root.right)];
    EXPECT_EQ(negation.kind, FilterNode::Kind::Not);
    EXPECT_EQ(negation.offset, 13u);
    const FilterNode& inner = expression.nodes[static_cast<std::size_t>(negation.left)];
    EXPECT_EQ(inner.kind, FilterNode::Kind::Compare);
    EXPECT_EQ(inner.gene, 1);
    EXPECT_EQ(inner.offset, 17u);
    EXPECT_EQ(inner.op, FilterOp::Greater);
    ASSERT_EQ(expression.genes.size(), 2u);
    EXPECT_EQ(expression.genes[0].name, "CD3E");
    EXPECT_EQ(expression.genes[1].name, "MS4A1");
    EXPECT_EQ(expression.genes[1].offset, 17u);
    EXPECT_EQ(expression.genes[1].length, 5u);
}

TEST(GeneFilterParse, GenesAreDistinctInOrderOfFirstAppearance) {
    const FilterExpression expression = parse_filter("B > 1 and A > 1 or B < 0 and \"B\" == 2 and 'A' < 9");
    expect_well_formed(expression);
    ASSERT_EQ(expression.genes.size(), 2u);
    EXPECT_EQ(expression.genes[0].name, "B");
    EXPECT_EQ(expression.genes[0].offset, 0u);
    EXPECT_EQ(expression.genes[1].name, "A");
    EXPECT_EQ(expression.genes[1].offset, 10u);
    int compares = 0;
    for (const FilterNode& node : expression.nodes)
        if (node.kind == FilterNode::Kind::Compare) ++compares;
    EXPECT_EQ(compares, 5);
    // Gene names are case-sensitive (var names are); keywords are not.
    const FilterExpression cased = parse_filter("cd3e > 1 AND CD3E > 1");
    ASSERT_EQ(cased.genes.size(), 2u);
    EXPECT_EQ(cased.genes[0].name, "cd3e");
    EXPECT_EQ(cased.genes[1].name, "CD3E");
}

TEST(GeneFilterParse, OddAndQuotedGeneNames) {
    struct Case {
        std::string text;
        std::string gene;
        std::size_t length;  ///< bytes of the gene as written
    };
    const Case cases[] = {
        {"HLA-DRA > 1", "HLA-DRA", 7},
        {"7SK > 0", "7SK", 3},
        {"RP11-34P13.7 >= 2", "RP11-34P13.7", 12},
        {"ENSG00000160255 > 0", "ENSG00000160255", 15},
        {"gene:1_x.2 > 0", "gene:1_x.2", 10},
        {"1e5 > 0", "1e5", 3},
        {"-1 > 0", "-1", 2},
        {"notch1 > 1", "notch1", 6},
        {"ORAI1 > 1", "ORAI1", 5},
        {"andy > 1", "andy", 4},
        {"between_x > 1", "between_x", 9},
        {"G\xC3\xA8ne > 1", "G\xC3\xA8ne", 5},
        {"\"my gene\" > 1", "my gene", 9},
        {"'my gene' > 1", "my gene", 9},
        {"\"and\" > 1", "and", 5},
        {"'NOT' == 0", "NOT", 5},
        {"'say \"hi\"' > 1", "say \"hi\"", 10},
        {"\"it's\" > 1", "it's", 6},
        {"\"a(b)>c\" < 3", "a(b)>c", 8},
    };
    for (const Case& c : cases) {
        const FilterExpression expression = parse_filter(c.text);
        expect_well_formed(expression);
        ASSERT_EQ(expression.genes.size(), 1u) << c.text;
        EXPECT_EQ(expression.genes[0].name, c.gene) << c.text;
        EXPECT_EQ(expression.genes[0].offset, 0u) << c.text;
        EXPECT_EQ(expression.genes[0].length, c.length) << c.text;
        // The canonical text quotes what needs quotes and parses back to the same gene.
        const FilterExpression again = parse_filter(expression.to_string());
        ASSERT_EQ(again.genes.size(), 1u) << expression.to_string();
        EXPECT_EQ(again.genes[0].name, c.gene) << expression.to_string();
        EXPECT_EQ(again.to_string(), expression.to_string());
    }
    EXPECT_EQ(parse_filter("\"my gene\" > 1").to_string(), "(\"my gene\" > 1)");
    EXPECT_EQ(parse_filter("'and' > 1").to_string(), "(\"and\" > 1)");
    EXPECT_EQ(parse_filter("'HLA-DRA' > 1").to_string(), "(HLA-DRA > 1)");
    // "OR4F5" and "or4f5" are genes, not the keyword.
    const FilterExpression olfactory = parse_filter("OR4F5 > 0 or or4f5 > 0");
    EXPECT_EQ(olfactory.to_string(), "((OR4F5 > 0) or (or4f5 > 0))");
}

// ---------------------------------------------------------------------------------
// Parse errors

/// The last line of a message (the caret line).
std::string last_line(const std::string& text) {
    const auto newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

TEST(GeneFilterErrors, SyntaxErrorsPointAtTheMistake) {
    struct Case {
        std::string text;
        std::size_t column;   ///< 1-based character column
        std::string problem;  ///< a part of problem()
        std::size_t width;    ///< carets under the mistake
    };
    const Case cases[] = {
        {"CD3E 1 and not MS4A1 > 0", 6, "expected a comparison operator after 'CD3E'", 1},
        {"", 1, "the expression is empty", 1},
        {"   ", 1, "the expression is empty", 1},
        {"CD3E >", 7, "expected a number after '>'", 1},
        {"CD3E > high", 8, "expected a number after '>', not 'high'", 4},
        {"CD3E = 1", 6, "'=' is not a comparison operator after 'CD3E' (use '==')", 1},
        {"CD3E => 1", 6, "'=' is not a comparison operator", 1},
        {"CD3E != 1", 6, "'!=' is not supported after 'CD3E' (write 'not CD3E == VALUE')", 2},
        {"CD3E > 1 and", 13, "expected a gene name after 'and'", 1},
        {"CD3E > 1 MS4A1 > 0", 10, "expected 'and' or 'or' before 'MS4A1'", 5},
        {"(CD3E > 1 MS4A1 > 0)", 11, "expected 'and', 'or' or ')' before 'MS4A1'", 5},
        {"(CD3E > 1", 10, "expected ')' to close the '(' at column 1", 1},
        {"CD3E > 1 and ((MS4A1 > 0)", 26, "expected ')' to close the '(' at column 14", 1},
        {"CD3E > 1)", 9, "unmatched ')'", 1},
        {"CD3E > 1 & MS4A1 > 0", 10, "'&' is not an operator (use 'and' or '&&')", 1},
        {"CD3E > 1 | MS4A1 > 0", 10, "'|' is not an operator (use 'or' or '||')", 1},
        {"CD3E > 1 == 2", 10, "expected 'and' or 'or' after '1', not '='", 1},
        {"CD3E between 1 and 2", 16, "without 'and'", 3},
        {"CD3E between 3 1", 14, "the lower bound is above the upper bound", 3},
        {"CD3E between 1", 15, "expected the upper bound after 'between 1'", 1},
        {"CD3E between", 13, "expected the lower bound after 'between'", 1},
        {"CD3E > 1e40", 8, "number '1e40' is outside the float32 range", 4},
        {"CD3E > -1e39", 8, "outside the float32 range", 5},
        {"CD3E > inf", 8, "expected a number after '>', not 'inf'", 3},
        {"CD3E > nan", 8, "not 'nan'", 3},
        {"CD3E > 1.2.3", 8, "not '1.2.3'", 5},
        {"CD3E > --1", 8, "not '--1'", 3},
        {"CD3E > +-1", 8, "not '+-1'", 3},
        {"CD3E > 0x10", 8, "not '0x10'", 4},
        {"CD3E > 1and MS4A1 > 0", 8, "not '1and'", 4},
        {"\"CD3E > 1", 1, "unterminated quoted gene name (no closing \")", 1},
        {"'CD3E > 1", 1, "unterminated quoted gene name (no closing ')", 1},
        {"\"\" > 1", 1, "empty gene name", 2},
        {"and > 1", 1, "expected a gene name, not the keyword 'and'", 3},
        {"CD3E > 1 and or MS4A1 > 0", 14, "expected a gene name after 'and', not the keyword 'or'", 2},
        {"()", 2, "expected a gene name after '(', not ')'", 1},
        {"> 1", 1, "expected a gene name, not '>'", 1},
        {"not", 4, "expected a gene name after 'not'", 1},
        {"CD3E > 1 and (MS4A1 > 0 or", 27, "expected a gene name after 'or'", 1},
        {"CD3E\t1", 6, "expected a comparison operator after 'CD3E'", 1},
        // Columns count characters, not bytes: "è" is two bytes.
        {"G\xC3\xA8n\xC3\xA8 > 1 )", 10, "unmatched ')'", 1},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("expression: '" + c.text + "'");
        try {
            (void)parse_filter(c.text);
            ADD_FAILURE() << "no error";
        } catch (const UnknownGeneError& error) {
            ADD_FAILURE() << "an unknown-gene error from the parser: " << error.what();
        } catch (const FilterParseError& error) {
            const std::string message = error.what();
            EXPECT_EQ(error.column(), c.column) << message;
            EXPECT_EQ(error.expression(), c.text);
            EXPECT_NE(error.problem().find(c.problem), std::string::npos) << "problem: " << error.problem();
            EXPECT_EQ(message.rfind("filter: ", 0), 0u) << message;
            EXPECT_NE(message.find(c.problem), std::string::npos) << message;
            EXPECT_NE(message.find("at column " + std::to_string(c.column)), std::string::npos) << message;
            EXPECT_EQ(message.find("at column " + std::to_string(c.column)) > message.find(error.problem()), true)
                << message;
            const bool at_end = error.offset() >= c.text.size();
            EXPECT_EQ(message.find("(the end of the expression)") != std::string::npos, at_end) << message;
            // The echoed expression (tabs and line breaks as spaces) and the caret line.
            std::string echoed = c.text;
            std::replace(echoed.begin(), echoed.end(), '\t', ' ');
            EXPECT_NE(message.find("\n  " + echoed + "\n"), std::string::npos) << message;
            EXPECT_EQ(last_line(message), "  " + std::string(c.column - 1, ' ') + std::string(c.width, '^')) << message;
        }
    }
    // The offset is in bytes, the column in characters.
    try {
        (void)parse_filter("G\xC3\xA8n\xC3\xA8 > 1 )");
        ADD_FAILURE() << "no error";
    } catch (const FilterParseError& error) {
        EXPECT_EQ(error.offset(), 11u);
        EXPECT_EQ(error.column(), 10u);
    }
}

TEST(GeneFilterErrors, ParseErrorsAreInvalidArgument) {
    EXPECT_THROW((void)parse_filter("CD3E >"), std::invalid_argument);
    EXPECT_THROW((void)parse_filter("CD3E >"), FilterParseError);
}

TEST(GeneFilterErrors, DeepNestingIsAnErrorNotACrash) {
    // A pasted runaway expression must not overflow the stack of the query thread.
    const std::size_t depth = 200000;
    for (const std::string& text : {std::string(depth, '(') + "A > 1" + std::string(depth, ')'),
                                    std::string(depth, '!') + "A > 1"}) {
        try {
            (void)parse_filter(text);
            ADD_FAILURE() << "no error for " << depth << " levels";
        } catch (const FilterParseError& error) {
            EXPECT_NE(error.problem().find("nested too deeply"), std::string::npos) << error.problem();
            EXPECT_LE(error.column(), 1001u);
        }
    }
    // Moderate nesting is fine.
    const std::string nested = std::string(200, '(') + "A > 1" + std::string(200, ')');
    EXPECT_EQ(parse_filter(nested).to_string(), "(A > 1)");
    // A long flat chain (parsed iteratively) prints and evaluates.
    std::string chain = "A > 1";
    for (int term = 0; term < 5000; ++term) chain += " and A > 1";
    const FilterExpression long_chain = parse_filter(chain);
    EXPECT_EQ(long_chain.nodes.size(), 10001u);
    const std::vector<std::vector<float>> columns{{0.0f, 2.0f}};
    const GeneFilterResult result = evaluate_filter(long_chain, columns);
    EXPECT_EQ(result.mask, (std::vector<std::uint8_t>{0, 1}));
}

// ---------------------------------------------------------------------------------
// Gene lookup

const std::vector<std::string> kNames{"CD3E", "CD3D", "CD3G", "MS4A1", "HLA-DRA", "CD4", "my gene"};
const std::vector<std::string> kIds{"ENSG01", "ENSG02", "ENSG03", "ENSG04", "ENSG05", "ENSG06", "ENSG07"};

TEST(GeneFilterLookup, NamesFirstThenGeneIds) {
    const GeneLookup lookup(kNames, kIds);
    EXPECT_EQ(lookup.num_genes(), 7);
    EXPECT_EQ(lookup.find("CD3E"), 0);
    EXPECT_EQ(lookup.find("MS4A1"), 3);
    EXPECT_EQ(lookup.find("ENSG05"), 4);
    EXPECT_EQ(lookup.find("my gene"), 6);
    EXPECT_EQ(lookup.find("cd3e"), -1);
    EXPECT_EQ(lookup.find(""), -1);
    // A var name wins over a gene id of another gene.
    const std::vector<std::string> names{"A", "B"};
    const std::vector<std::string> ids{"B", "X"};
    const GeneLookup both(names, ids);
    EXPECT_EQ(both.find("B"), 1);
    EXPECT_EQ(both.find("X"), 1);
    EXPECT_EQ(both.find("A"), 0);
    EXPECT_EQ(GeneLookup(names).find("X"), -1);
    EXPECT_THROW(GeneLookup(names, std::span<const std::string>(kIds)), std::invalid_argument);

    const FilterExpression expression = parse_filter("ENSG02 > 0 and CD3E > 1 or \"my gene\" < 2");
    EXPECT_EQ(resolve_filter_genes(expression, lookup), (std::vector<std::int32_t>{1, 0, 6}));
}

TEST(GeneFilterLookup, CloseMatches) {
    const GeneLookup lookup(kNames, kIds);
    // Ties (one edit each) broken by name.
    EXPECT_EQ(lookup.close_matches("CD3F"), (std::vector<std::string>{"CD3D", "CD3E", "CD3G"}));
    EXPECT_EQ(lookup.close_matches("CD3F", 1), (std::vector<std::string>{"CD3D"}));
    // Case differences cost nothing at first.
    EXPECT_EQ(lookup.close_matches("cd3e").front(), "CD3E");
    EXPECT_EQ(lookup.close_matches("ms4a1"), (std::vector<std::string>{"MS4A1"}));
    EXPECT_EQ(lookup.close_matches("HLA-DR"), (std::vector<std::string>{"HLA-DRA"}));
    EXPECT_EQ(lookup.close_matches("ENSG5").front(), "ENSG05");
    EXPECT_TRUE(lookup.close_matches("FOOBAR").empty());
}

TEST(GeneFilterLookup, UnknownGenesAreNamedWithSuggestionsAndCarets) {
    const GeneLookup lookup(kNames, kIds);
    try {
        (void)resolve_filter_genes(parse_filter("CD3F > 1"), lookup);
        ADD_FAILURE() << "no error";
    } catch (const UnknownGeneError& error) {
        const std::string message = error.what();
        ASSERT_EQ(error.unknown().size(), 1u);
        EXPECT_EQ(error.unknown()[0].gene, "CD3F");
        EXPECT_EQ(error.unknown()[0].offset, 0u);
        EXPECT_EQ(error.unknown()[0].suggestions, (std::vector<std::string>{"CD3D", "CD3E", "CD3G"}));
        EXPECT_EQ(error.column(), 1u);
        EXPECT_EQ(error.offset(), 0u);
        EXPECT_NE(message.find("filter: unknown gene 'CD3F' at column 1 (did you mean CD3D, CD3E, CD3G?)"), std::string::npos)
            << message;
        EXPECT_NE(message.find("not in var names or var['gene_ids']"), std::string::npos) << message;
        EXPECT_NE(message.find("\n  CD3F > 1\n"), std::string::npos) << message;
        EXPECT_EQ(last_line(message), "  ^^^^") << message;
        EXPECT_NE(error.problem().find("unknown gene 'CD3F'"), std::string::npos) << error.problem();
    }
    // Every unknown gene is named once (at its first appearance), quoted ones
    // underlined with their quotes.
    const std::string text = "CD3E > 1 and FOOBAR > 1 or \"my genes\" < 2 and FOOBAR < 5 and cd4 > 0";
    try {
        (void)resolve_filter_genes(parse_filter(text), lookup);
        ADD_FAILURE() << "no error";
    } catch (const UnknownGeneError& error) {
        const std::string message = error.what();
        ASSERT_EQ(error.unknown().size(), 3u) << message;
        EXPECT_EQ(error.unknown()[0].gene, "FOOBAR");
        EXPECT_EQ(error.unknown()[0].offset, 13u);
        EXPECT_TRUE(error.unknown()[0].suggestions.empty());
        EXPECT_EQ(error.unknown()[1].gene, "my genes");
        EXPECT_EQ(error.unknown()[1].offset, 27u);
        EXPECT_EQ(error.unknown()[1].suggestions.front(), "my gene");
        EXPECT_EQ(error.unknown()[2].gene, "cd4");
        EXPECT_EQ(error.unknown()[2].suggestions.front(), "CD4");
        EXPECT_EQ(error.offset(), 13u);
        EXPECT_EQ(error.column(), 14u);
        EXPECT_NE(message.find("filter: unknown genes 'FOOBAR' at column 14, 'my genes' at column 28 (did you mean my gene"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("'cd4' at column 62 (did you mean CD4"), std::string::npos) << message;
        EXPECT_EQ(message.find("FOOBAR' at column 47"), std::string::npos) << "named once: " << message;
        const std::string carets = "  " + std::string(13, ' ') + "^^^^^^" + std::string(27 - 19, ' ') +
                                   std::string(10, '^') + std::string(61 - 37, ' ') + "^^^";
        EXPECT_EQ(last_line(message), carets) << message;
    }
    // Known genes resolve; the error is an invalid_argument for callers that map it to
    // a usage error.
    EXPECT_THROW((void)resolve_filter_genes(parse_filter("X > 1"), lookup), std::invalid_argument);
    EXPECT_THROW((void)resolve_filter_genes(parse_filter("X > 1"), lookup), FilterParseError);
}

TEST(GeneFilterLookup, AmbiguousGenesAreNamedWithHowToNameEachOne) {
    // A duplicated var name (10x files read without var_names_make_unique).
    const std::vector<std::string> names{"TBCE", "CD3E", "TBCE"};
    const std::vector<std::string> ids{"ENSG1", "ENSG2", "ENSG3"};
    const GeneLookup lookup(names, ids);
    const std::string text = "CD3E > 1 and TBCE > 0 or CD3F > 2";
    try {
        (void)resolve_filter_genes(parse_filter(text), lookup);
        ADD_FAILURE() << "no error";
    } catch (const UnknownGeneError& error) {
        const std::string message = error.what();
        ASSERT_EQ(error.unknown().size(), 2u) << message;
        EXPECT_EQ(error.unknown()[0].gene, "TBCE");
        EXPECT_EQ(error.unknown()[0].ambiguity,
                  "it is the var name of 2 genes (gene ids ENSG1, ENSG3); name one by its gene id");
        EXPECT_TRUE(error.unknown()[1].ambiguity.empty());
        EXPECT_EQ(error.offset(), 13u) << "the first gene that does not resolve";
        EXPECT_NE(message.find("filter: unknown gene 'CD3F' at column 26 (did you mean CD3E?); not in var names or "
                               "var['gene_ids']; ambiguous gene 'TBCE' at column 14 (it is the var name of 2 genes "
                               "(gene ids ENSG1, ENSG3); name one by its gene id)"),
                  std::string::npos)
            << message;
        EXPECT_EQ(last_line(message), "  " + std::string(13, ' ') + "^^^^" + std::string(8, ' ') + "^^^^") << message;
    }
    // By gene id it resolves.
    EXPECT_EQ(resolve_filter_genes(parse_filter("ENSG3 > 0 and CD3E > 1"), lookup), (std::vector<std::int32_t>{2, 1}));
}

// ---------------------------------------------------------------------------------
// Evaluation on value columns

TEST(GeneFilterEvaluate, HandWrittenColumns) {
    // Cells:                      0     1     2     3      4     5
    const std::vector<float> cd3e{0.0f, 1.0f, 2.0f, 0.5f, 3.0f, NAN};
    const std::vector<float> ms4a1{0.0f, 0.0f, 1.0f, 2.0f, 0.0f, 0.0f};
    const std::vector<std::vector<float>> columns{cd3e, ms4a1};
    struct Case {
        const char* text;
        std::vector<std::uint8_t> mask;
    };
    const Case cases[] = {
        {"CD3E > 1 and MS4A1 == 0", {0, 0, 0, 0, 1, 0}},
        {"CD3E > 1 and not MS4A1 > 0", {0, 0, 0, 0, 1, 0}},
        {"CD3E >= 1", {0, 1, 1, 0, 1, 0}},
        {"CD3E < 1", {1, 0, 0, 1, 0, 0}},
        {"CD3E <= 1", {1, 1, 0, 1, 0, 0}},
        {"CD3E == 0.5", {0, 0, 0, 1, 0, 0}},
        {"CD3E between 0.5 2", {0, 1, 1, 1, 0, 0}},
        {"CD3E between 1 1", {0, 1, 0, 0, 0, 0}},
        // NaN matches no comparison, so its negation holds.
        {"not CD3E >= 0", {0, 0, 0, 0, 0, 1}},
        {"CD3E > 2 or MS4A1 > 1", {0, 0, 0, 1, 1, 0}},
        {"not (CD3E > 0 or MS4A1 > 0)", {1, 0, 0, 0, 0, 1}},
        {"MS4A1 > 0 or CD3E > 0 and CD3E < 1", {0, 0, 1, 1, 0, 0}},
        {"(MS4A1 > 0 or CD3E > 0) and CD3E < 1", {0, 0, 0, 1, 0, 0}},
    };
    for (const Case& c : cases) {
        FilterExpression expression = parse_filter(c.text);
        // Columns in the order of the expression's genes.
        std::vector<std::vector<float>> ordered;
        for (const auto& gene : expression.genes) ordered.push_back(gene.name == "CD3E" ? columns[0] : columns[1]);
        const GeneFilterResult result = evaluate_filter(expression, ordered);
        EXPECT_EQ(result.mask, c.mask) << c.text;
        EXPECT_EQ(result.num_matching, std::count(c.mask.begin(), c.mask.end(), 1)) << c.text;
    }
}

TEST(GeneFilterEvaluate, ChecksColumns) {
    const FilterExpression expression = parse_filter("A > 1 and B > 1");
    const std::vector<std::vector<float>> one{{1.0f, 2.0f}};
    EXPECT_THROW((void)evaluate_filter(expression, one), std::invalid_argument);
    const std::vector<std::vector<float>> ragged{{1.0f, 2.0f}, {1.0f}};
    try {
        (void)evaluate_filter(expression, ragged);
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("'B'"), std::string::npos) << error.what();
    }
    const std::vector<std::vector<float>> empty{{}, {}};
    const GeneFilterResult nothing = evaluate_filter(expression, empty);
    EXPECT_TRUE(nothing.mask.empty());
    EXPECT_EQ(nothing.num_matching, 0);
    EXPECT_THROW((void)evaluate_filter(FilterExpression{}, std::span<const std::vector<float>>{}), std::invalid_argument);
}

TEST(GeneFilterEvaluate, LogNormInPlace) {
    std::vector<float> column{0.0f, 1.0f, 3.0f, 2.0f, 5.0f};
    const std::vector<double> totals{10.0, 10.0, 7.0, 0.0, 123.0};
    lognorm_in_place(column, totals);
    EXPECT_EQ(column[0], 0.0f);
    EXPECT_EQ(column[1], static_cast<float>(std::log1p(1.0 * 1e4 / 10.0)));
    EXPECT_EQ(column[2], static_cast<float>(std::log1p(3.0 * 1e4 / 7.0)));
    EXPECT_EQ(column[3], 0.0f) << "a cell with total 0 gets 0";
    EXPECT_EQ(column[4], static_cast<float>(std::log1p(5.0 * 1e4 / 123.0)));
    std::vector<float> scaled{2.0f};
    lognorm_in_place(scaled, std::vector<double>{4.0}, 100.0);
    EXPECT_EQ(scaled[0], static_cast<float>(std::log1p(50.0)));
    std::vector<float> short_column{1.0f};
    EXPECT_THROW(lognorm_in_place(short_column, totals), std::invalid_argument);
}

// ---------------------------------------------------------------------------------
// Brute force: the dense values of each layer and expressions with their meaning

/// A cells x genes matrix with every value in both layers, computed from a dense copy.
struct DenseLayers {
    std::int64_t num_cells = 0;
    std::vector<double> totals;                  ///< per cell
    std::vector<std::vector<float>> counts;      ///< [gene][cell]
    std::vector<std::vector<float>> lognorm;     ///< [gene][cell]: ln(1 + x * 1e4 / total)
    const std::vector<std::vector<float>>& layer(FilterLayer which) const {
        return which == FilterLayer::Counts ? counts : lognorm;
    }
};

DenseLayers dense_layers(const DenseMatrix<double>& dense) {
    DenseLayers layers;
    layers.num_cells = dense.rows();
    const auto cells = static_cast<std::size_t>(dense.rows());
    const auto genes = static_cast<std::size_t>(dense.cols());
    layers.totals.assign(cells, 0.0);
    for (std::size_t cell = 0; cell < cells; ++cell)
        for (std::size_t gene = 0; gene < genes; ++gene)
            layers.totals[cell] += dense(static_cast<std::int64_t>(cell), static_cast<std::int64_t>(gene));
    layers.counts.assign(genes, std::vector<float>(cells, 0.0f));
    layers.lognorm.assign(genes, std::vector<float>(cells, 0.0f));
    for (std::size_t gene = 0; gene < genes; ++gene) {
        for (std::size_t cell = 0; cell < cells; ++cell) {
            const double x = dense(static_cast<std::int64_t>(cell), static_cast<std::int64_t>(gene));
            layers.counts[gene][cell] = static_cast<float>(x);
            const double total = layers.totals[cell];
            layers.lognorm[gene][cell] = total > 0.0 ? static_cast<float>(std::log1p(x * 1e4 / total)) : 0.0f;
        }
    }
    return layers;
}

/// An expression as the test means it: evaluated here, written out as text below.
struct TestTree {
    enum class Kind { Compare, And, Or, Not } kind = Kind::Compare;
    int gene = 0;
    FilterOp op = FilterOp::Greater;
    float value = 0.0f;
    float upper = 0.0f;
    std::vector<TestTree> children;
};

bool holds(const TestTree& tree, const std::vector<std::vector<float>>& values, std::size_t cell) {
    switch (tree.kind) {
        case TestTree::Kind::Compare: {
            const float x = values[static_cast<std::size_t>(tree.gene)][cell];
            switch (tree.op) {
                case FilterOp::Greater: return x > tree.value;
                case FilterOp::GreaterEqual: return x >= tree.value;
                case FilterOp::Less: return x < tree.value;
                case FilterOp::LessEqual: return x <= tree.value;
                case FilterOp::Equal: return x == tree.value;
                case FilterOp::Between: return tree.value <= x && x <= tree.upper;
            }
            return false;
        }
        case TestTree::Kind::And: return holds(tree.children[0], values, cell) && holds(tree.children[1], values, cell);
        case TestTree::Kind::Or: return holds(tree.children[0], values, cell) || holds(tree.children[1], values, cell);
        case TestTree::Kind::Not: return !holds(tree.children[0], values, cell);
    }
    return false;
}

std::vector<std::uint8_t> brute_mask(const TestTree& tree, const std::vector<std::vector<float>>& values,
                                     std::int64_t num_cells) {
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(num_cells), 0);
    for (std::size_t cell = 0; cell < mask.size(); ++cell) mask[cell] = holds(tree, values, cell) ? 1 : 0;
    return mask;
}

/// Shortest text that reads back as exactly `value`.
std::string float_text(float value) {
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    EXPECT_EQ(error, std::errc());
    return std::string(buffer, end);
}

/// Random expressions over genes 0 .. num_genes-1, thresholds drawn from the values
/// themselves (so that ==, >= and between's bounds are hit exactly), written with random
/// spelling: keyword case, symbols, gene names or ids, quotes, spacing, extra parentheses.
class RandomExpressions {
public:
    RandomExpressions(std::uint64_t seed, const std::vector<std::vector<float>>& values,
                      const std::vector<std::string>& names, const std::vector<std::string>& ids)
        : m_rng(seed), m_values(values), m_names(names), m_ids(ids) {}

    TestTree tree(int depth) {
        TestTree node;
        const int pick = depth <= 0 ? 0 : static_cast<int>(m_rng() % 8);
        if (pick <= 2) {
            node.kind = TestTree::Kind::Compare;
            node.gene = static_cast<int>(m_rng() % m_values.size());
            node.op = static_cast<FilterOp>(m_rng() % 6);
            node.value = threshold(node.gene);
            if (node.op == FilterOp::Between) {
                node.upper = threshold(node.gene);
                if (node.upper < node.value) std::swap(node.upper, node.value);
            }
        } else if (pick <= 4) {
            node.kind = TestTree::Kind::And;
        } else if (pick <= 6) {
            node.kind = TestTree::Kind::Or;
        } else {
            node.kind = TestTree::Kind::Not;
        }
        if (node.kind == TestTree::Kind::And || node.kind == TestTree::Kind::Or) {
            node.children.push_back(tree(depth - 1));
            node.children.push_back(tree(depth - 1));
        } else if (node.kind == TestTree::Kind::Not) {
            node.children.push_back(tree(depth - 1));
        }
        return node;
    }

    std::string text(const TestTree& node) {
        switch (node.kind) {
            case TestTree::Kind::Compare: {
                std::string out = gene_text(node.gene);
                if (node.op == FilterOp::Between)
                    return out + space(true) + one_of({"between", "BETWEEN", "Between"}) + space(true) + float_text(node.value) +
                           space(true) + float_text(node.upper);
                return out + space(false) + filter_op_text(node.op) + space(false) + float_text(node.value);
            }
            case TestTree::Kind::Not: {
                const std::string word = one_of({"not", "NOT", "!"});
                return word + space(word != "!") + child(node.children[0], 3);
            }
            case TestTree::Kind::And:
            case TestTree::Kind::Or: {
                const int precedence = node.kind == TestTree::Kind::And ? 2 : 1;
                const std::string word = node.kind == TestTree::Kind::And ? one_of({"and", "AND", "&&"})
                                                                          : one_of({"or", "Or", "||"});
                const bool keyword = word[0] != '&' && word[0] != '|';
                // and / or are associative: a right child of the same kind may go without
                // parentheses (it then parses left-nested, with the same meaning).
                return child(node.children[0], precedence) + space(keyword) + word + space(keyword) +
                       child(node.children[1], precedence);
            }
        }
        return {};
    }

private:
    static int precedence_of(const TestTree& node) {
        switch (node.kind) {
            case TestTree::Kind::Or: return 1;
            case TestTree::Kind::And: return 2;
            case TestTree::Kind::Not: return 3;
            case TestTree::Kind::Compare: return 4;
        }
        return 4;
    }
    /// A child written with parentheses when its operator binds looser, and sometimes
    /// when it need not.
    std::string child(const TestTree& node, int parent_precedence) {
        const bool needed = precedence_of(node) < parent_precedence;
        if (needed || m_rng() % 6 == 0) return "(" + space(false) + text(node) + space(false) + ")";
        return text(node);
    }
    std::string space(bool required) {
        static const char* const spaces[] = {" ", " ", "  ", "\t", "\n"};
        if (!required && m_rng() % 3 == 0) return "";
        return spaces[m_rng() % 5];
    }
    std::string one_of(std::initializer_list<const char*> options) {
        auto it = options.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(m_rng() % options.size()));
        return *it;
    }
    std::string gene_text(int gene) {
        const std::string& name = m_rng() % 4 == 0 ? m_ids[static_cast<std::size_t>(gene)] : m_names[static_cast<std::size_t>(gene)];
        switch (m_rng() % 5) {
            case 0: return "\"" + name + "\"";
            case 1: return "'" + name + "'";
            default: return name;
        }
    }
    float threshold(int gene) {
        const auto& column = m_values[static_cast<std::size_t>(gene)];
        float at = column[static_cast<std::size_t>(m_rng() % column.size())];
        if (std::isnan(at)) at = 1.0f;  // a threshold is a number
        switch (m_rng() % 4) {
            case 0: return 0.0f;
            case 1: return at * 0.5f + 0.25f;
            default: return at;
        }
    }

    std::mt19937_64 m_rng;
    const std::vector<std::vector<float>>& m_values;
    const std::vector<std::string>& m_names;
    const std::vector<std::string>& m_ids;
};

/// Hand-written expressions over the simulated genes G0 .. G59 with their meaning.
struct HandCase {
    std::string text;
    std::function<bool(const std::function<float(int)>&)> holds;
};

std::vector<HandCase> hand_cases(FilterLayer layer) {
    // Thresholds that split the simulated cells in both layers.
    const float high = layer == FilterLayer::Counts ? 2.0f : 6.0f;
    const float low = layer == FilterLayer::Counts ? 1.0f : 4.5f;
    const std::string h = float_text(high), l = float_text(low);
    return {
        {"G1 > " + h + " and not G2 > 0", [=](const auto& v) { return v(1) > high && !(v(2) > 0.0f); }},
        {"G3 >= " + l + " or G4 < " + h + " and G5 == 0",
         [=](const auto& v) { return v(3) >= low || (v(4) < high && v(5) == 0.0f); }},
        {"(G3 >= " + l + " or G4 < " + h + ") and G5 == 0",
         [=](const auto& v) { return (v(3) >= low || v(4) < high) && v(5) == 0.0f; }},
        {"not not G6 <= " + l, [=](const auto& v) { return v(6) <= low; }},
        {"G7 between " + l + " " + h, [=](const auto& v) { return low <= v(7) && v(7) <= high; }},
        {"ENSG8 > 0 && !(G9 > 0 || G10 > 0)", [=](const auto& v) { return v(8) > 0.0f && !(v(9) > 0.0f || v(10) > 0.0f); }},
        {"G11 == 0 and G12 == 0 and G13 == 0", [=](const auto& v) { return v(11) == 0.0f && v(12) == 0.0f && v(13) == 0.0f; }},
        {"G14 > 0 or G15 > 0 or G16 > 0 or G17 > 0",
         [=](const auto& v) { return v(14) > 0.0f || v(15) > 0.0f || v(16) > 0.0f || v(17) > 0.0f; }},
        {"NOT G18 > " + l + " AND G18 > 0", [=](const auto& v) { return !(v(18) > low) && v(18) > 0.0f; }},
        {"'G19' >= 0", [=](const auto&) { return true; }},
        {"G20 < 0", [=](const auto&) { return false; }},
    };
}

std::vector<std::string> simulated_ids(std::int64_t num_genes) {
    std::vector<std::string> ids;
    for (std::int64_t gene = 0; gene < num_genes; ++gene) ids.push_back("ENSG" + std::to_string(gene));
    return ids;
}

class GeneFilterShards : public ::testing::TestWithParam<int> {};

TEST_P(GeneFilterShards, MatchesBruteForceOnSimulatedData) {
    const int shards = GetParam();
    const CsrShard whole = test::step_counts(7, 400, 60);
    const ShardSet set = test::simulated_set(whole, shards);
    ASSERT_EQ(set.num_shards(), shards);
    const DenseLayers layers = dense_layers(test::to_dense(whole));
    const auto names = test::simulated_gene_names(60);
    const auto ids = simulated_ids(60);
    const GeneLookup lookup(names, ids);
    JobContext ctx;
    // The totals computed here are the shards' row sums.
    EXPECT_EQ(set.row_stats({}, ctx).total, layers.totals);

    for (const FilterLayer layer : {FilterLayer::Counts, FilterLayer::LogNorm}) {
        SCOPED_TRACE(layer == FilterLayer::Counts ? "counts" : "lognorm");
        const auto& values = layers.layer(layer);
        GeneFilterOptions options;
        options.layer = layer;
        // Counts need no totals.
        const std::span<const double> totals =
            layer == FilterLayer::Counts ? std::span<const double>{} : std::span<const double>(layers.totals);

        for (const HandCase& c : hand_cases(layer)) {
            std::vector<std::uint8_t> expected(static_cast<std::size_t>(layers.num_cells));
            for (std::size_t cell = 0; cell < expected.size(); ++cell)
                expected[cell] = c.holds([&](int gene) { return values[static_cast<std::size_t>(gene)][cell]; }) ? 1 : 0;
            const FilterExpression expression = parse_filter(c.text);
            const auto genes = resolve_filter_genes(expression, lookup);
            const GeneFilterResult result = evaluate_filter(set, expression, genes, totals, options, ctx);
            EXPECT_EQ(result.mask, expected) << c.text;
            EXPECT_EQ(result.num_matching, std::count(expected.begin(), expected.end(), 1)) << c.text;
        }
        // The hand-written thresholds split the cells (the test is not vacuous).
        {
            const FilterExpression expression = parse_filter(hand_cases(layer)[0].text);
            const auto result = evaluate_filter(set, expression, resolve_filter_genes(expression, lookup), totals, options, ctx);
            EXPECT_GT(result.num_matching, 0);
            EXPECT_LT(result.num_matching, layers.num_cells);
        }

        RandomExpressions random(100 + static_cast<std::uint64_t>(shards) * 10 + static_cast<std::uint64_t>(layer), values,
                                 names, ids);
        std::int64_t nontrivial = 0;
        for (int round = 0; round < 150; ++round) {
            const TestTree tree = random.tree(1 + round % 4);
            const std::string text = random.text(tree);
            SCOPED_TRACE("expression: " + text);
            const FilterExpression expression = parse_filter(text);
            expect_well_formed(expression);
            const auto genes = resolve_filter_genes(expression, lookup);
            const GeneFilterResult result = evaluate_filter(set, expression, genes, totals, options, ctx);
            const auto expected = brute_mask(tree, values, layers.num_cells);
            ASSERT_EQ(result.mask, expected);
            EXPECT_EQ(result.num_matching, std::count(expected.begin(), expected.end(), 1));
            if (result.num_matching > 0 && result.num_matching < layers.num_cells) ++nontrivial;
            // The values the evaluator saw are the layer's.
            if (round % 25 == 0) {
                const auto columns = filter_gene_values(set, genes, totals, options, ctx);
                for (std::size_t slot = 0; slot < genes.size(); ++slot)
                    EXPECT_EQ(columns[slot], values[static_cast<std::size_t>(genes[slot])]) << expression.genes[slot].name;
            }
        }
        EXPECT_GT(nontrivial, 50) << "most random expressions should split the cells";
    }
}

INSTANTIATE_TEST_SUITE_P(Shards, GeneFilterShards, ::testing::Values(1, 3));

TEST(GeneFilterEvaluate, ManyBlocksOfCellsMatchBruteForce) {
    // More cells than one evaluation block (4096), with a partial last block, and NaNs.
    const std::size_t cells = 3 * 4096 + 517;
    std::mt19937_64 rng(11);
    std::vector<std::vector<float>> values(4, std::vector<float>(cells));
    for (auto& column : values)
        for (float& value : column) value = rng() % 50 == 0 ? NAN : static_cast<float>(rng() % 5);
    const std::vector<std::string> names{"A", "B", "C", "D"};
    const std::vector<std::string> ids{"a", "b", "c", "d"};
    const GeneLookup lookup(names, ids);
    RandomExpressions random(5, values, names, ids);
    for (int round = 0; round < 60; ++round) {
        const TestTree tree = random.tree(1 + round % 5);
        const std::string text = random.text(tree);
        const FilterExpression expression = parse_filter(text);
        const auto genes = resolve_filter_genes(expression, lookup);
        std::vector<std::vector<float>> columns;
        for (const auto gene : genes) columns.push_back(values[static_cast<std::size_t>(gene)]);
        const GeneFilterResult result = evaluate_filter(expression, columns);
        const auto expected = brute_mask(tree, values, static_cast<std::int64_t>(cells));
        ASSERT_EQ(result.mask, expected) << text;
        EXPECT_EQ(result.num_matching, std::count(expected.begin(), expected.end(), 1)) << text;
    }
}

// ---------------------------------------------------------------------------------
// Gene columns from the shards

/// Columns straight from the dense copy.
std::vector<float> dense_column(const DenseMatrix<double>& dense, std::int32_t gene) {
    std::vector<float> column(static_cast<std::size_t>(dense.rows()));
    for (std::int64_t cell = 0; cell < dense.rows(); ++cell) column[static_cast<std::size_t>(cell)] = static_cast<float>(dense(cell, gene));
    return column;
}

TEST(GeneFilterColumns, AnyOrderRepeatsAndShardCounts) {
    const CsrShard whole = test::step_counts(3, 257, 40);
    const DenseMatrix<double> dense = test::to_dense(whole);
    const std::vector<std::int32_t> genes{39, 0, 17, 17, 5, 39, 1, 38, 20};
    JobContext ctx;
    GeneFilterOptions counts;
    counts.layer = FilterLayer::Counts;
    for (const int shards : {1, 3, 7}) {
        const ShardSet set = test::simulated_set(whole, shards);
        const auto columns = filter_gene_values(set, genes, {}, counts, ctx);
        ASSERT_EQ(columns.size(), genes.size());
        for (std::size_t slot = 0; slot < genes.size(); ++slot)
            EXPECT_EQ(columns[slot], dense_column(dense, genes[slot])) << "gene " << genes[slot] << ", " << shards << " shards";
        EXPECT_TRUE(filter_gene_values(set, {}, {}, counts, ctx).empty());
        // A gene outside the matrix is an error naming it.
        const std::vector<std::int32_t> outside{3, 40};
        EXPECT_THROW((void)filter_gene_values(set, outside, {}, counts, ctx), std::invalid_argument);
        const std::vector<std::int32_t> negative{-1};
        EXPECT_THROW((void)filter_gene_values(set, negative, {}, counts, ctx), std::invalid_argument);
    }
}

TEST(GeneFilterColumns, RowsOfEveryShape) {
    // Rows that defeat the interpolation guess: clustered indices, both ends only, every
    // gene, every k-th gene, one entry, none; queried for every gene in shuffled order.
    const std::int32_t num_genes = 5000;
    CsrShard shard;
    shard.num_genes = num_genes;
    const auto add_row = [&](const std::vector<std::int32_t>& indices) {
        for (const auto gene : indices) {
            shard.gene_indices.push_back(gene);
            shard.values.push_back(static_cast<float>(gene % 97 + 1));
        }
        shard.row_offsets.push_back(static_cast<std::int64_t>(shard.gene_indices.size()));
    };
    std::vector<std::int32_t> row;
    for (std::int32_t gene = 0; gene < 200; ++gene) row.push_back(gene);
    for (std::int32_t gene = 4800; gene < num_genes; ++gene) row.push_back(gene);
    add_row(row);
    add_row({0, num_genes - 1});
    row.clear();
    for (std::int32_t gene = 0; gene < num_genes; ++gene) row.push_back(gene);
    add_row(row);
    for (const int stride : {2, 7, 61, 997}) {
        row.clear();
        for (std::int32_t gene = stride / 2; gene < num_genes; gene += stride) row.push_back(gene);
        add_row(row);
    }
    add_row({2500});
    add_row({});
    row.clear();
    for (std::int32_t gene = 0; gene < 30; ++gene) row.push_back(gene * gene * 5);  // quadratic spacing
    add_row(row);
    row.clear();
    for (std::int32_t gene = 2400; gene < 2600; ++gene) row.push_back(gene);
    row.push_back(4999);
    add_row(row);
    shard.check_invariants();
    const DenseMatrix<double> dense = test::to_dense(shard);

    std::vector<std::int32_t> genes(static_cast<std::size_t>(num_genes));
    for (std::int32_t gene = 0; gene < num_genes; ++gene) genes[static_cast<std::size_t>(gene)] = gene;
    std::shuffle(genes.begin(), genes.end(), std::mt19937_64(3));
    JobContext ctx;
    for (const int shards : {1, 3}) {
        const ShardSet set = test::simulated_set(shard, shards);
        // All genes at once, and small subsets (the searches start from other places).
        const auto all = set.gene_columns(genes, ctx);
        for (std::size_t slot = 0; slot < genes.size(); ++slot)
            ASSERT_EQ(all[slot], dense_column(dense, genes[slot])) << "gene " << genes[slot];
        for (const std::vector<std::int32_t>& subset :
             {std::vector<std::int32_t>{2500}, std::vector<std::int32_t>{4999, 0}, std::vector<std::int32_t>{199, 200, 4800, 4799},
              std::vector<std::int32_t>{1, 2, 3, 4998}, std::vector<std::int32_t>{2599, 2401, 2600, 2399, 4999, 4999}}) {
            const auto columns = set.gene_columns(subset, ctx);
            for (std::size_t slot = 0; slot < subset.size(); ++slot)
                EXPECT_EQ(columns[slot], dense_column(dense, subset[slot])) << "gene " << subset[slot];
        }
    }
}

TEST(GeneFilterColumns, OptionsAndTotalsAreChecked) {
    const ShardSet set = test::simulated_set(test::step_counts(2, 50, 20), 2);
    const FilterExpression expression = parse_filter("G1 > 0");
    const std::vector<std::int32_t> genes{1};
    JobContext ctx;
    GeneFilterOptions options;
    options.target_sum = 0.0;
    try {
        validate(options);
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("GeneFilterOptions::target_sum"), std::string::npos) << error.what();
    }
    options.target_sum = NAN;
    EXPECT_THROW(validate(options), std::invalid_argument);
    options.target_sum = INFINITY;
    EXPECT_THROW(validate(options), std::invalid_argument);
    options.target_sum = -1.0;
    EXPECT_THROW((void)evaluate_filter(set, expression, genes, std::vector<double>(50, 1.0), options, ctx), std::invalid_argument);
    options = GeneFilterOptions{};
    EXPECT_NO_THROW(validate(options));
    EXPECT_EQ(options.layer, FilterLayer::LogNorm) << "the default layer";
    EXPECT_EQ(options.target_sum, 1e4);
    // LogNorm needs one total per cell.
    EXPECT_THROW((void)evaluate_filter(set, expression, genes, {}, options, ctx), std::invalid_argument);
    EXPECT_THROW((void)evaluate_filter(set, expression, genes, std::vector<double>(49, 1.0), options, ctx), std::invalid_argument);
    // One gene index per expression gene.
    const std::vector<std::int32_t> two{1, 2};
    EXPECT_THROW((void)evaluate_filter(set, expression, two, std::vector<double>(50, 1.0), options, ctx), std::invalid_argument);
    // A cancelled job stops.
    JobContext cancelled;
    cancelled.cancel();
    EXPECT_THROW((void)evaluate_filter(set, expression, genes, std::vector<double>(50, 1.0), options, cancelled), Cancelled);
}

TEST(GeneFilterEvaluate, TargetSumScalesTheLogNormValues) {
    const CsrShard whole = test::step_counts(9, 120, 30);
    const ShardSet set = test::simulated_set(whole, 2);
    const DenseMatrix<double> dense = test::to_dense(whole);
    const DenseLayers layers = dense_layers(dense);
    GeneFilterOptions options;
    options.target_sum = 100.0;
    JobContext ctx;
    const std::vector<std::int32_t> genes{4};
    const auto columns = filter_gene_values(set, genes, layers.totals, options, ctx);
    for (std::size_t cell = 0; cell < layers.totals.size(); ++cell) {
        const double x = dense(static_cast<std::int64_t>(cell), 4);
        const float expected = layers.totals[cell] > 0 ? static_cast<float>(std::log1p(x * 100.0 / layers.totals[cell])) : 0.0f;
        EXPECT_EQ(columns[0][cell], expected) << "cell " << cell;
    }
}

// ---------------------------------------------------------------------------------
// Real data: the 10x v3 chr21 dataset of scanpy's tests

TEST(GeneFilterRealData, TenxV3Chr21MatchesDenseBruteForce) {
    const auto path = test::shared_data("scanpy_10x_v3_chr21/filtered_feature_bc_matrix.h5");
    FATHOM_REQUIRE_PATH(path);
    io::OpenedDataset opened = io::open_dataset(path.string());
    const std::int64_t num_cells = opened.meta.shape.num_cells;
    ASSERT_EQ(num_cells, 1107);
    const auto offsets = opened.source->row_offsets();
    const ShardSet set = ShardSet::make_cpu(io::load_shards(*opened.source, plan_row_ranges(offsets, 3)));
    ASSERT_EQ(set.num_shards(), 3);
    // The dense reference: the whole matrix read once, entry by entry.
    const CsrShard all = opened.source->read_rows(0, num_cells);
    const auto& names = opened.meta.var.index();
    const Column* id_column = opened.meta.var.find("gene_ids");
    ASSERT_NE(id_column, nullptr);
    const auto& ids = std::get<StringColumn>(id_column->data).values;
    const GeneLookup lookup(names, ids);

    // Genes detected in most cells of this dataset (counted in the Python snapshot:
    // ITGB2 919, SON 895, HMGN1 817, SOD1 776 of 1107 cells).
    const std::vector<std::string> panel{"ITGB2", "SON", "HMGN1", "SOD1"};
    std::vector<std::int32_t> panel_index;
    for (const auto& gene : panel) {
        const auto it = std::find(names.begin(), names.end(), gene);
        ASSERT_NE(it, names.end()) << gene;
        panel_index.push_back(static_cast<std::int32_t>(it - names.begin()));
    }
    std::vector<double> totals(static_cast<std::size_t>(num_cells), 0.0);
    std::vector<std::vector<float>> counts(panel.size(), std::vector<float>(static_cast<std::size_t>(num_cells), 0.0f));
    for (std::int64_t cell = 0; cell < num_cells; ++cell) {
        for (auto entry = all.row_offsets[static_cast<std::size_t>(cell)]; entry < all.row_offsets[static_cast<std::size_t>(cell) + 1];
             ++entry) {
            const float value = all.values[static_cast<std::size_t>(entry)];
            totals[static_cast<std::size_t>(cell)] += value;
            const auto gene = all.gene_indices[static_cast<std::size_t>(entry)];
            for (std::size_t slot = 0; slot < panel.size(); ++slot)
                if (panel_index[slot] == gene) counts[slot][static_cast<std::size_t>(cell)] = value;
        }
    }
    std::vector<std::vector<float>> lognorm = counts;
    for (auto& column : lognorm)
        for (std::size_t cell = 0; cell < column.size(); ++cell)
            column[cell] = totals[cell] > 0 ? static_cast<float>(std::log1p(static_cast<double>(column[cell]) * 1e4 / totals[cell])) : 0.0f;
    const std::string sod1_id = ids[static_cast<std::size_t>(panel_index[3])];
    ASSERT_EQ(sod1_id, "ENSG00000142168");

    struct Case {
        FilterLayer layer;
        std::string text;
        std::function<bool(const std::vector<float>&)> holds;  ///< over ITGB2, SON, HMGN1, SOD1
    };
    const std::vector<Case> cases{
        {FilterLayer::Counts, "ITGB2 > 2 and not (SON >= 1 or HMGN1 between 1 3) or " + sod1_id + " == 0",
         [](const auto& v) { return (v[0] > 2.0f && !(v[1] >= 1.0f || (1.0f <= v[2] && v[2] <= 3.0f))) || v[3] == 0.0f; }},
        {FilterLayer::Counts, "ITGB2 >= 3 && SOD1 > 1", [](const auto& v) { return v[0] >= 3.0f && v[3] > 1.0f; }},
        {FilterLayer::Counts, "not ITGB2 > 0 or HMGN1 > 4 and SON < 2",
         [](const auto& v) { return !(v[0] > 0.0f) || (v[2] > 4.0f && v[1] < 2.0f); }},
        {FilterLayer::LogNorm, "ITGB2 > 7 and not (SON >= 6.5 or HMGN1 between 6 6.8) or " + sod1_id + " == 0",
         [](const auto& v) { return (v[0] > 7.0f && !(v[1] >= 6.5f || (6.0f <= v[2] && v[2] <= 6.8f))) || v[3] == 0.0f; }},
        {FilterLayer::LogNorm, "ITGB2 between 6 7.5 and SOD1 > 6.2",
         [](const auto& v) { return 6.0f <= v[0] && v[0] <= 7.5f && v[3] > 6.2f; }},
    };
    JobContext ctx;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        const auto& values = c.layer == FilterLayer::Counts ? counts : lognorm;
        std::vector<std::uint8_t> expected(static_cast<std::size_t>(num_cells));
        for (std::size_t cell = 0; cell < expected.size(); ++cell)
            expected[cell] = c.holds(std::vector<float>{values[0][cell], values[1][cell], values[2][cell], values[3][cell]}) ? 1 : 0;
        const auto matching = std::count(expected.begin(), expected.end(), 1);
        EXPECT_GT(matching, 20) << "the expression should select a real subset";
        EXPECT_LT(matching, num_cells - 20) << "the expression should select a real subset";

        const FilterExpression expression = parse_filter(c.text);
        const auto genes = resolve_filter_genes(expression, lookup);
        GeneFilterOptions options;
        options.layer = c.layer;
        const GeneFilterResult result = evaluate_filter(set, expression, genes, totals, options, ctx);
        EXPECT_EQ(result.mask, expected);
        EXPECT_EQ(result.num_matching, matching);
    }
    // An unknown gene on real var names is named with its neighbours.
    try {
        (void)resolve_filter_genes(parse_filter("ITGB3 > 1"), lookup);
        ADD_FAILURE() << "no error";
    } catch (const UnknownGeneError& error) {
        EXPECT_NE(std::string(error.what()).find("ITGB2"), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace fathom
