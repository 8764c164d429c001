#pragma once
/// Loupe-style CSV exports of an analysis snapshot.
#include <string>

#include "core/engine/Engine.hpp"

namespace fathom::cli {

/// Writes into `folder` (created if needed), each file atomically (temp + rename):
/// umap.csv (`Barcode,UMAP-1,UMAP-2`), one `<key>.csv` (`Barcode,<key>`) per
/// clustering (leiden), and markers.csv (group,gene,score,logfc,pval,pval_adj,pct).
/// Files whose data are absent are not written.
void export_csv(const AnalysisSnapshot& snapshot, const std::string& folder);

}  // namespace fathom::cli
