#include "core/algo/gene_filter.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace fathom {

namespace {

// ---- positions and messages ----------------------------------------------------------

/// 1-based character column of byte `offset` (UTF-8 continuation bytes do not count).
std::size_t column_of(std::string_view text, std::size_t offset) {
    std::size_t column = 1;
    for (std::size_t index = 0; index < offset && index < text.size(); ++index)
        if ((static_cast<unsigned char>(text[index]) & 0xC0) != 0x80) ++column;
    return column;
}

/// Characters (not bytes) in text[offset, offset + length).
std::size_t characters_in(std::string_view text, std::size_t offset, std::size_t length) {
    std::size_t count = 0;
    for (std::size_t index = offset; index < offset + length && index < text.size(); ++index)
        if ((static_cast<unsigned char>(text[index]) & 0xC0) != 0x80) ++count;
    return count;
}

/// The expression on one line (tabs and line breaks shown as spaces, so that columns
/// keep their place) with marks under the given byte ranges.
std::string pointer_lines(std::string_view text, const std::vector<std::pair<std::size_t, std::size_t>>& marks) {
    std::string echoed(text);
    for (char& character : echoed)
        if (character == '\t' || character == '\n' || character == '\r') character = ' ';
    std::string under;
    for (const auto& [offset, length] : marks) {
        const std::size_t column = column_of(text, offset);
        if (under.size() < column - 1) under.append(column - 1 - under.size(), ' ');
        const std::size_t width = std::max<std::size_t>(1, characters_in(text, offset, length));
        under.resize(std::max(under.size(), column - 1 + width), ' ');
        std::fill(under.begin() + static_cast<std::ptrdiff_t>(column - 1),
                  under.begin() + static_cast<std::ptrdiff_t>(column - 1 + width), '^');
    }
    return "  " + echoed + "\n  " + under;
}

std::string parse_message(std::string_view text, std::size_t offset, const std::string& problem, std::size_t length) {
    std::string message = "filter: " + problem + " at column " + std::to_string(column_of(text, offset));
    if (offset >= text.size()) message += " (the end of the expression)";
    return message + "\n" + pointer_lines(text, {{offset, length}});
}

/// The unknown genes as "unknown gene 'CD3F'[ at column 1] (did you mean CD3E?), ..."
/// and the ambiguous ones as "ambiguous gene 'TBCE'[ at column 9] (it is the var name
/// of ...)", joined by "; "; `text` given: with the columns.
std::string genes_problem(const std::vector<UnknownGeneError::Unknown>& genes, const std::string_view* text) {
    const auto position = [&](const UnknownGeneError::Unknown& entry) {
        return text ? " at column " + std::to_string(column_of(*text, entry.offset)) : std::string();
    };
    std::string unknown, ambiguous;
    std::size_t num_unknown = 0, num_ambiguous = 0;
    for (const auto& entry : genes) {
        if (entry.ambiguity.empty()) {
            unknown += (num_unknown++ > 0 ? ", '" : "'") + entry.gene + "'" + position(entry);
            if (!entry.suggestions.empty()) {
                unknown += " (did you mean ";
                for (std::size_t match = 0; match < entry.suggestions.size(); ++match)
                    unknown += (match > 0 ? ", " : "") + entry.suggestions[match];
                unknown += "?)";
            }
        } else {
            ambiguous += (num_ambiguous++ > 0 ? ", '" : "'") + entry.gene + "'" + position(entry) + " (" +
                         entry.ambiguity + ")";
        }
    }
    std::string problem;
    if (num_unknown > 0) {
        problem = (num_unknown == 1 ? "unknown gene " : "unknown genes ") + unknown;
        if (text) problem += "; not in var names or var['gene_ids']";
    }
    if (num_ambiguous > 0)
        problem += (problem.empty() ? "" : "; ") + std::string(num_ambiguous == 1 ? "ambiguous gene " : "ambiguous genes ") +
                   ambiguous;
    return problem;
}

std::string unknown_message(std::string_view text, const std::vector<UnknownGeneError::Unknown>& genes) {
    std::vector<std::pair<std::size_t, std::size_t>> marks;
    for (const auto& entry : genes) {
        // Underline the name as written (a quoted name has its quotes included).
        std::size_t length = entry.gene.size();
        if (entry.offset < text.size() && (text[entry.offset] == '"' || text[entry.offset] == '\'')) length += 2;
        marks.emplace_back(entry.offset, length);
    }
    return "filter: " + genes_problem(genes, &text) + "\n" + pointer_lines(text, marks);
}

// ---- scanning ------------------------------------------------------------------------

bool is_space(char character) noexcept {
    return character == ' ' || character == '\t' || character == '\n' || character == '\r';
}

/// Characters of a bare gene name (non-ASCII bytes too, so UTF-8 names need no quotes).
bool is_word_char(char character) noexcept {
    const auto byte = static_cast<unsigned char>(character);
    return (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
           byte == '-' || byte == '_' || byte == '.' || byte == ':' || byte >= 0x80;
}

bool equals_lower(std::string_view word, std::string_view keyword) noexcept {
    if (word.size() != keyword.size()) return false;
    for (std::size_t index = 0; index < word.size(); ++index) {
        char character = word[index];
        if (character >= 'A' && character <= 'Z') character = static_cast<char>(character - 'A' + 'a');
        if (character != keyword[index]) return false;
    }
    return true;
}

bool is_keyword(std::string_view word) noexcept {
    return equals_lower(word, "and") || equals_lower(word, "or") || equals_lower(word, "not") ||
           equals_lower(word, "between");
}

/// Recursive-descent parser straight over the text (no token list: what a word means
/// depends on where it stands, e.g. "7SK" is a gene before an operator and "1e-3" a
/// number after one).
class Parser {
public:
    explicit Parser(std::string_view text) : m_text(text) { m_expression.text = std::string(text); }

    FilterExpression parse() {
        skip_space();
        if (at_end()) fail(0, "the expression is empty");
        parse_or(false);
        skip_space();
        if (!at_end()) fail_unexpected(false);
        return std::move(m_expression);
    }

private:
    [[noreturn]] void fail(std::size_t offset, const std::string& problem, std::size_t length = 1) const {
        throw FilterParseError(std::string(m_text), offset, problem, length);
    }

    bool at_end() const noexcept { return m_pos >= m_text.size(); }
    char peek(std::size_t ahead = 0) const noexcept {
        return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0';
    }
    void skip_space() noexcept {
        while (!at_end() && is_space(m_text[m_pos])) ++m_pos;
    }
    /// The bare word at the current position (empty if none).
    std::string_view word_here() const noexcept {
        std::size_t end = m_pos;
        while (end < m_text.size() && is_word_char(m_text[end])) ++end;
        return m_text.substr(m_pos, end - m_pos);
    }
    /// Consumes the keyword (whole word, any case) when it stands here.
    bool take_keyword(std::string_view keyword) {
        if (!equals_lower(word_here(), keyword)) return false;
        m_last = std::string(m_text.substr(m_pos, keyword.size()));
        m_pos += keyword.size();
        return true;
    }
    bool take_symbol(std::string_view symbol) {
        if (m_text.substr(m_pos, symbol.size()) != symbol) return false;
        m_last = std::string(symbol);
        m_pos += symbol.size();
        return true;
    }
    /// " after '<last token>'" for messages, or nothing at the start.
    std::string after_last() const { return m_last.empty() ? std::string() : " after '" + m_last + "'"; }
    /// How long the token at the current position is, for the caret.
    std::size_t token_length() const noexcept {
        const std::size_t word = word_here().size();
        return word > 0 ? word : 1;
    }

    int add(FilterNode node) {
        m_expression.nodes.push_back(node);
        return static_cast<int>(m_expression.nodes.size()) - 1;
    }

    int parse_or(bool in_parens) {
        int left = parse_and(in_parens);
        for (;;) {
            skip_space();
            if (!take_keyword("or") && !take_symbol("||")) return left;
            const int right = parse_and(in_parens);
            FilterNode node;
            node.kind = FilterNode::Kind::Or;
            node.left = left;
            node.right = right;
            node.offset = m_expression.nodes[static_cast<std::size_t>(left)].offset;
            left = add(node);
        }
    }

    int parse_and(bool in_parens) {
        int left = parse_not(in_parens);
        for (;;) {
            skip_space();
            if (!take_keyword("and") && !take_symbol("&&")) return left;
            const int right = parse_not(in_parens);
            FilterNode node;
            node.kind = FilterNode::Kind::And;
            node.left = left;
            node.right = right;
            node.offset = m_expression.nodes[static_cast<std::size_t>(left)].offset;
            left = add(node);
        }
    }

    int parse_not(bool in_parens) {
        skip_space();
        const std::size_t at = m_pos;
        // "!=" is not a negation: let the comparison parser explain it.
        if (take_keyword("not") || (peek() == '!' && peek(1) != '=' && take_symbol("!"))) {
            enter_level(at, m_pos - at);
            FilterNode node;
            node.kind = FilterNode::Kind::Not;
            node.left = parse_not(in_parens);
            node.offset = at;
            --m_depth;
            return add(node);
        }
        if (peek() == '(') {
            const std::size_t open = m_pos;
            enter_level(open, 1);
            take_symbol("(");
            const int inner = parse_or(true);
            skip_space();
            if (!take_symbol(")")) {
                if (at_end())
                    fail(m_pos, "expected ')' to close the '(' at column " + std::to_string(column_of(m_text, open)));
                fail_unexpected(true);
            }
            --m_depth;
            return inner;
        }
        return parse_comparison();
    }

    /// One more level of parentheses or negation. The parser recurses once per level, so
    /// a runaway expression (a pasted "((((..." of a million characters) would overflow
    /// the stack of the thread that parses it; past kMaxDepth levels it is an error.
    void enter_level(std::size_t offset, std::size_t length) {
        if (++m_depth > kMaxDepth)
            fail(offset, "the expression is nested too deeply (more than " + std::to_string(kMaxDepth) +
                             " levels of parentheses and 'not')",
                 length);
    }

    /// Text after a complete (sub-)expression that is not an operator.
    [[noreturn]] void fail_unexpected(bool in_parens) const {
        const char character = peek();
        if (character == ')' && !in_parens) fail(m_pos, "unmatched ')'");
        if ((character == '&' && peek(1) != '&') || (character == '|' && peek(1) != '|'))
            fail(m_pos, std::string("'") + character + "' is not an operator (use '" + (character == '&' ? "and" : "or") +
                            "' or '" + character + character + "')");
        const std::string expected = in_parens ? "expected 'and', 'or' or ')'" : "expected 'and' or 'or'";
        if (is_word_char(character) || character == '"' || character == '\'') {
            const std::string word = character == '"' || character == '\'' ? std::string(1, character) : std::string(word_here());
            fail(m_pos, expected + " before '" + word + "'", token_length());
        }
        fail(m_pos, expected + after_last() + ", not '" + std::string(1, character) + "'");
    }

    int parse_comparison() {
        skip_space();
        FilterNode node;
        node.kind = FilterNode::Kind::Compare;
        node.offset = m_pos;
        const auto [name, length] = parse_gene();
        node.gene = gene_slot(name, node.offset, length);

        skip_space();
        const std::size_t op_at = m_pos;
        if (take_symbol(">=")) {
            node.op = FilterOp::GreaterEqual;
        } else if (take_symbol(">")) {
            node.op = FilterOp::Greater;
        } else if (take_symbol("<=")) {
            node.op = FilterOp::LessEqual;
        } else if (take_symbol("<")) {
            node.op = FilterOp::Less;
        } else if (take_symbol("==")) {
            node.op = FilterOp::Equal;
        } else if (take_keyword("between")) {
            node.op = FilterOp::Between;
        } else if (peek() == '=') {
            fail(op_at, "'=' is not a comparison operator after '" + name + "' (use '==')");
        } else if (peek() == '!' && peek(1) == '=') {
            fail(op_at, "'!=' is not supported after '" + name + "' (write 'not " + name + " == VALUE')", 2);
        } else {
            fail(op_at, "expected a comparison operator after '" + name + "'", at_end() ? 1 : token_length());
        }

        if (node.op != FilterOp::Between) {
            node.value = parse_number("a number", after_last());
            return add(node);
        }
        skip_space();
        const std::size_t low_at = m_pos;
        node.value = parse_number("the lower bound", " after 'between'");
        const std::string low_text = m_last;
        skip_space();
        if (equals_lower(word_here(), "and"))
            fail(m_pos, "expected the upper bound after 'between " + low_text + "' (write '" + name + " between " +
                            low_text + " HIGH', without 'and')",
                 3);
        node.upper = parse_number("the upper bound", " after 'between " + low_text + "'");
        if (node.value > node.upper)
            fail(low_at, "'between " + low_text + " " + m_last + "': the lower bound is above the upper bound",
                 m_pos - low_at);
        return add(node);
    }

    /// A gene name (bare or quoted); returns it and the bytes it took.
    std::pair<std::string, std::size_t> parse_gene() {
        const std::size_t at = m_pos;
        const char quote = peek();
        if (quote == '"' || quote == '\'') {
            const std::size_t close = m_text.find(quote, m_pos + 1);
            if (close == std::string_view::npos)
                fail(at, std::string("unterminated quoted gene name (no closing ") + quote + ")");
            if (close == m_pos + 1) fail(at, "empty gene name", 2);
            std::string name(m_text.substr(m_pos + 1, close - m_pos - 1));
            m_pos = close + 1;
            m_last = name;
            return {name, close + 1 - at};
        }
        const std::string_view word = word_here();
        if (word.empty()) {
            if (at_end()) fail(at, "expected a gene name" + after_last());
            const char character = peek();
            if (character == ')') fail(at, "expected a gene name" + after_last() + ", not ')'");
            fail(at, "expected a gene name" + after_last() + ", not '" + std::string(1, character) + "'");
        }
        if (is_keyword(word))
            fail(at, "expected a gene name" + after_last() + ", not the keyword '" + std::string(word) +
                         "' (quote a gene with that name: \"" + std::string(word) + "\")",
                 word.size());
        m_pos += word.size();
        m_last = std::string(word);
        return {std::string(word), word.size()};
    }

    /// A finite decimal number that fits float32 (optional sign and exponent); returns
    /// it rounded to float. `expected` and `context` word the error ("a number",
    /// " after '>'").
    float parse_number(const std::string& expected, const std::string& context) {
        skip_space();
        const std::size_t at = m_pos;
        std::size_t end = m_pos;
        while (end < m_text.size() && (is_word_char(m_text[end]) || m_text[end] == '+')) ++end;
        const std::string_view token = m_text.substr(at, end - at);
        if (token.empty()) {
            if (at_end()) fail(at, "expected " + expected + context);
            fail(at, "expected " + expected + context + ", not '" + std::string(1, peek()) + "'");
        }
        // from_chars also reads "inf", "nan" and "infinity": allow only digits, '.', an
        // exponent and signs, with at most one leading sign.
        std::string_view digits = token;
        if (digits.front() == '+') digits.remove_prefix(1);
        bool decimal = !digits.empty() && digits.front() != '+' && !(token.front() == '+' && digits.front() == '-');
        for (const char character : digits)
            if (!((character >= '0' && character <= '9') || character == '.' || character == 'e' || character == 'E' ||
                  character == '-' || character == '+'))
                decimal = false;
        double value = 0.0;
        std::from_chars_result parsed{digits.data(), std::errc::invalid_argument};
        if (decimal) parsed = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        const bool whole = parsed.ptr == digits.data() + digits.size();
        if (decimal && whole && (parsed.ec == std::errc::result_out_of_range ||
                                 (parsed.ec == std::errc() && std::abs(value) > std::numeric_limits<float>::max())))
            fail(at, "number '" + std::string(token) + "' is outside the float32 range", token.size());
        if (!decimal || !whole || parsed.ec != std::errc())
            fail(at, "expected " + expected + context + ", not '" + std::string(token) + "'", token.size());
        m_pos = end;
        m_last = std::string(token);
        return static_cast<float>(value);
    }

    int gene_slot(const std::string& name, std::size_t offset, std::size_t length) {
        auto& genes = m_expression.genes;
        for (std::size_t index = 0; index < genes.size(); ++index)
            if (genes[index].name == name) return static_cast<int>(index);
        genes.push_back(FilterGene{name, offset, length});
        return static_cast<int>(genes.size()) - 1;
    }

    static constexpr int kMaxDepth = 1000;

    std::string_view m_text;
    std::size_t m_pos = 0;
    int m_depth = 0;  ///< open parentheses and negations around the current position
    std::string m_last;  ///< the last token consumed, for "after '...'" in messages
    FilterExpression m_expression;
};

// ---- printing ------------------------------------------------------------------------

std::string number_text(float value) {
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

std::string gene_text(const std::string& name) {
    bool bare = !name.empty() && !is_keyword(name);
    for (char character : name) bare = bare && is_word_char(character);
    if (bare) return name;
    return name.find('"') == std::string::npos ? "\"" + name + "\"" : "'" + name + "'";
}

void print_node(const FilterExpression& expression, int index, std::string& out) {
    const FilterNode& node = expression.nodes.at(static_cast<std::size_t>(index));
    switch (node.kind) {
        case FilterNode::Kind::Compare:
            out += "(" + gene_text(expression.genes.at(static_cast<std::size_t>(node.gene)).name) + " " +
                   filter_op_text(node.op) + " " + number_text(node.value);
            if (node.op == FilterOp::Between) out += " " + number_text(node.upper);
            out += ")";
            return;
        case FilterNode::Kind::Not:
            out += "(not ";
            print_node(expression, node.left, out);
            out += ")";
            return;
        case FilterNode::Kind::And:
        case FilterNode::Kind::Or:
            out += "(";
            print_node(expression, node.left, out);
            out += node.kind == FilterNode::Kind::And ? " and " : " or ";
            print_node(expression, node.right, out);
            out += ")";
            return;
    }
}

}  // namespace

// ---- errors --------------------------------------------------------------------------

FilterParseError::FilterParseError(std::string expression, std::size_t offset, std::string problem, std::size_t length)
    : std::invalid_argument(parse_message(expression, offset, problem, length)),
      m_expression(std::move(expression)),
      m_offset(offset),
      m_column(column_of(m_expression, offset)),
      m_problem(std::move(problem)) {}

FilterParseError::FilterParseError(std::string message, std::string expression, std::size_t offset, std::string problem)
    : std::invalid_argument(std::move(message)),
      m_expression(std::move(expression)),
      m_offset(offset),
      m_column(column_of(m_expression, offset)),
      m_problem(std::move(problem)) {}

UnknownGeneError::UnknownGeneError(std::string expression, std::vector<Unknown> unknown)
    : FilterParseError(unknown_message(expression, unknown), expression, unknown.empty() ? 0 : unknown.front().offset,
                       genes_problem(unknown, nullptr)),
      m_unknown(std::move(unknown)) {}

// ---- parsing and printing ------------------------------------------------------------

const char* filter_op_text(FilterOp op) noexcept {
    switch (op) {
        case FilterOp::Greater: return ">";
        case FilterOp::GreaterEqual: return ">=";
        case FilterOp::Less: return "<";
        case FilterOp::LessEqual: return "<=";
        case FilterOp::Equal: return "==";
        case FilterOp::Between: return "between";
    }
    return "?";
}

FilterExpression parse_filter(std::string_view text) { return Parser(text).parse(); }

std::string filter_gene_text(const std::string& name) { return gene_text(name); }

std::string filter_number_text(float value) { return number_text(value); }

std::string FilterExpression::to_string() const {
    std::string out;
    if (!nodes.empty()) print_node(*this, root(), out);
    return out;
}

// ---- genes ---------------------------------------------------------------------------

std::vector<std::int32_t> resolve_filter_genes(const FilterExpression& expression, const GeneLookup& lookup) {
    std::vector<std::int32_t> indices;
    std::vector<UnknownGeneError::Unknown> unknown;
    for (const auto& gene : expression.genes) {
        const GeneResolution resolution = lookup.resolve(gene.name);
        indices.push_back(resolution.column);
        if (resolution.ambiguous())
            unknown.push_back({gene.name, gene.offset, {}, lookup.ambiguity(resolution)});
        else if (!resolution.found())
            unknown.push_back({gene.name, gene.offset, lookup.close_matches(gene.name), {}});
    }
    if (!unknown.empty()) throw UnknownGeneError(expression.text, std::move(unknown));
    return indices;
}

// ---- evaluation ----------------------------------------------------------------------

void validate(const GeneFilterOptions& options) {
    if (!(options.target_sum > 0.0) || !std::isfinite(options.target_sum))
        throw std::invalid_argument("GeneFilterOptions::target_sum must be > 0 and finite");
}

GeneFilterResult evaluate_filter(const FilterExpression& expression, std::span<const std::vector<float>> columns) {
    std::vector<std::span<const float>> views(columns.begin(), columns.end());
    return evaluate_filter(expression, std::span<const std::span<const float>>(views));
}

GeneFilterResult evaluate_filter(const FilterExpression& expression, std::span<const std::span<const float>> columns) {
    if (expression.nodes.empty()) throw std::invalid_argument("evaluate_filter: the expression has no nodes");
    if (columns.size() != expression.genes.size())
        throw std::invalid_argument("evaluate_filter: " + std::to_string(columns.size()) + " value columns for " +
                                    std::to_string(expression.genes.size()) + " genes of '" + expression.text + "'");
    const std::size_t num_cells = columns.empty() ? 0 : columns.front().size();
    for (std::size_t gene = 0; gene < columns.size(); ++gene)
        if (columns[gene].size() != num_cells)
            throw std::invalid_argument("evaluate_filter: the column of '" + expression.genes[gene].name + "' has " +
                                        std::to_string(columns[gene].size()) + " values; expected " +
                                        std::to_string(num_cells));

    GeneFilterResult result;
    result.mask.assign(num_cells, 0);
    // Node by node over blocks of cells: each node fills a byte mask of the block from
    // its children's (children come first), in loops the compiler vectorises.
    constexpr std::size_t kBlock = 4096;
    const std::size_t num_blocks = (num_cells + kBlock - 1) / kBlock;
    std::vector<std::int64_t> block_counts(num_blocks, 0);
    const std::size_t num_nodes = expression.nodes.size();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, num_blocks, 1), [&](const tbb::blocked_range<std::size_t>& range) {
        std::vector<std::uint8_t> scratch(num_nodes * kBlock);
        for (std::size_t block = range.begin(); block < range.end(); ++block) {
            const std::size_t begin = block * kBlock;
            const std::size_t size = std::min(kBlock, num_cells - begin);
            for (std::size_t index = 0; index < num_nodes; ++index) {
                const FilterNode& node = expression.nodes[index];
                std::uint8_t* out = index + 1 == num_nodes ? result.mask.data() + begin : scratch.data() + index * kBlock;
                switch (node.kind) {
                    case FilterNode::Kind::Compare: {
                        const float* values = columns[static_cast<std::size_t>(node.gene)].data() + begin;
                        const float value = node.value;
                        const float upper = node.upper;
                        switch (node.op) {
                            case FilterOp::Greater:
                                for (std::size_t cell = 0; cell < size; ++cell) out[cell] = values[cell] > value;
                                break;
                            case FilterOp::GreaterEqual:
                                for (std::size_t cell = 0; cell < size; ++cell) out[cell] = values[cell] >= value;
                                break;
                            case FilterOp::Less:
                                for (std::size_t cell = 0; cell < size; ++cell) out[cell] = values[cell] < value;
                                break;
                            case FilterOp::LessEqual:
                                for (std::size_t cell = 0; cell < size; ++cell) out[cell] = values[cell] <= value;
                                break;
                            case FilterOp::Equal:
                                for (std::size_t cell = 0; cell < size; ++cell) out[cell] = values[cell] == value;
                                break;
                            case FilterOp::Between:
                                for (std::size_t cell = 0; cell < size; ++cell)
                                    out[cell] = static_cast<std::uint8_t>((values[cell] >= value) & (values[cell] <= upper));
                                break;
                        }
                        break;
                    }
                    case FilterNode::Kind::Not: {
                        const std::uint8_t* in = scratch.data() + static_cast<std::size_t>(node.left) * kBlock;
                        for (std::size_t cell = 0; cell < size; ++cell) out[cell] = in[cell] ^ 1u;
                        break;
                    }
                    case FilterNode::Kind::And:
                    case FilterNode::Kind::Or: {
                        const std::uint8_t* left = scratch.data() + static_cast<std::size_t>(node.left) * kBlock;
                        const std::uint8_t* right = scratch.data() + static_cast<std::size_t>(node.right) * kBlock;
                        if (node.kind == FilterNode::Kind::And)
                            for (std::size_t cell = 0; cell < size; ++cell) out[cell] = left[cell] & right[cell];
                        else
                            for (std::size_t cell = 0; cell < size; ++cell) out[cell] = left[cell] | right[cell];
                        break;
                    }
                }
            }
            std::int64_t count = 0;
            const std::uint8_t* mask = result.mask.data() + begin;
            for (std::size_t cell = 0; cell < size; ++cell) count += mask[cell];
            block_counts[block] = count;
        }
    });
    for (const std::int64_t count : block_counts) result.num_matching += count;
    return result;
}

