// Wall time of the neighbours step and of UMAP alone, on a PCA matrix read from an
// h5ad's obsm (e.g. the X_pca that `fathom-cli run --n-pcs 50` wrote), so that the
// two steps can be timed without the rest of the pipeline. Run:
//   build/bench/bench_umap --h5ad FILE [--obsm X_pca] [--neighbors 15] [--repeats 3]
//       [--threads T] [--deterministic] [--graph-cache FILE] [--epochs E] [--no-spectral]
//       [--random-init] [--spectral-tolerance T] [--spectral-only] [--hnsw-m M] [--ef-construction E]
//       [--ef E] [--trustworthiness SAMPLE]
//       [--method auto|exact|hnsw|nndescent|ivf] [--nnd-trees T] [--nnd-leaf L] [--nnd-extra X]
//       [--nnd-candidates C] [--nnd-iterations I] [--nnd-delta D] [--nnd-search-ef E]
//       [--recall-sample S] [--knn-only] [--tie-recall N] [--ivf-cluster-size S] [--ivf-probes P] [--ivf-assign-groups G]
//       [--ivf-refine R] [--ivf-fanout F] [--ivf-extra X]
//   build/bench/bench_umap --synthetic CELLS [--neighbors 15] [--epochs E] [--random-init] ...
// (--random-init and --epochs time the SGD alone; minima are printed next to the medians
// since on a shared machine the minimum is the figure least disturbed by other load.)
// Prints every repeat and the medians (wall and process CPU seconds) of the kNN
// search, the fuzzy simplicial set, UMAP as a whole and its spectral initialisation
// alone (at --spectral-tolerance, default umap()'s 1e-3; --spectral-only times nothing
// else), with the recall of the approximate search, and with --trustworthiness SAMPLE
// the trustworthiness (k = 15) of each layout on SAMPLE random cells. With --graph-cache the kNN table
// is read from FILE when it exists (else searched once and written there), and only
// the fuzzy set and UMAP are timed: a quick loop for UMAP work. --synthetic CELLS
// replaces the file by a kNN table of uniformly random neighbours (the worst case for
// caches: no locality at all) to time the SGD at millions of cells without a search
// (use it with --random-init: the spectral init of such an expander graph says little).
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_support.hpp"
#include "core/algo/neighbors.hpp"
#include "core/algo/spectral.hpp"
#include "core/algo/umap.hpp"
#include "core/types/JobContext.hpp"
#include "core/io/RowSource.hpp"

namespace {

using Clock = std::chrono::steady_clock;

/// Wall and process CPU seconds since construction.
struct Stopwatch {
    Clock::time_point wall = Clock::now();
    std::clock_t cpu = std::clock();
    double wall_seconds() const { return std::chrono::duration<double>(Clock::now() - wall).count(); }
    double cpu_seconds() const { return static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC; }
};

bool read_graph(const std::string& path, fathom::KnnGraph& graph) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    in.read(reinterpret_cast<char*>(&graph.num_cells), sizeof graph.num_cells);
    in.read(reinterpret_cast<char*>(&graph.num_neighbors), sizeof graph.num_neighbors);
    const auto size = static_cast<std::size_t>(graph.num_cells) * static_cast<std::size_t>(graph.num_neighbors);
    graph.indices.resize(size);
    graph.distances.resize(size);
    in.read(reinterpret_cast<char*>(graph.indices.data()), static_cast<std::streamsize>(size * sizeof(std::int32_t)));
    in.read(reinterpret_cast<char*>(graph.distances.data()), static_cast<std::streamsize>(size * sizeof(float)));
    if (!in) throw std::runtime_error(path + ": truncated kNN cache");
    return true;
}

void write_graph(const std::string& path, const fathom::KnnGraph& graph) {
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary);
        out.write(reinterpret_cast<const char*>(&graph.num_cells), sizeof graph.num_cells);
        out.write(reinterpret_cast<const char*>(&graph.num_neighbors), sizeof graph.num_neighbors);
        out.write(reinterpret_cast<const char*>(graph.indices.data()),
                  static_cast<std::streamsize>(graph.indices.size() * sizeof(std::int32_t)));
        out.write(reinterpret_cast<const char*>(graph.distances.data()),
                  static_cast<std::streamsize>(graph.distances.size() * sizeof(float)));
        if (!out) throw std::runtime_error(temporary + ": write failed");
    }
    std::filesystem::rename(temporary, path);
}

