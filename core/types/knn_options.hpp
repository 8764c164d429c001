#pragma once
/// Options of the k-nearest-neighbour search (core/algo/knn.hpp).
#include <cstdint>

namespace fathom {

/// How the neighbours are found.
enum class KnnMethod {
    Auto,       ///< Exact below KnnOptions::exact_below cells, Ivf from there on
    Exact,      ///< blocked brute force; exact up to distance ties
    Hnsw,       ///< approximate: hierarchical navigable small-world graph (hnswlib)
    NnDescent,  ///< approximate: NN-descent from a random-projection forest (as pynndescent)
    Ivf,        ///< approximate: k-means inverted-file search in dense tiles, refined on the graph
};

/// Options of the neighbour search.
struct KnnOptions {
    /// k, the cell itself included (scanpy's n_neighbors). >= 2. When the data set has
    /// fewer cells, k becomes 1 + num_cells / 2 as scanpy 1.9 does ("n_obs too small").
    int num_neighbors = 15;
    /// Leading columns of the input used (scanpy's n_pcs); 0 = all columns.
    int num_pcs = 0;
    KnnMethod method = KnnMethod::Auto;  ///< exact or approximate search
    /// Auto uses Exact when num_cells is below this. scanpy 1.9.6 `Neighbors.compute_neighbors`:
    /// `use_dense_distances = (metric == 'euclidean' and X.shape[0] < 8192)`; above it
    /// scanpy calls umap's nearest_neighbors (pynndescent). umap's own 4096 threshold only
    /// applies to scanpy's non-euclidean branch.
    std::int64_t exact_below = 8192;
    int hnsw_m = 16;                 ///< HNSW links per node (M); >= 2
    int hnsw_ef_construction = 200;  ///< HNSW build beam width; >= hnsw_m
    /// HNSW search beam width; raised to num_neighbors when smaller. 150 gives a recall of
    /// about 0.994 against exact search on 10k-cell 50-PC data (neurons10k) with M = 16.
    int hnsw_ef = 150;
    /// HNSW: insert points from several threads (fast, but the graph depends on thread
    /// timing). false = single-threaded insertion: the same seed gives the same index.
    bool hnsw_parallel_build = true;
    /// NN-descent: random-projection trees of the initial graph (each leaf searched by
    /// brute force). >= 0; 0 = pynndescent's default, min(64, 5 + round(num_cells^0.25 / 2))
    /// (14 trees at 100k cells, 22 at 1.3M). A good initial graph is cheaper than more
    /// rounds: on the 100k-cell, 50-PC benchmark set 12 trees reach a recall of 0.997 in
    /// 5 rounds where 2 trees reach 0.994 in 6 rounds at more CPU time.
    int nndescent_trees = 0;
    int nndescent_leaf_size = 32;  ///< NN-descent: largest tree leaf; in [2, 1024]
    /// NN-descent: neighbours kept per cell while searching, beyond the num_neighbors - 1
    /// returned (a longer list costs a little and raises the recall). >= 0, and
    /// num_neighbors - 1 + nndescent_extra <= 1024.
    int nndescent_extra = 20;
    /// NN-descent: new (and old) candidates sampled per cell and round (pynndescent's
    /// max_candidates). In [1, 256].
    int nndescent_max_candidates = 50;
    int nndescent_iterations = 10;   ///< NN-descent: rounds at most; >= 0
    /// NN-descent: stop when a round changes fewer than delta * num_cells * list length
    /// entries (pynndescent's delta). >= 0.
    double nndescent_delta = 0.001;
    /// NN-descent: beam width of the final graph search (0 = none; in [0, 4096]; raised to
    /// the list length num_neighbors - 1 + nndescent_extra when smaller). Every cell's
    /// list is searched for again, best first, over the NN-descent graph with its reverse
    /// edges, as HNSW searches its bottom layer; this lifts the recall where NN-descent
    /// stalls on large inputs.
    int nndescent_search_ef = 0;
    /// IVF: mean cells per k-means cluster (>= 1). Smaller clusters make the search
    /// cheaper and the recall lower at the same number of probes.
    int ivf_cluster_size = 256;
    /// IVF: nearest clusters whose members every cell is compared with; in [1, 256]. On
    /// the 100k-cell synthetic benchmark (zheng17, 1000 genes, 50 PCs; 390 clusters) 16
    /// probes reach a recall of 0.984 after one refinement pass, 20 probes 0.992 (knn
    /// step 2.48 -> 2.84 CPU s, `bench_umap --method ivf --knn-only`): the default keeps
    /// the recall above 0.99.
    int ivf_probes = 20;
    /// IVF: above this many cells the probes grow as ivf_probes * sqrt(num_cells /
    /// ivf_probes_scale_from), rounded, at most 256; 0 = always ivf_probes. With a fixed
    /// cluster size a fixed number of probes covers an ever smaller share of each cell
    /// type: on the 1.3M-cell, 50-PC synthetic benchmark (12 types, the PCs within a type
    /// mostly noise) 16 probes reach a recall of 0.85 (0.88 with the reverse joins
    /// below), 47 probes 0.980, 59 probes 0.988 (0.989 with two refinement passes, at
    /// more CPU), and the default, 72, 0.992 in 124 CPU s of the knn step (2 cores; 47
    /// probes: 95 s). >= 0.
    std::int64_t ivf_probes_scale_from = 100000;
    /// IVF: from 1,024 clusters on (a two-level k-means), a cell's probes are chosen
    /// among the centres of its ivf_assign_groups nearest coarse groups (about
    /// sqrt(clusters) of them) instead of among all centres; 0 = all centres. >= 0.
    int ivf_assign_groups = 8;
    /// IVF: passes that merge every list with its neighbours' lists; >= 0.
    int ivf_refine_rounds = 1;
    /// IVF: a refinement pass merges a cell's list with the first ivf_refine_fanout
    /// entries of the lists of its first ivf_refine_fanout neighbours (>= 1). On the
    /// 100k-cell benchmark set 10 gives a recall of 0.9960 where 14 gives 0.9964 at 12%
    /// more CPU time for the whole search.
    int ivf_refine_fanout = 10;
    /// IVF: a refinement pass also joins, per cell, the nearest ivf_refine_reverse cells
    /// whose first ivf_refine_fanout entries hold it, and merges their lists and reverse
    /// lists too (NN-descent's local join over forward and reverse neighbours; passes after
    /// the first join only entries new since the previous pass). >= 0; 0 = forward
    /// neighbours only (the search before this option). Measured with one pass, 2 busy
    /// cores (knn step CPU s): 100k cells of the synthetic benchmark (zheng17, 1000
    /// genes, 50 PCs) 0.979 -> 0.984 (2.5-2.9 -> 3.0-3.1 s); 300k cells 0.974 -> 0.981
    /// (11.4 -> 11.9 s; 24 probes 0.994 in 14.2 s); 1.3M cells, 16 probes 0.852 -> 0.882;
    /// 32 probes 0.938 -> 0.950; unclustered 8000 x 40 Gaussian, 4 probes, 2 passes
    /// 0.48 -> 0.67. More passes add little on the benchmark (0.982 with 3 at 300k).
    int ivf_refine_reverse = 10;
    /// IVF: neighbours kept per cell while searching, beyond the num_neighbors - 1
    /// returned (as nndescent_extra). >= 0, and num_neighbors - 1 + ivf_extra <= 1024.
    /// Longer lists did not raise the recall on the benchmark set (0.9964 with 0 or 2).
    int ivf_extra = 0;
    /// Query partitions processed independently (one per device). >= 1. The result is
    /// identical for any value.
    int num_partitions = 1;
    /// Approximate search: number of random cells whose neighbours are also found
    /// exactly to estimate the recall. 0 = skip.
    int recall_sample = 1000;
    std::uint64_t seed = 0;  ///< HNSW level generator, NN-descent trees and sampling, IVF k-means, recall sample
    /// Equal when every field is equal.
    friend bool operator==(const KnnOptions&, const KnnOptions&) = default;
};

}  // namespace fathom
