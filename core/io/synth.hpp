#pragma once
/// Built-in demo data: realistic synthetic raw UMI counts written straight to a 10x v3
/// HDF5 (.h5) or h5ad file, streamed block by block with bounded memory (`fathom-cli
/// synth`). The model, per cell c of type t:
///   library size      L_c ~ LogNormal(log(median_library_size), library_size_sigma)
///   mitochondrial     m_c ~ LogNormal(log 0.04, 0.35) in [0.005, 0.15]; a
///                     low_quality_fraction of cells has m_c ~ U(0.15, 0.40) and half the library
///   nuclear genes     mean  mu_cg = L_c (1 - m_c) p_tg,  p_t = baseline * marker folds, normalised;
///                     baseline_g ~ LogNormal(0, gene_mean_sigma) (few highly expressed genes,
///                     long tail); each type up-regulates markers_per_type genes 2^U(2.5, 5)-fold
///   MT- genes (13)    mean L_c m_c q_j with fixed relative weights (MT-CO1 highest)
///   counts            negative binomial (gamma-Poisson, size nb_size) with that mean.
/// Genes whose mean at the median library is below 0.25 are drawn as Poisson through one
/// pooled multinomial (their NB and Poisson laws differ by < 1% in P(0) there), which keeps
/// the cost per cell proportional to the detected genes, not to num_genes.
/// Every cell draws from its own RNG stream seeded by (seed, cell index): the output is
/// identical for a seed whatever the thread count or block size.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fathom {
class JobContext;
}

namespace fathom::io {

/// What to generate. Defaults give ~2000 detected genes per cell at 28k genes (7%
/// dense), close to 10x 3' v3 PBMC data.
struct SynthOptions {
    std::int64_t num_cells = 10000;   ///< >= 1 and <= 2^31 - 1
    std::int64_t num_genes = 28000;   ///< >= 50, of which the last 13 are MT- genes
    int num_cell_types = 12;          ///< >= 1 (each needs >= 1 marker gene, see markers_per_type)
    std::uint64_t seed = 0;           ///< same seed => byte-identical matrix
    /// Genes each type up-regulates; capped so that every type gets disjoint markers
    /// drawn from the moderately expressed genes. >= 1.
    int markers_per_type = 40;
    double median_library_size = 4000.0;  ///< median UMIs of a normal cell, > 0
    double library_size_sigma = 0.5;      ///< sd of log library size, >= 0
    double gene_mean_sigma = 2.0;         ///< sd of log baseline expression across genes, >= 0
    double nb_size = 3.0;                 ///< negative-binomial size r (inverse dispersion), >= 1
    double low_quality_fraction = 0.05;   ///< share of high-mito, small-library cells, in [0, 1]
    std::int64_t cells_per_block = 1024;  ///< cells generated per task (memory per block), >= 1
    /// Compression: -1 = the format's default (gzip 4 for .h5 as CellRanger writes it,
    /// none for .h5ad as anndata writes it); else 0-9.
    int gzip_level = -1;
    /// Called after each block is written (on the writing thread) with the cells and
    /// non-zeros written so far. Optional.
    std::function<void(std::int64_t cells_done, std::int64_t nnz_done)> on_progress;
};

/// Throws std::invalid_argument naming the field and the CLI flag, e.g.
/// "SynthOptions::num_cells (--cells) must be >= 1, got 0".
void validate(const SynthOptions& options);

/// The ground truth behind a synthetic dataset (derived from the options and seed only).
struct SynthModel {
    std::vector<std::string> gene_names;   ///< "GENE00001", ..., then "MT-ND1", ..., "MT-CYB"
    std::vector<std::string> gene_ids;     ///< "SYNG00000000001", ...
    std::vector<std::string> cell_type_names;          ///< "type01", ...
    std::vector<double> cell_type_proportions;         ///< sums to 1
    std::vector<std::vector<std::int32_t>> markers;    ///< per type: its marker gene indices (sorted)
    std::vector<std::int32_t> mito_genes;              ///< indices of the MT- genes
};

/// The model for `options` (validated).
SynthModel synthetic_model(const SynthOptions& options);

/// Barcode of cell `cell_index`: 16 nucleotides from a bijective scramble of the index
/// (unique for every index < 2^32) plus "-1", e.g. "AAACCTGAGAAACCAT-1".
std::string synthetic_barcode(std::int64_t cell_index, std::uint64_t seed);

/// What was written.
struct SynthSummary {
    std::int64_t num_cells = 0;
    std::int64_t num_genes = 0;
    std::int64_t nnz = 0;  ///< stored non-zeros
};

/// Generates the dataset and writes it to `path`: ".h5" = 10x v3 HDF5 (no obs), ".h5ad" =
/// anndata with raw counts in X (float32 CSR), obs "cell_type" (categorical truth) and
/// "low_quality" (bool), var "gene_ids" / "feature_types" / "genome". Other extensions
/// throw std::invalid_argument naming --out. Blocks are generated in parallel (oneTBB)
/// and written in order; memory stays at a few blocks. Throws WriteError naming `path`
/// on I/O failure (nothing is left at `path`) and Cancelled when `ctx` is cancelled.
SynthSummary write_synthetic(const std::string& path, const SynthOptions& options, JobContext* ctx = nullptr);

}  // namespace fathom::io
