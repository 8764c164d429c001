#include "core/engine/filter_rules.hpp"

#include <stdexcept>

#include "core/algo/gene_filter.hpp"
#include "core/io/gene_list.hpp"

namespace fathom {

namespace {

RuleOp rule_op(FilterOp op) noexcept {
    switch (op) {
        case FilterOp::Greater: return RuleOp::Greater;
        case FilterOp::GreaterEqual: return RuleOp::GreaterEqual;
        case FilterOp::Less: return RuleOp::Less;
        case FilterOp::LessEqual: return RuleOp::LessEqual;
        case FilterOp::Equal: return RuleOp::Equal;
        case FilterOp::Between: return RuleOp::Between;
    }
    return RuleOp::Greater;
}

FilterOp filter_op(RuleOp op) noexcept {
    switch (op) {
        case RuleOp::Greater: return FilterOp::Greater;
        case RuleOp::GreaterEqual: return FilterOp::GreaterEqual;
        case RuleOp::Less: return FilterOp::Less;
        case RuleOp::LessEqual: return FilterOp::LessEqual;
        case RuleOp::Equal: return FilterOp::Equal;
        case RuleOp::Between: return FilterOp::Between;
    }
    return FilterOp::Greater;
}

/// Appends the terms of a chain of `kind` nodes under `index` in reading order.
void collect_chain(const FilterExpression& expression, int index, FilterNode::Kind kind, std::vector<int>& terms) {
    const FilterNode& node = expression.nodes[static_cast<std::size_t>(index)];
    if (node.kind == kind) {
        collect_chain(expression, node.left, kind, terms);
        collect_chain(expression, node.right, kind, terms);
        return;
    }
    terms.push_back(index);
}

/// A possibly negated comparison as a rule; false when `index` is anything else.
bool literal_rule(const FilterExpression& expression, int index, FilterRule& rule) {
    bool negated = false;
    const FilterNode* node = &expression.nodes[static_cast<std::size_t>(index)];
    while (node->kind == FilterNode::Kind::Not) {
        negated = !negated;
        node = &expression.nodes[static_cast<std::size_t>(node->left)];
    }
    if (node->kind != FilterNode::Kind::Compare) return false;
    rule.gene = expression.genes[static_cast<std::size_t>(node->gene)].name;
    rule.op = rule_op(node->op);
    rule.value = node->value;
    rule.upper = node->op == FilterOp::Between ? node->upper : 0.0f;
    rule.negated = negated;
    return true;
}

/// The rows of an "or" of "and"s of literals; false for any other shape.
bool rules_of(const FilterExpression& expression, std::vector<FilterRule>& rules) {
    std::vector<int> or_terms;
    collect_chain(expression, expression.root(), FilterNode::Kind::Or, or_terms);
    for (std::size_t term = 0; term < or_terms.size(); ++term) {
        std::vector<int> and_terms;
        collect_chain(expression, or_terms[term], FilterNode::Kind::And, and_terms);
        for (std::size_t factor = 0; factor < and_terms.size(); ++factor) {
            FilterRule rule;
            if (!literal_rule(expression, and_terms[factor], rule)) return false;
            rule.join = factor == 0 ? RuleJoin::Or : RuleJoin::And;
            rules.push_back(std::move(rule));
        }
    }
    if (!rules.empty()) rules.front().join = RuleJoin::And;
    return true;
}

}  // namespace

const char* rule_op_text(RuleOp op) noexcept { return filter_op_text(filter_op(op)); }

std::string filter_rules_text(std::span<const FilterRule> rules) {
    std::string text;
    for (std::size_t index = 0; index < rules.size(); ++index) {
        const FilterRule& rule = rules[index];
        if (index > 0) text += rule.join == RuleJoin::Or ? " or " : " and ";
        if (rule.negated) text += "not ";
        text += filter_gene_text(rule.gene) + " " + rule_op_text(rule.op) + " " + filter_number_text(rule.value);
        if (rule.op == RuleOp::Between) text += " " + filter_number_text(rule.upper);
    }
    return text;
}

FilterRulesParse parse_filter_rules(std::string_view text, std::span<const std::string> names,
                                    std::span<const std::string> ids) {
    FilterRulesParse result;
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        result.ok = true;
        result.representable = true;
        return result;
    }
    try {
        const FilterExpression expression = parse_filter(text);
        for (const FilterGene& gene : expression.genes) result.genes.push_back(gene.name);
        if (!names.empty()) {
            try {
                resolve_filter_genes(expression, GeneLookup(names, ids.size() == names.size() ? ids : decltype(ids){}));
            } catch (const UnknownGeneError& error) {
                result.message = error.what();
                result.problem = error.problem();
                result.offset = error.offset();
                result.column = error.column();
                for (const FilterGene& gene : expression.genes)
                    if (gene.offset == error.offset()) result.length = std::max<std::size_t>(1, gene.length);
                result.genes.clear();
                return result;
            }
        }
        result.ok = true;
        result.representable = rules_of(expression, result.rules);
        if (!result.representable) result.rules.clear();
    } catch (const FilterParseError& error) {
        result.message = error.what();
        result.problem = error.problem();
        result.offset = error.offset();
        result.column = error.column();
    }
    return result;
}

std::string filter_syntax_error(std::string_view text) {
    try {
        (void)parse_filter(text);
        return {};
    } catch (const FilterParseError& error) {
        return error.what();
    }
}

std::vector<std::string> read_gene_list_file(const std::string& path) { return io::read_gene_list(path); }

}  // namespace fathom
