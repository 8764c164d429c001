#pragma once
/// Fuzzy gene search over var names and gene ids: the typed letters must appear in
/// order in the candidate (a subsequence, case-insensitive); exact matches rank first,
/// then prefixes, then substrings, then scattered subsequences, each with compact,
/// early, word-start matches before loose ones ("cd3" -> CD3E, CD3D, ..., then CCD3X).
#include <QAbstractListModel>
#include <QString>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

class QCompleter;
class QLineEdit;

namespace fathom::ui {

/// Score of `query` against `candidate`; -1 when the query is not a subsequence of the
/// candidate (case-insensitive) or is empty. Higher is better:
///   exact (case-insensitive)  >= 4000 (+1 when the case matches too)
///   prefix                    3000 .. 3999, shorter candidates first
///   substring                 2000 .. 2999, earlier and shorter first
///   subsequence               1 .. 1999, fewer gaps, word-start matches, earlier first
int fuzzy_score(std::string_view query, std::string_view candidate) noexcept;

/// One search hit.
struct GeneMatch {
    std::int32_t gene = -1;   ///< index into the names (var order)
    int score = 0;            ///< the better of the name's and the id's fuzzy_score
    bool by_id = false;       ///< the gene id matched better than the name
};

/// The best `limit` genes for `query`, best first (ties: shorter name, then var
/// order). `ids` is empty or has one entry per name.
std::vector<GeneMatch> rank_genes(std::string_view query, const std::vector<std::string>& names,
                                  const std::vector<std::string>& ids, int limit = 50);

/// The spelling of a typed gene that the dataset uses, so that every gene text in the
/// explorer (gene box, filter rules and filter text) is case-insensitive as the search
/// popup is: `text` itself when GeneLookup(names, ids) resolves it (or finds it ambiguous);
/// else the one var name equal to it ignoring case, else the one gene id; else `text`
/// unchanged (GeneLookup's problem() then says why and suggests names).
std::string spell_gene(std::string_view text, std::span<const std::string> names, std::span<const std::string> ids = {});

/// The hits of the current query as a list model for a QCompleter popup: DisplayRole
/// "NAME  (ID)", EditRole the var name (what the completer inserts).
class GeneSearchModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit GeneSearchModel(QObject* parent = nullptr);
    /// The genes searched (var names, and gene ids: empty or one per name).
    void setGenes(std::vector<std::string> names, std::vector<std::string> ids);
    /// Re-ranks for `query` (empty = no rows).
    void setQuery(const QString& query);
    const std::vector<GeneMatch>& matches() const { return m_matches; }
    const std::vector<std::string>& names() const { return m_names; }
    const std::vector<std::string>& ids() const { return m_ids; }
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    /// Most rows shown.
    void setLimit(int limit) { m_limit = limit; }

private:
    std::vector<std::string> m_names, m_ids;
    std::vector<GeneMatch> m_matches;
    int m_limit = 50;
};

/// Gives `edit` a completer popup over `model` that re-ranks as the user types; returns
/// the completer (owned by `edit`).
QCompleter* attach_gene_search(QLineEdit* edit, GeneSearchModel* model);

}  // namespace fathom::ui
