#include "ui/GeneSearch.hpp"

#include <QAbstractItemView>
#include <QCompleter>
#include <QLineEdit>
#include <algorithm>

#include "core/data/GeneLookup.hpp"

namespace fathom::ui {

namespace {

char lower(char character) noexcept {
    return character >= 'A' && character <= 'Z' ? static_cast<char>(character - 'A' + 'a') : character;
}

bool equal_folded(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t index = 0; index < a.size(); ++index)
        if (lower(a[index]) != lower(b[index])) return false;
    return true;
}

/// Position of `query` in `candidate` (case-insensitive), or npos.
std::size_t find_folded(std::string_view query, std::string_view candidate) noexcept {
    if (query.size() > candidate.size()) return std::string_view::npos;
    for (std::size_t start = 0; start + query.size() <= candidate.size(); ++start)
        if (equal_folded(query, candidate.substr(start, query.size()))) return start;
    return std::string_view::npos;
}

/// A match at the start of a word: the first character, after a separator, or a
/// letter after a digit / a digit after a letter (HLA-DRA, RPL13A, CD8A).
bool word_start(std::string_view candidate, std::size_t at) noexcept {
    if (at == 0) return true;
    const char before = candidate[at - 1], here = candidate[at];
    const auto digit = [](char character) { return character >= '0' && character <= '9'; };
    if (before == '-' || before == '_' || before == '.' || before == ':' || before == ' ') return true;
    return digit(before) != digit(here);
}

}  // namespace

std::string spell_gene(std::string_view text, std::span<const std::string> names, std::span<const std::string> ids) {
    if (names.empty()) return std::string(text);
    if (ids.size() != names.size()) ids = {};
    const GeneResolution exact = GeneLookup(names, ids).resolve(text);
    if (exact.found() || exact.ambiguous()) return std::string(text);
    for (const std::span<const std::string> candidates : {names, ids}) {
        const std::string* only = nullptr;
        std::size_t count = 0;
        for (const std::string& candidate : candidates)
            if (equal_folded(text, candidate) && (!only || *only != candidate)) {
                only = &candidate;
                ++count;
            }
        if (count == 1) return *only;
        if (count > 1) break;  // several spellings: the user must choose one
    }
    return std::string(text);
}

int fuzzy_score(std::string_view query, std::string_view candidate) noexcept {
    if (query.empty() || query.size() > candidate.size()) return -1;
    const int extra = static_cast<int>(std::min<std::size_t>(candidate.size() - query.size(), 999));
    if (equal_folded(query, candidate)) return query == candidate ? 4001 : 4000;
    if (equal_folded(query, candidate.substr(0, query.size()))) return 3999 - extra;
    if (const std::size_t at = find_folded(query, candidate); at != std::string_view::npos)
        return 2999 - static_cast<int>(std::min<std::size_t>(at * 20, 500)) - std::min(extra, 499);
    // Subsequence: greedy leftmost match; score gaps, word starts and the first position.
    int score = 1500;
    std::size_t position = 0;
    std::size_t previous = std::string_view::npos;
    for (std::size_t index = 0; index < query.size(); ++index) {
        const char wanted = lower(query[index]);
        while (position < candidate.size() && lower(candidate[position]) != wanted) ++position;
        if (position == candidate.size()) return -1;
        if (index == 0) score -= static_cast<int>(std::min<std::size_t>(position * 10, 300));
        else if (position != previous + 1) score -= 30 + static_cast<int>(std::min<std::size_t>(position - previous, 20));
        if (word_start(candidate, position)) score += 15;
        previous = position++;
    }
    return std::clamp(score - std::min(extra, 400), 1, 1999);
}

std::vector<GeneMatch> rank_genes(std::string_view query, const std::vector<std::string>& names,
                                  const std::vector<std::string>& ids, int limit) {
    std::vector<GeneMatch> matches;
    if (query.empty() || limit <= 0) return matches;
    const bool have_ids = ids.size() == names.size();
    for (std::size_t gene = 0; gene < names.size(); ++gene) {
        GeneMatch match{static_cast<std::int32_t>(gene), fuzzy_score(query, names[gene]), false};
        if (have_ids) {
            const int by_id = fuzzy_score(query, ids[gene]);
            if (by_id > match.score) {
                match.score = by_id;
                match.by_id = true;
            }
        }
        if (match.score > 0) matches.push_back(match);
    }
    const auto better = [&](const GeneMatch& a, const GeneMatch& b) {
        if (a.score != b.score) return a.score > b.score;
        const std::size_t length_a = names[static_cast<std::size_t>(a.gene)].size();
        const std::size_t length_b = names[static_cast<std::size_t>(b.gene)].size();
        if (length_a != length_b) return length_a < length_b;
        return a.gene < b.gene;
    };
    const auto keep = std::min<std::size_t>(static_cast<std::size_t>(limit), matches.size());
    std::partial_sort(matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(keep), matches.end(), better);
    matches.resize(keep);
    return matches;
}

GeneSearchModel::GeneSearchModel(QObject* parent) : QAbstractListModel(parent) {}

void GeneSearchModel::setGenes(std::vector<std::string> names, std::vector<std::string> ids) {
    beginResetModel();
    m_names = std::move(names);
    m_ids = ids.size() == m_names.size() ? std::move(ids) : std::vector<std::string>{};
    m_matches.clear();
    endResetModel();
}

void GeneSearchModel::setQuery(const QString& query) {
    beginResetModel();
    m_matches = rank_genes(query.trimmed().toStdString(), m_names, m_ids, m_limit);
    endResetModel();
}

int GeneSearchModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_matches.size());
}

QVariant GeneSearchModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() < 0 || index.row() >= rowCount()) return {};
    const GeneMatch& match = m_matches[static_cast<std::size_t>(index.row())];
    const QString name = QString::fromStdString(m_names[static_cast<std::size_t>(match.gene)]);
    if (role == Qt::EditRole) return name;
    if (role == Qt::DisplayRole) {
        if (m_ids.empty()) return name;
        return QStringLiteral("%1  (%2)").arg(name, QString::fromStdString(m_ids[static_cast<std::size_t>(match.gene)]));
    }
    return {};
}

QCompleter* attach_gene_search(QLineEdit* edit, GeneSearchModel* model) {
    auto* completer = new QCompleter(model, edit);
    // The model ranks and filters; the completer only shows its rows.
    completer->setCompletionMode(QCompleter::UnfilteredPopupCompletion);
    completer->setCompletionRole(Qt::EditRole);
    completer->setMaxVisibleItems(12);
    edit->setCompleter(completer);
    QObject::connect(edit, &QLineEdit::textEdited, completer, [edit, model, completer](const QString& text) {
        model->setQuery(text);
        if (model->rowCount() > 0 && edit->hasFocus()) completer->complete();
        else if (completer->popup()) completer->popup()->hide();
    });
    return completer;
}

}  // namespace fathom::ui
