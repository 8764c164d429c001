#include "core/data/GeneLookup.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <variant>

namespace fathom {

namespace {

char lower(char character) noexcept {
    return character >= 'A' && character <= 'Z' ? static_cast<char>(character - 'A' + 'a') : character;
}

/// Levenshtein distance, optionally ignoring ASCII case; stops early (returning
/// limit + 1) once every alignment costs more than `limit`.
std::size_t edit_distance(std::string_view a, std::string_view b, bool fold_case, std::size_t limit) {
    const std::size_t longer = std::max(a.size(), b.size());
    const std::size_t shorter = std::min(a.size(), b.size());
    if (longer - shorter > limit) return limit + 1;
    std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t column = 0; column <= b.size(); ++column) previous[column] = column;
    for (std::size_t row = 1; row <= a.size(); ++row) {
        current[0] = row;
        std::size_t best = current[0];
        for (std::size_t column = 1; column <= b.size(); ++column) {
            const char left = fold_case ? lower(a[row - 1]) : a[row - 1];
            const char right = fold_case ? lower(b[column - 1]) : b[column - 1];
            current[column] = std::min({previous[column] + 1, current[column - 1] + 1,
                                        previous[column - 1] + (left == right ? 0 : 1)});
            best = std::min(best, current[column]);
        }
        if (best > limit) return limit + 1;
        std::swap(previous, current);
    }
    return previous[b.size()];
}

/// "A, B, C" (at most `most` items, then ", ... (N in all)").
std::string list_text(const std::vector<std::string>& items, std::size_t most = 5) {
    std::string text;
    for (std::size_t index = 0; index < items.size() && index < most; ++index) text += (index ? ", " : "") + items[index];
    if (items.size() > most) text += ", ... (" + std::to_string(items.size()) + " in all)";
    return text;
}

}  // namespace

std::span<const std::string> gene_ids(const Table& var) {
    if (const Column* ids = var.find("gene_ids"))
        if (const auto* strings = std::get_if<StringColumn>(&ids->data))
            if (strings->values.size() == var.index().size()) return strings->values;
    return {};
}

GeneLookup::GeneLookup(const Table& var) : GeneLookup(var.index(), gene_ids(var)) {}

GeneLookup::GeneLookup(std::span<const std::string> names, std::span<const std::string> ids)
    : m_names(names), m_ids(ids) {
    if (!m_ids.empty() && m_ids.size() != m_names.size())
        throw std::invalid_argument("GeneLookup: " + std::to_string(m_ids.size()) + " gene ids for " +
                                    std::to_string(m_names.size()) + " var names");
}

GeneResolution GeneLookup::resolve(std::string_view gene) const {
    GeneResolution resolution;
    const auto collect = [&](std::span<const std::string> pool) {
        for (std::size_t index = 0; index < pool.size(); ++index)
            if (pool[index] == gene) resolution.candidates.push_back(static_cast<std::int32_t>(index));
    };
    collect(m_names);
    if (resolution.candidates.empty()) {
        collect(m_ids);
        resolution.by_id = !resolution.candidates.empty();
    }
    if (resolution.candidates.size() == 1) {
        resolution.column = resolution.candidates.front();
        resolution.candidates.clear();
    }
    return resolution;
}

std::int32_t GeneLookup::find(std::string_view gene) const noexcept {
    for (const auto pool : {m_names, m_ids}) {
        std::int32_t column = -1;
        for (std::size_t index = 0; index < pool.size(); ++index) {
            if (pool[index] != gene) continue;
            if (column >= 0) return -1;  // ambiguous
            column = static_cast<std::int32_t>(index);
        }
        if (column >= 0) return column;
    }
    return -1;
}

std::string GeneLookup::ambiguity(const GeneResolution& resolution) const {
    if (!resolution.ambiguous()) return {};
    // Each candidate by the other kind of name when that tells them apart, else by column.
    const std::span<const std::string> other = resolution.by_id ? m_names : m_ids;
    std::vector<std::string> others;
    for (const std::int32_t column : resolution.candidates)
        if (!other.empty()) others.push_back(other[static_cast<std::size_t>(column)]);
    std::vector<std::string> distinct = others;
    std::sort(distinct.begin(), distinct.end());
    const bool tells_apart =
        !others.empty() && std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end();
    std::string text = "it is the " + std::string(resolution.by_id ? "gene id" : "var name") + " of " +
                       std::to_string(resolution.candidates.size()) + " genes (";
    if (tells_apart) {
        text += std::string(resolution.by_id ? "var names " : "gene ids ") + list_text(others) + "); name one by its " +
                (resolution.by_id ? "var name" : "gene id");
    } else {
        std::vector<std::string> columns;
        for (const std::int32_t column : resolution.candidates) columns.push_back(std::to_string(column));
        text += "columns " + list_text(columns) + "); make the var names unique (anndata's var_names_make_unique)";
    }
    return text;
}

std::string GeneLookup::problem(std::string_view gene) const {
    const GeneResolution resolution = resolve(gene);
    if (resolution.found()) return {};
    const std::string quoted = "gene '" + std::string(gene) + "'";
    if (resolution.ambiguous()) return quoted + " is ambiguous: " + ambiguity(resolution);
    std::string text = quoted + " is not in var names or var['gene_ids']";
    const auto suggestions = close_matches(gene);
    if (!suggestions.empty()) text += " (did you mean " + list_text(suggestions) + "?)";
    return text;
}

std::vector<std::string> GeneLookup::close_matches(std::string_view gene, int max_matches) const {
    const std::size_t limit = std::max<std::size_t>(2, gene.size() / 3);
    // (case-insensitive distance, case-sensitive distance, name)
    std::vector<std::tuple<std::size_t, std::size_t, std::string_view>> candidates;
    const auto consider = [&](std::span<const std::string> pool) {
        for (const auto& name : pool) {
            const std::size_t folded = edit_distance(gene, name, true, limit);
            if (folded > limit) continue;
            candidates.emplace_back(folded, edit_distance(gene, name, false, limit + gene.size() + name.size()), name);
        }
    };
    consider(m_names);
    consider(m_ids);
    std::sort(candidates.begin(), candidates.end());
    std::vector<std::string> matches;
    for (const auto& candidate : candidates) {
        if (static_cast<int>(matches.size()) >= max_matches) break;
        const std::string name(std::get<2>(candidate));
        if (std::find(matches.begin(), matches.end(), name) == matches.end()) matches.push_back(name);
    }
    return matches;
}

}  // namespace fathom