/// A kNN table of `cells` cells whose distinct neighbours (self first) are drawn
/// uniformly at random, at distances increasing from 1 to 2.
fathom::KnnGraph random_knn(std::int64_t cells, int neighbors) {
    if (neighbors < 2) throw std::invalid_argument("--neighbors must be >= 2");
    fathom::KnnGraph graph;
    graph.num_cells = cells;
    graph.num_neighbors = neighbors;
    graph.indices.resize(static_cast<std::size_t>(cells) * static_cast<std::size_t>(neighbors));
    graph.distances.resize(graph.indices.size());
    std::mt19937_64 generator(42);
    std::uniform_int_distribution<std::int64_t> other(0, cells - 1);
    for (std::int64_t cell = 0; cell < cells; ++cell) {
        const std::size_t row = static_cast<std::size_t>(cell) * static_cast<std::size_t>(neighbors);
        graph.indices[row] = static_cast<std::int32_t>(cell);
        graph.distances[row] = 0.0f;
        for (int slot = 1; slot < neighbors; ++slot) {
            const auto taken = [&](std::int64_t candidate) {
                for (int earlier = 0; earlier < slot; ++earlier)
                    if (graph.indices[row + static_cast<std::size_t>(earlier)] == candidate) return true;
                return false;
            };
            std::int64_t neighbor = other(generator);
            while (taken(neighbor)) neighbor = other(generator);
            graph.indices[row + static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(neighbor);
            graph.distances[row + static_cast<std::size_t>(slot)] = 1.0f + static_cast<float>(slot) / static_cast<float>(neighbors);
        }
    }
    return graph;
}

/// sklearn's trustworthiness (k neighbours) of `embedding` against `points`, on a
/// uniform sample of `sample` cells (ranks among the sample only): an O(sample^2) check
/// of layout quality where the exact measure (O(n^2)) is out of reach.
double sampled_trustworthiness(const fathom::DenseMatrix<float>& points, const fathom::DenseMatrix<float>& embedding,
                               std::int64_t sample, int k) {
    const std::int64_t cells = points.rows();
    sample = std::min(sample, cells);
    std::vector<std::int64_t> chosen(static_cast<std::size_t>(cells));
    for (std::int64_t cell = 0; cell < cells; ++cell) chosen[static_cast<std::size_t>(cell)] = cell;
    std::mt19937_64 generator(7);
    std::shuffle(chosen.begin(), chosen.end(), generator);
    chosen.resize(static_cast<std::size_t>(sample));
    const auto distance = [](const fathom::DenseMatrix<float>& matrix, std::int64_t a, std::int64_t b) {
        double sum = 0.0;
        for (std::int64_t column = 0; column < matrix.cols(); ++column) {
            const double diff = static_cast<double>(matrix(a, column)) - matrix(b, column);
            sum += diff * diff;
        }
        return sum;
    };
    std::vector<double> penalties(static_cast<std::size_t>(sample), 0.0);
    tbb::parallel_for(std::int64_t{0}, sample, [&](std::int64_t i) {
        const auto n = static_cast<std::size_t>(sample);
        std::vector<std::pair<double, std::int64_t>> original(n), embedded(n);
        for (std::size_t j = 0; j < n; ++j) {
            original[j] = {distance(points, chosen[static_cast<std::size_t>(i)], chosen[j]), static_cast<std::int64_t>(j)};
            embedded[j] = {distance(embedding, chosen[static_cast<std::size_t>(i)], chosen[j]), static_cast<std::int64_t>(j)};
        }
        // Self excluded (rank 0 after sorting, distance 0).
        original[static_cast<std::size_t>(i)].first = -1.0;
        embedded[static_cast<std::size_t>(i)].first = -1.0;
        std::sort(original.begin(), original.end());
        std::vector<std::int64_t> rank(n);
        for (std::size_t position = 0; position < n; ++position) rank[static_cast<std::size_t>(original[position].second)] = static_cast<std::int64_t>(position);
        std::partial_sort(embedded.begin(), embedded.begin() + k + 1, embedded.end());
        double penalty = 0.0;
        for (int neighbor = 1; neighbor <= k; ++neighbor)
            penalty += static_cast<double>(std::max<std::int64_t>(0, rank[static_cast<std::size_t>(embedded[static_cast<std::size_t>(neighbor)].second)] - k));
        penalties[static_cast<std::size_t>(i)] = penalty;
    });
    double total = 0.0;
    for (const double penalty : penalties) total += penalty;
    const auto n = static_cast<double>(sample);
    return 1.0 - 2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)) * total;
}