void lognorm_in_place(std::vector<float>& column, std::span<const double> totals, double target_sum) {
    if (totals.size() != column.size())
        throw std::invalid_argument("lognorm_in_place: " + std::to_string(totals.size()) + " cell totals for " +
                                    std::to_string(column.size()) + " cells");
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, column.size(), 16384), [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t cell = range.begin(); cell < range.end(); ++cell) {
            const float value = column[cell];
            if (value == 0.0f) continue;  // log1p(0) = 0: most cells, no work
            const double total = totals[cell];
            column[cell] = total > 0.0 ? static_cast<float>(std::log1p(static_cast<double>(value) * target_sum / total)) : 0.0f;
        }
    });
}

std::vector<std::vector<float>> filter_gene_values(const ShardSet& counts, std::span<const std::int32_t> genes,
                                                   std::span<const double> cell_totals,
                                                   const GeneFilterOptions& options, JobContext& ctx) {
    validate(options);
    if (options.layer == FilterLayer::LogNorm && static_cast<std::int64_t>(cell_totals.size()) != counts.num_cells())
        throw std::invalid_argument("filter_gene_values: LogNorm needs one cell total per cell (" +
                                    std::to_string(counts.num_cells()) + "); got " + std::to_string(cell_totals.size()));
    auto columns = counts.gene_columns(genes, ctx);
    if (options.layer == FilterLayer::LogNorm)
        for (auto& column : columns) lognorm_in_place(column, cell_totals, options.target_sum);
    return columns;
}

GeneFilterResult evaluate_filter(const ShardSet& counts, const FilterExpression& expression,
                                 std::span<const std::int32_t> gene_indices, std::span<const double> cell_totals,
                                 const GeneFilterOptions& options, JobContext& ctx) {
    if (gene_indices.size() != expression.genes.size())
        throw std::invalid_argument("evaluate_filter: " + std::to_string(gene_indices.size()) + " gene indices for " +
                                    std::to_string(expression.genes.size()) + " genes of '" + expression.text + "'");
    const auto columns = filter_gene_values(counts, gene_indices, cell_totals, options, ctx);
    ctx.checkpoint();
    return evaluate_filter(expression, columns);
}

}  // namespace fathom
