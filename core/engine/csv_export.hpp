#pragma once
/// Loupe-style CSV exports of an analysis snapshot, shared by fathom-cli (`run
/// --export-csv`) and the desktop's File > Export Data.
#include <optional>
#include <string>
#include <vector>

#include "core/engine/Engine.hpp"

namespace fathom {

/// What export_csv writes.
struct CsvExportOptions {
    /// obsm keys written as projections (`Barcode,<AXIS>-1,<AXIS>-2`, file
    /// "<axis>.csv": X_umap -> umap.csv with UMAP-1, UMAP-2). Absent keys are skipped.
    std::vector<std::string> projections = {"X_umap"};
    /// Categorical obs columns written as `Barcode,<key>` ("<key>.csv"); nullopt = every
    /// categorical column (clusters, user annotations, the file's own).
    std::optional<std::vector<std::string>> categories;
    bool markers = true;  ///< markers.csv (group,gene,score,logfc,pval,pval_adj,pct) when markers ran
};

/// Writes the CSV files into `folder` (created if needed), each atomically; returns the
/// paths written, in order. Throws std::invalid_argument naming the key when a listed
/// category is not a categorical obs column or the snapshot has no cells, and
/// io::WriteError naming the file when writing fails (files written before it stay).
std::vector<std::string> export_csv(const AnalysisSnapshot& snapshot, const std::string& folder,
                                    const CsvExportOptions& options = {});

}  // namespace fathom
