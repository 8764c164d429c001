#pragma once
/// Options of the gene-set scores (core/algo/gene_set.hpp).
#include <cstdint>

namespace fathom {

/// Options of score_gene_set. Names follow scanpy 1.9 tl.score_genes.
struct GeneSetScoreOptions {
    /// LogNorm scaling: counts per cell after normalising (scanpy normalize_total's
    /// target_sum), > 0.
    double target_sum = 1e4;
    /// false: the score is the mean of the set's values (the default). true: scanpy's
    /// score_genes, the mean of the set minus the mean of a control set.
    bool subtract_control = false;
    /// score_genes: control genes drawn from each expression bin that holds a set
    /// gene (all of the bin's genes when it has fewer), >= 1.
    int ctrl_size = 50;
    /// score_genes: number of expression bins of the genes' mean values, >= 2.
    int n_bins = 25;
    /// score_genes: numpy's legacy np.random.seed(random_state) before the draws.
    std::uint32_t random_state = 0;
    /// Equal when every field is equal.
    friend bool operator==(const GeneSetScoreOptions&, const GeneSetScoreOptions&) = default;
};

}  // namespace fathom
