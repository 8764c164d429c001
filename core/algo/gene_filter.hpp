#pragma once
/// Marker-gene filter expressions: "CD3E > 1 and not MS4A1 > 0".
///
/// Text form (keywords are case-insensitive):
///   expression := or
///   or         := and { ("or" | "||") and }
///   and        := not { ("and" | "&&") not }
///   not        := ("not" | "!") not | "(" expression ")" | comparison
///   comparison := gene (">" | ">=" | "<" | "<=" | "==") number
///               | gene "between" number number          (inclusive: low <= x <= high)
///   gene       := bare word of letters, digits and - _ . :  (e.g. HLA-DRA, 7SK)
///               | "quoted" or 'quoted' (any text but the quote; no escapes)
///   number     := decimal, optionally signed, with optional exponent (1, -0.5, 2.5e-3)
/// so "not" binds tighter than "and", which binds tighter than "or". Parentheses and
/// negations nest at most 1000 levels deep.
///
/// Comparisons are taken in float32, the type of the values: a threshold is rounded
/// to the nearest float once, so ">=" and "==" agree. NaN values match no comparison.
///
/// Use: parse_filter() -> resolve_filter_genes() against var names / gene ids ->
/// evaluate_filter() on value columns, or on the shards directly.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/ShardSet.hpp"
#include "core/data/GeneLookup.hpp"
#include "core/types/JobContext.hpp"
#include "core/types/gene_filter_options.hpp"

namespace fathom {

/// A filter expression that cannot be parsed. what() names the mistake, its column
/// and repeats the expression with a caret under it:
///   filter: expected a comparison operator after 'CD3E' at column 6
///     CD3E 1 and not MS4A1 > 0
///          ^
class FilterParseError : public std::invalid_argument {
public:
    /// `offset` is the byte offset of the mistake in `expression` (0-based; the end of
    /// the text for "ended too early"); `length` how many bytes to underline (>= 1).
    FilterParseError(std::string expression, std::size_t offset, std::string problem, std::size_t length = 1);

    const std::string& expression() const noexcept { return m_expression; }
    /// 0-based byte offset of the mistake.
    std::size_t offset() const noexcept { return m_offset; }
    /// 1-based column of the mistake, in characters (UTF-8 aware), as in the message.
    std::size_t column() const noexcept { return m_column; }
    /// The problem without the position or the caret lines, e.g. "expected a
    /// comparison operator after 'CD3E'".
    const std::string& problem() const noexcept { return m_problem; }

protected:
    /// For derived errors that format their own message.
    FilterParseError(std::string message, std::string expression, std::size_t offset, std::string problem);

private:
    std::string m_expression;
    std::size_t m_offset = 0;
    std::size_t m_column = 1;
    std::string m_problem;
};

/// Genes of a parsed expression that name no single column (GeneLookup): neither a var
/// name nor a gene id, or ambiguous. what() names every unknown gene with up to 3 close
/// matches each, then every ambiguous one with how to name it, and underlines them:
///   filter: unknown gene 'CD3F' at column 1 (did you mean CD3E, CD3D, CD3G?); not in var names or var['gene_ids']
///     CD3F > 1
///     ^^^^
///   filter: ambiguous gene 'TBCE' at column 1 (it is the var name of 2 genes (gene ids
///   ENSG1, ENSG2); name one by its gene id)
/// offset()/column() point at the first such gene.
class UnknownGeneError : public FilterParseError {
public:
    /// One gene with where it first appears and its close matches.
    struct Unknown {
        std::string gene;
        std::size_t offset = 0;                ///< byte offset of its first appearance
        std::vector<std::string> suggestions;  ///< unknown: up to 3, closest first
        std::string ambiguity;                 ///< ambiguous: GeneLookup::ambiguity(); empty when unknown
    };
    UnknownGeneError(std::string expression, std::vector<Unknown> unknown);
    const std::vector<Unknown>& unknown() const noexcept { return m_unknown; }

private:
    std::vector<Unknown> m_unknown;
};

/// Comparison of one gene's value x with the threshold(s).
enum class FilterOp {
    Greater,       ///< x > value
    GreaterEqual,  ///< x >= value
    Less,          ///< x < value
    LessEqual,     ///< x <= value
    Equal,         ///< x == value
    Between,       ///< value <= x <= upper
};

/// The spelling of an operator in the text form (">=", "between", ...).
const char* filter_op_text(FilterOp op) noexcept;

/// One node of the expression tree.
struct FilterNode {
    /// What the node does.
    enum class Kind { Compare, And, Or, Not };
    Kind kind = Kind::Compare;
    // ---- Compare ----
    int gene = -1;              ///< index into FilterExpression::genes
    FilterOp op = FilterOp::Greater;
    float value = 0.0f;         ///< threshold (Between: lower bound), rounded to float
    float upper = 0.0f;         ///< Between only: upper bound
    // ---- And / Or (both), Not (left only) ----
    int left = -1;              ///< index into FilterExpression::nodes
    int right = -1;
    std::size_t offset = 0;     ///< byte offset of the node's first character in the text
};

/// A gene an expression mentions (each distinct name once).
struct FilterGene {
    std::string name;           ///< as written (quotes removed)
    std::size_t offset = 0;     ///< byte offset of its first appearance
    std::size_t length = 0;     ///< bytes of that appearance, quotes included
};

/// A parsed expression. Nodes are stored children-first: every node's children have
/// smaller indices, and the root is the last node.
struct FilterExpression {
    std::string text;                ///< the text it was parsed from
    std::vector<FilterNode> nodes;   ///< never empty after parse_filter()
    std::vector<FilterGene> genes;   ///< distinct genes in order of first appearance