struct Args {
    std::string h5ad;
    std::string obsm = "X_pca";
    int neighbors = 15;
    int repeats = 3;
    int threads = 0;
    bool deterministic = false;
    std::string graph_cache;
    int epochs = 0;  ///< 0 = scanpy's default
    bool spectral = true;
    bool random_init = false;
    double spectral_tolerance = 1e-3;  ///< the spectral init timed alone (umap() uses 1e-3)
    bool spectral_only = false;        ///< time the spectral init alone, not UMAP
    bool knn_only = false;             ///< time the kNN search and the fuzzy set only
    int tie_recall = 0;                ///< cells for the recall that counts ties (0 = skip)
    std::int64_t synthetic_cells = 0;  ///< > 0: random kNN table instead of --h5ad
    std::int64_t trust_sample = 0;     ///< > 0: sampled trustworthiness of each layout
    fathom::KnnOptions knn;            ///< method and its parameters
};

/// The command line, or std::nullopt after CLI11 has printed help or an error (`exit_code`).
std::optional<Args> parse(int argc, char** argv, int& exit_code) {
    Args args;
    CLI::App app{"Wall time of the kNN search, the fuzzy set and UMAP on an h5ad's obsm matrix", "bench_umap"};
    app.add_option("--h5ad", args.h5ad, "h5ad file whose obsm holds the points")->check(CLI::ExistingFile);
    app.add_option("--obsm", args.obsm, "obsm key of the points")->capture_default_str();
    app.add_option("--neighbors", args.neighbors, "k, self included")->capture_default_str()->check(CLI::Range(2, 1024));
    app.add_option("--repeats", args.repeats, "runs")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--threads", args.threads, "TBB threads (0 = all)")->check(CLI::NonNegativeNumber);
    app.add_flag("--deterministic", args.deterministic, "deterministic UMAP SGD and single-threaded HNSW build");
    app.add_option("--graph-cache", args.graph_cache, "read the kNN table from this file, or write it there");
    app.add_option("--epochs", args.epochs, "UMAP epochs (0 = scanpy's default)")->check(CLI::NonNegativeNumber);
    app.add_flag_callback("--no-spectral", [&args] { args.spectral = false; }, "do not time the spectral initialisation alone");
    app.add_flag("--random-init", args.random_init, "random UMAP initialisation (times the SGD alone)");
    app.add_option("--spectral-tolerance", args.spectral_tolerance, "tolerance of the spectral init timed alone")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_flag("--spectral-only", args.spectral_only, "time the spectral initialisation alone (not UMAP)");
    app.add_option("--synthetic", args.synthetic_cells, "random kNN table of this many cells instead of --h5ad")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{std::numeric_limits<std::int32_t>::max()}));
    app.add_option("--trustworthiness", args.trust_sample, "sampled trustworthiness (k = 15) on this many cells")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--hnsw-m", args.knn.hnsw_m, "HNSW M")->capture_default_str();
    app.add_option("--ef-construction", args.knn.hnsw_ef_construction, "HNSW build beam")->capture_default_str();
    app.add_option("--ef", args.knn.hnsw_ef, "HNSW search beam")->capture_default_str();
    std::string method = fathom::knn_method_name(args.knn.method);
    app.add_option("--method", method, "kNN method")->capture_default_str()->check(CLI::IsMember({"auto", "exact", "hnsw", "nndescent", "ivf"}));
    app.add_option("--ivf-cluster-size", args.knn.ivf_cluster_size, "IVF mean cells per cluster")->capture_default_str();
    app.add_option("--ivf-probes", args.knn.ivf_probes, "IVF clusters probed per cell")->capture_default_str();
    app.add_option("--ivf-refine", args.knn.ivf_refine_rounds, "IVF refinement passes")->capture_default_str();
    app.add_option("--ivf-fanout", args.knn.ivf_refine_fanout, "IVF refinement fan-out")->capture_default_str();
    app.add_option("--ivf-assign-groups", args.knn.ivf_assign_groups,
                   "IVF: probes chosen among the centres of this many nearest coarse groups (0 = all centres)")
        ->capture_default_str();
    app.add_option("--ivf-scale-from", args.knn.ivf_probes_scale_from, "IVF probes grow above this many cells (0 = fixed)")->capture_default_str();
    app.add_option("--ivf-reverse", args.knn.ivf_refine_reverse, "IVF refinement reverse neighbours")->capture_default_str();
    app.add_option("--ivf-extra", args.knn.ivf_extra, "IVF extra list entries")->capture_default_str();
    app.add_option("--nnd-trees", args.knn.nndescent_trees, "NN-descent trees (0 = automatic)")->capture_default_str();
    app.add_option("--nnd-leaf", args.knn.nndescent_leaf_size, "NN-descent leaf size")->capture_default_str();
    app.add_option("--nnd-extra", args.knn.nndescent_extra, "NN-descent extra list entries")->capture_default_str();
    app.add_option("--nnd-candidates", args.knn.nndescent_max_candidates, "NN-descent candidates")->capture_default_str();
    app.add_option("--nnd-iterations", args.knn.nndescent_iterations, "NN-descent rounds at most")->capture_default_str();
    app.add_option("--nnd-delta", args.knn.nndescent_delta, "NN-descent stop fraction")->capture_default_str();
    app.add_option("--nnd-search-ef", args.knn.nndescent_search_ef, "NN-descent final search beam (0 = off)")->capture_default_str();
    app.add_option("--recall-sample", args.knn.recall_sample, "cells for the recall estimate")->capture_default_str();
    app.add_flag("--knn-only", args.knn_only, "time the kNN search and the fuzzy set only");
    app.add_option("--tie-recall", args.tie_recall, "cells for the recall that counts tied distances")->check(CLI::NonNegativeNumber);
    try {
        app.parse(argc, argv);
        args.knn.method = fathom::parse_knn_method(method, "--method");
        if (args.h5ad.empty() && args.synthetic_cells <= 0) throw CLI::RequiredError("--h5ad FILE or --synthetic CELLS");
    } catch (const CLI::ParseError& error) {
        exit_code = app.exit(error);
        return std::nullopt;
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        int exit_code = 0;
        const std::optional<Args> parsed = parse(argc, argv, exit_code);
        if (!parsed) return exit_code;
        const Args& args = *parsed;
        std::unique_ptr<tbb::global_control> limit;
        if (args.threads > 0)
            limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                          static_cast<std::size_t>(args.threads));
        std::optional<fathom::io::OpenedDataset> opened;
        fathom::DenseMatrix<float> no_points;
        const fathom::DenseMatrix<float>* points_found = &no_points;
        if (args.synthetic_cells <= 0) {
            opened = fathom::io::open_dataset(args.h5ad);
            const auto found = opened->meta.obsm.find(args.obsm);
            if (found == opened->meta.obsm.end())
                throw std::invalid_argument(args.h5ad + ": no obsm['" + args.obsm + "']");
            points_found = &found->second;
        }
        const fathom::DenseMatrix<float>& points = *points_found;
        const int threads = static_cast<int>(
            tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
        if (args.synthetic_cells > 0)
            std::printf("bench_umap: synthetic random kNN table, %lld cells, %d neighbours, %d threads, %s\n",
                        static_cast<long long>(args.synthetic_cells), args.neighbors, threads,
                        args.deterministic ? "deterministic" : "default (parallel) mode");
        else
            std::printf("bench_umap: %s obsm['%s'] %lld x %lld, %d threads, %s\n", args.h5ad.c_str(), args.obsm.c_str(),
                        static_cast<long long>(points.rows()), static_cast<long long>(points.cols()), threads,
                        args.deterministic ? "deterministic" : "default (parallel) mode");

        std::map<std::string, std::vector<double>> times;
        const auto record = [&times](const std::string& name, const Stopwatch& watch) {
            times[name + " wall"].push_back(watch.wall_seconds());
            times[name + " cpu"].push_back(watch.cpu_seconds());
        };
        fathom::KnnGraph cached;
        const bool have_cache =
            args.synthetic_cells > 0 ? (cached = random_knn(args.synthetic_cells, args.neighbors), true)
                                     : !args.graph_cache.empty() && read_graph(args.graph_cache, cached);
        for (int repeat = 0; repeat < args.repeats; ++repeat) {
            fathom::JobContext ctx;
            fathom::KnnGraph knn_graph;
            if (have_cache) {
                knn_graph = cached;
            } else {
                fathom::KnnOptions knn = args.knn;
                knn.num_neighbors = args.neighbors;
                knn.hnsw_parallel_build = !args.deterministic;
                const Stopwatch watch;
                fathom::KnnResult result = fathom::nearest_neighbors(points, knn, ctx);
                record("knn", watch);
                std::printf("  repeat %d: knn %.2f s wall, %.2f s cpu (%s, recall %.4f, %d NN-descent rounds)\n", repeat,
                            watch.wall_seconds(), watch.cpu_seconds(), fathom::knn_method_name(result.method_used),
                            result.recall, result.nndescent_iterations);
                if (args.tie_recall > 0 && repeat == 0) {
                    // Recall that counts a neighbour as found when it is no farther than the
                    // exact k-th one (cells at tied distances are interchangeable).
                    const int k = result.graph.num_neighbors;
                    double found = 0.0;
                    for (int sample = 0; sample < args.tie_recall; ++sample) {
                        const std::int64_t cell = static_cast<std::int64_t>(
                            (static_cast<std::uint64_t>(sample) * 0x9e3779b97f4a7c15ULL) % static_cast<std::uint64_t>(points.rows()));
                        const fathom::KnnGraph exact =
                            fathom::exact_neighbors(points, result.num_dims, k, cell, cell + 1, ctx);
                        const float kth = exact.distances[static_cast<std::size_t>(k - 1)];
                        int hits = 0;
                        for (const float distance : result.graph.neighbor_distances(cell).subspan(1))
                            hits += distance <= kth ? 1 : 0;
                        found += static_cast<double>(hits) / (k - 1);
                    }
                    std::printf("  recall counting ties (%d cells): %.4f\n", args.tie_recall, found / args.tie_recall);
                }
                knn_graph = std::move(result.graph);
                if (!args.graph_cache.empty() && repeat == 0) write_graph(args.graph_cache, knn_graph);
            }
            Stopwatch watch;
            auto fuzzy = fathom::fuzzy_simplicial_set(knn_graph, fathom::ConnectivitiesOptions{}, ctx);
            record("fuzzy set", watch);
            if (args.knn_only) continue;

            fathom::UmapOptions options;
            if (!args.spectral_only) {
                options.parallelism =
                    args.deterministic ? fathom::UmapParallelism::Deterministic : fathom::UmapParallelism::Hogwild;
                options.publish_every = 0;
                options.num_epochs = args.epochs;
                if (args.random_init) options.init = fathom::UmapInit::Random;
                watch = Stopwatch();
                const fathom::UmapResult result = fathom::umap(fuzzy.connectivities, points, options, ctx);
                record("umap", watch);
                std::printf("  repeat %d: umap %.2f s wall, %.2f s cpu (%d epochs, %lld edges)\n", repeat, watch.wall_seconds(),
                            watch.cpu_seconds(), result.num_epochs, static_cast<long long>(result.num_edges));
                if (args.trust_sample > 0 && !points.empty())
                    std::printf("  repeat %d: trustworthiness (k = 15, %lld sampled cells) %.4f\n", repeat,
                                static_cast<long long>(args.trust_sample),
                                sampled_trustworthiness(points, result.embedding, args.trust_sample, 15));
            }
            if (!args.spectral) continue;
            // The spectral init alone, on the unpruned graph (umap prunes few edges at 200 epochs).
            fathom::SpectralOptions spectral;
            spectral.num_components = options.num_components;
            spectral.tolerance = args.spectral_tolerance;
            watch = Stopwatch();
            const auto layout = fathom::spectral_layout(fuzzy.connectivities, points, spectral, ctx);
            record("spectral init", watch);
            std::printf("  repeat %d: spectral init %.2f s wall, %.2f s cpu (restarts %d)\n", repeat, watch.wall_seconds(),
                        watch.cpu_seconds(), layout.restarts);
        }
        for (const auto& [name, values] : times)
            std::printf("median %-20s %7.2f s (min %.2f) over %zu\n", name.c_str(), fathom::bench::median(values),
                        *std::min_element(values.begin(), values.end()), values.size());
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_umap: %s\n", error.what());
        return 1;
    }
}
