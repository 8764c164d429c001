#pragma once
/// Marker-gene filters as rule rows, the form the GUI edits: each row is
/// `[not] gene op threshold`, joined to the row before it by "and" or "or", with the
/// text form's precedence ("and" binds tighter than "or"), so the rows
///   CD3E > 1 | and not MS4A1 > 0 | or NKG7 between 1 3
/// read as the text "CD3E > 1 and not MS4A1 > 0 or NKG7 between 1 3". Converts rows to
/// text and text to rows with the engine's parser (core/algo/gene_filter.hpp), so that
/// the GUI never includes algo headers. Also reads gene lists for gene-set scores.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fathom {

/// Comparison of a rule (the text form's operators).
enum class RuleOp {
    Greater,       ///< x > value
    GreaterEqual,  ///< x >= value
    Less,          ///< x < value
    LessEqual,     ///< x <= value
    Equal,         ///< x == value
    Between,       ///< value <= x <= upper (inclusive)
};

/// How a rule joins the rules before it.
enum class RuleJoin { And, Or };

/// One rule row.
struct FilterRule {
    std::string gene;                ///< var name or gene id
    RuleOp op = RuleOp::Greater;
    float value = 0.0f;              ///< threshold (Between: lower bound)
    float upper = 0.0f;              ///< Between only: upper bound (>= value for a non-empty range)
    bool negated = false;            ///< "not" before the comparison
    RuleJoin join = RuleJoin::And;   ///< ignored on the first row

    friend bool operator==(const FilterRule&, const FilterRule&) = default;
};

/// The text form's spelling of an operator: ">", ">=", "<", "<=", "==", "between".
const char* rule_op_text(RuleOp op) noexcept;

/// The text form of the rows, e.g. "CD3E > 1 and not MS4A1 > 0"; "" for no rows. Gene
/// names that are not bare words are quoted; thresholds are written as the shortest
/// text that reads back as the same float, so parse_filter_rules() gives the rows back.
std::string filter_rules_text(std::span<const FilterRule> rules);

/// What parse_filter_rules() made of a text.
struct FilterRulesParse {
    bool ok = false;                 ///< the text parses (and its genes are known, when checked)
    /// The text (and so the rows) can be shown as rule rows: an "or" of "and"s of
    /// possibly negated comparisons. False for e.g. "not (A > 1 or B > 1)" or
    /// "(A > 1 or B > 1) and C > 1", which stay valid as text.
    bool representable = false;
    std::vector<FilterRule> rules;   ///< when ok and representable; double negations cancel
    std::vector<std::string> genes;  ///< when ok: distinct genes in order of first appearance
    // ---- when !ok --------------------------------------------------------------------
    std::string message;             ///< the parser's full message, with the caret lines
    std::string problem;             ///< the mistake alone, e.g. "expected a number after '>'"
    std::size_t offset = 0;          ///< 0-based byte offset of the mistake
    std::size_t length = 1;          ///< bytes to underline (>= 1)
    std::size_t column = 1;          ///< 1-based character column of the mistake
};

/// Parses a filter text (grammar in core/algo/gene_filter.hpp). Never throws for bad
/// text: a syntax error, or (when `names` is not empty) a gene that GeneLookup(names,
/// ids) does not resolve to one column (unknown or ambiguous), is returned with its
/// position. The
/// empty text (only spaces) is ok with no rules.
FilterRulesParse parse_filter_rules(std::string_view text, std::span<const std::string> names = {},
                                    std::span<const std::string> ids = {});

/// The parser's full message (with the caret lines, e.g. "filter: the expression is
/// empty at column 1 ...") when `text` is not a filter expression — the empty text
/// included, unlike parse_filter_rules — or "" when it parses. Genes are not looked up.
std::string filter_syntax_error(std::string_view text);

/// Genes of a gene-list file (one per line, or a CSV/TSV whose first column is the gene;
/// see core/io/gene_list.hpp), in file order, each once. Throws std::runtime_error naming
/// the file when it cannot be read or names no gene.
std::vector<std::string> read_gene_list_file(const std::string& path);

}  // namespace fathom
