#pragma once
/// Gene names to matrix columns: the one lookup behind every place a user names a gene
/// (filter expressions, gene values, gene sets, the GUI's filter panel and gene box,
/// fathom-cli filter). A gene is named by its var name (var.index()) or its gene id
/// (var['gene_ids']): var names first, then gene ids, as Engine::gene_values always
/// did. Case matters ("cd3e" is not CD3E; close_matches() suggests it). A text that two
/// or more var names equal (a duplicated symbol, as 10x files have when read without
/// var_names_make_unique) — or, when no var name does, two or more gene ids — is
/// ambiguous and names no column; the message says how to name each one.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/Table.hpp"

namespace fathom {

/// var['gene_ids'] when it is a string column with one entry per var row (10x files, most
/// h5ad); empty otherwise.
std::span<const std::string> gene_ids(const Table& var);

/// What a gene text names.
struct GeneResolution {
    std::int32_t column = -1;              ///< the one column it names; -1 when unknown or ambiguous
    std::vector<std::int32_t> candidates;  ///< ambiguous: every column it names (>= 2, var order); else empty
    bool by_id = false;                    ///< it matched gene ids (no var name equals it)

    bool found() const noexcept { return column >= 0; }
    bool ambiguous() const noexcept { return candidates.size() > 1; }
};

/// Where gene texts are looked up. Holds views: the names and ids (or the Table) must
/// outlive it.
class GeneLookup {
public:
    /// var.index() and gene_ids(var).
    explicit GeneLookup(const Table& var);
    /// `ids` may be empty (no gene ids); otherwise it has names.size() entries (else
    /// std::invalid_argument).
    explicit GeneLookup(std::span<const std::string> names, std::span<const std::string> ids = {});

    /// The column(s) `gene` names (see the file comment).
    GeneResolution resolve(std::string_view gene) const;
    /// The one column `gene` names, or -1 when it names none or several.
    std::int32_t find(std::string_view gene) const noexcept;
    /// Why `gene` names no single column, as a sentence; empty when it names one:
    ///   "gene 'CD3F' is not in var names or var['gene_ids'] (did you mean CD3D, CD3E?)"
    ///   "gene 'TBCE' is ambiguous: it is the var name of 2 genes (gene ids ENSG1, ENSG2);
    ///    name one by its gene id"
    std::string problem(std::string_view gene) const;
    /// For an ambiguous resolution, what follows "is ambiguous: " in problem() ("it is the
    /// var name of 2 genes (gene ids ENSG1, ENSG2); name one by its gene id"); empty otherwise.
    std::string ambiguity(const GeneResolution& resolution) const;
    /// Up to `max_matches` var names or gene ids closest to `gene` by edit distance
    /// (case-insensitive, ties broken by case-sensitive distance, then name), among
    /// those within max(2, length / 3) edits. Distinct, closest first.
    std::vector<std::string> close_matches(std::string_view gene, int max_matches = 3) const;

    std::int64_t num_genes() const noexcept { return static_cast<std::int64_t>(m_names.size()); }
    std::span<const std::string> names() const noexcept { return m_names; }
    std::span<const std::string> ids() const noexcept { return m_ids; }

private:
    std::span<const std::string> m_names;
    std::span<const std::string> m_ids;
};

}  // namespace fathom