    int root() const noexcept { return static_cast<int>(nodes.size()) - 1; }
    /// Canonical text with explicit parentheses, e.g. "((CD3E > 1) and (not (MS4A1 > 0)))".
    std::string to_string() const;
};

/// Parses the text form (see the file comment). Throws FilterParseError.
FilterExpression parse_filter(std::string_view text);

/// A gene name as the text form writes it: bare when it is a bare word and not a
/// keyword, else in double quotes (single quotes when it holds a double quote).
std::string filter_gene_text(const std::string& name);
/// A threshold as the text form writes it: the shortest text that reads back as the
/// same float ("1", "0.5", "2.5e-05").
std::string filter_number_text(float value);

/// Gene index of every FilterExpression::genes entry, in that order. Throws
/// UnknownGeneError naming every gene that `lookup` does not resolve to one column
/// (unknown or ambiguous).
std::vector<std::int32_t> resolve_filter_genes(const FilterExpression& expression, const GeneLookup& lookup);

/// Throws std::invalid_argument naming the field ("GeneFilterOptions::target_sum must be > 0").
void validate(const GeneFilterOptions& options);

/// A cell mask.
struct GeneFilterResult {
    std::vector<std::uint8_t> mask;  ///< one flag per cell, 1 = the expression holds
    std::int64_t num_matching = 0;   ///< cells with mask 1
};

/// Evaluates the expression on value columns: columns[k] holds the values of
/// expression.genes[k] for every cell (all the same length). Throws
/// std::invalid_argument when the number of columns or their lengths disagree.
GeneFilterResult evaluate_filter(const FilterExpression& expression, std::span<const std::vector<float>> columns);
/// The same on borrowed columns (e.g. cached ones), without copying them.
GeneFilterResult evaluate_filter(const FilterExpression& expression, std::span<const std::span<const float>> columns);

/// Turns counts into LogNorm values in place: x -> float(log1p(double(x) * target_sum /
/// totals[cell])), 0 where the cell total is 0 (Engine::gene_values' formula).
/// totals has column.size() entries.
void lognorm_in_place(std::vector<float>& column, std::span<const double> totals, double target_sum = 1e4);

/// Values of `genes` for every cell of `counts` in the options' layer: one
/// ShardSet::gene_columns call (never a copy of the matrix), then LogNorm if asked.
/// cell_totals (num_cells entries, e.g. QcResult::total_counts) is needed for LogNorm
/// only and may be empty for Counts.
std::vector<std::vector<float>> filter_gene_values(const ShardSet& counts, std::span<const std::int32_t> genes,
                                                   std::span<const double> cell_totals,
                                                   const GeneFilterOptions& options, JobContext& ctx);

/// Evaluates `expression` on every cell of `counts`; gene_indices from
/// resolve_filter_genes. See filter_gene_values for cell_totals.
GeneFilterResult evaluate_filter(const ShardSet& counts, const FilterExpression& expression,
                                 std::span<const std::int32_t> gene_indices, std::span<const double> cell_totals,
                                 const GeneFilterOptions& options, JobContext& ctx);

}  // namespace fathom
