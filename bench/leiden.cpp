// Wall time of Leiden (core/algo/leiden) on a stored connectivities graph, for each
// implementation (leidenalg's optimiser reproduced, igraph_community_leiden, the parallel
// flavor). Run:
//   build/bench/bench_leiden --graph FILE.h5ad [--key connectivities] [--repeats 3]
//       [--implementation both|leidenalg|igraph|parallel ...] [--resolution 1.0] [--seed 0]
//       [--threads N]
// (both = leidenalg igraph; several may be named; --threads caps TBB's threads).
// With --cancel-after-ms T each run is cancelled T ms after it starts and the time from
// the cancel request to the Cancelled exception is printed instead (cancellation latency).
// FILE is an h5ad with obsp[KEY] (fathom-cli run --neighbors writes one). Prints every
// run's wall and CPU time, the medians, clusters, passes and modularity; the graph is
// read once and not timed. leidenalg's optimiser is sequential: on a shared machine the
// CPU time is the steadier figure.
// --copies N runs on N disjoint copies of the graph whose node numbers interleave (node v
// of copy c is N v + c): a graph N times as large whose neighbours lie far apart in the
// numbering, as in a large dataset. --locality off|on|both times leidenalg's optimiser
// alone (detail::leidenalg_optimise, no modularity) without / with its renumbering of
// the nodes for memory locality, in turns, and checks that the labels are the same.
// --labels-out FILE writes the last run's labels (raw int32) for comparing two builds.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <tbb/global_control.h>

#include "core/algo/leiden.hpp"
#include "core/algo/leiden_optimiser.hpp"
#include "core/types/JobContext.hpp"
#include "core/io/RowSource.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string graph;
    std::string key = "connectivities";
    int repeats = 3;
    std::vector<std::string> implementations{"both"};
    int threads = 0;  ///< > 0: at most this many TBB threads
    double resolution = 1.0;
    std::uint64_t seed = 0;
    double cancel_after_ms = 0.0;  ///< > 0: cancel each run this long after it starts
    int copies = 1;
    std::string locality;  ///< empty: leiden(); else off, on or both
    std::string labels_out;  ///< non-empty: the last run's labels written here
};

/// The command line, or std::nullopt after CLI11 has printed help or an error (`exit_code`).
std::optional<Args> parse_args(int argc, char** argv, int& exit_code) {
    Args args;
    CLI::App app{"Wall time of Leiden on a stored connectivities graph", "bench_leiden"};
    app.add_option("--graph", args.graph, "h5ad file with the graph in obsp")->required()->check(CLI::ExistingFile);
    app.add_option("--key", args.key, "obsp key")->capture_default_str();
    app.add_option("--repeats", args.repeats, "runs")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--implementation", args.implementations, "which Leiden (both = leidenalg igraph)")
        ->capture_default_str()
        ->check(CLI::IsMember({"both", "leidenalg", "igraph", "parallel"}));
    app.add_option("--threads", args.threads, "at most this many threads (default: all)")->check(CLI::PositiveNumber);
    app.add_option("--resolution", args.resolution, "resolution")->capture_default_str();
    app.add_option("--seed", args.seed, "seed")->capture_default_str();
    app.add_option("--cancel-after-ms", args.cancel_after_ms, "cancel each run this long after it starts")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--copies", args.copies, "disjoint copies of the graph, node numbers interleaved")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--locality", args.locality, "leidenalg's optimiser alone, without / with renumbering for locality")
        ->check(CLI::IsMember({"off", "on", "both"}));
    app.add_option("--labels-out", args.labels_out, "write the last run's labels here (int32, native byte order; one implementation)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        exit_code = app.exit(error);
        return std::nullopt;
    }
    return args;
}

fathom::CsrGraph read_graph(const Args& args) {
    fathom::io::ReadOptions options;
    options.read_annotations = true;
    auto opened = fathom::io::open_dataset(args.graph, options);
    const auto found = opened.meta.obsp.find(args.key);
    if (found == opened.meta.obsp.end()) throw std::runtime_error(args.graph + ": no obsp/" + args.key);
    fathom::CsrGraph graph;
    graph.num_cells = found->second.num_rows();
    graph.row_offsets = found->second.row_offsets;
    graph.col_indices = found->second.gene_indices;
    graph.values = found->second.values;
    fathom::check_csr_graph(graph, (args.graph + ": obsp/" + args.key).c_str());
    if (args.copies == 1) return graph;
    const std::int64_t copies = args.copies;
    fathom::CsrGraph many;
    many.num_cells = graph.num_cells * copies;
    many.row_offsets.assign(1, 0);
    many.col_indices.reserve(graph.col_indices.size() * static_cast<std::size_t>(copies));
    many.values.reserve(graph.values.size() * static_cast<std::size_t>(copies));
    for (std::int64_t node = 0; node < many.num_cells; ++node) {
        const auto row = static_cast<std::size_t>(node / copies);
        const auto copy = static_cast<std::int32_t>(node % copies);
        for (auto entry = graph.row_offsets[row]; entry < graph.row_offsets[row + 1]; ++entry) {
            many.col_indices.push_back(static_cast<std::int32_t>(copies * graph.col_indices[static_cast<std::size_t>(entry)] + copy));
            many.values.push_back(graph.values[static_cast<std::size_t>(entry)]);
        }
        many.row_offsets.push_back(static_cast<std::int64_t>(many.col_indices.size()));
    }
    return many;
}

/// Writes labels as raw int32 (compare two runs' files with cmp).
void write_labels(const std::string& path, const std::vector<std::int32_t>& labels) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) throw std::runtime_error("--labels-out: cannot open " + path);
    const std::size_t written = std::fwrite(labels.data(), sizeof(std::int32_t), labels.size(), file);
    if (std::fclose(file) != 0 || written != labels.size()) throw std::runtime_error("--labels-out: cannot write " + path);
}

/// FNV-1a of labels: equal digests mean identical labellings.
std::uint64_t digest_of(const std::vector<std::int32_t>& labels) {
    std::uint64_t digest = 14695981039346656037ull;
    for (const auto label : labels) digest = (digest ^ static_cast<std::uint64_t>(label)) * 1099511628211ull;
    return digest;
}

/// leidenalg's optimiser alone, without and/or with renumbering, runs alternating.
int run_locality(const fathom::CsrGraph& graph, const Args& args) {
    std::vector<bool> modes;
    if (args.locality != "on") modes.push_back(false);
    if (args.locality != "off") modes.push_back(true);
    std::vector<std::vector<double>> seconds(2), cpu_seconds(2);
    std::vector<std::uint64_t> digests(2, 0);
    int communities = 0, passes = 0;
    for (int repeat = 0; repeat < args.repeats; ++repeat) {
        for (const bool renumber : modes) {
            fathom::JobContext ctx;
            const auto start = Clock::now();
            const std::clock_t cpu_start = std::clock();
            const auto partition = fathom::detail::leidenalg_optimise(graph, args.resolution, -1, true, args.seed, ctx, 1000, renumber);
            const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
            const double wall = std::chrono::duration<double>(Clock::now() - start).count();
            seconds[renumber].push_back(wall);
            cpu_seconds[renumber].push_back(cpu);
            digests[renumber] = digest_of(partition.membership);
            if (!args.labels_out.empty()) write_labels(args.labels_out, partition.membership);
            communities = partition.num_communities;
            passes = partition.passes;
            std::printf("locality %s run %d: %.3f s wall, %.3f s cpu\n", renumber ? "on" : "off", repeat + 1, wall, cpu);
            std::fflush(stdout);
        }
    }
    for (const bool renumber : modes) {
        auto& wall = seconds[renumber];
        auto& cpu = cpu_seconds[renumber];
        std::sort(wall.begin(), wall.end());
        std::sort(cpu.begin(), cpu.end());
        std::printf("locality %s: median %.3f s wall, %.3f s cpu over %d runs; %d communities, %d passes, labels %016llx\n",
                    renumber ? "on" : "off", wall[wall.size() / 2], cpu[cpu.size() / 2], args.repeats, communities, passes,
                    static_cast<unsigned long long>(digests[renumber]));
    }
    if (modes.size() == 2 && digests[0] != digests[1]) {
        std::fprintf(stderr, "bench_leiden: the labels differ with and without renumbering\n");
        return 1;
    }
    return 0;
}

/// Cancels each run after args.cancel_after_ms and prints how long the run took to end.
void run_cancelled(const fathom::CsrGraph& graph, const Args& args, fathom::LeidenImplementation implementation, const char* name) {
    fathom::LeidenOptions options;
    options.resolution = args.resolution;
    options.seed = args.seed;
    options.implementation = implementation;
    for (int repeat = 0; repeat < args.repeats; ++repeat) {
        fathom::JobContext ctx;
        Clock::time_point cancelled_at;
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(args.cancel_after_ms));
            cancelled_at = Clock::now();
            ctx.cancel();
        });
        bool ended_cancelled = false;
        try {
            fathom::leiden(graph, options, ctx);
        } catch (const fathom::Cancelled&) {
            ended_cancelled = true;
        }
        const auto ended_at = Clock::now();
        canceller.join();
        if (ended_cancelled)
            std::printf("%s run %d: cancelled %.1f ms after the request\n", name, repeat + 1,
                        std::chrono::duration<double, std::milli>(ended_at - cancelled_at).count());
        else
            std::printf("%s run %d: finished before the cancel request\n", name, repeat + 1);
    }
}

void run(const fathom::CsrGraph& graph, const Args& args, fathom::LeidenImplementation implementation, const char* name) {
    fathom::LeidenOptions options;
    options.resolution = args.resolution;
    options.seed = args.seed;
    options.implementation = implementation;
    std::vector<double> seconds, cpu_seconds;
    fathom::LeidenResult result;
    for (int repeat = 0; repeat < args.repeats; ++repeat) {
        fathom::JobContext ctx;
        const auto start = Clock::now();
        const std::clock_t cpu_start = std::clock();
        result = fathom::leiden(graph, options, ctx);
        cpu_seconds.push_back(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
        seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        std::printf("%s run %d: %.3f s wall, %.3f s cpu\n", name, repeat + 1, seconds.back(), cpu_seconds.back());
        std::fflush(stdout);
    }
    std::sort(seconds.begin(), seconds.end());
    std::sort(cpu_seconds.begin(), cpu_seconds.end());
    const std::uint64_t digest = digest_of(result.labels);
    if (!args.labels_out.empty()) write_labels(args.labels_out, result.labels);
    std::printf("%s: median %.3f s wall, %.3f s cpu over %d runs; %d clusters, %d passes, modularity %.9f, labels %016llx\n",
                name, seconds[seconds.size() / 2], cpu_seconds[cpu_seconds.size() / 2], args.repeats, result.num_clusters,
                result.passes, result.modularity, static_cast<unsigned long long>(digest));
}

}  // namespace

int main(int argc, char** argv) {
    int exit_code = 0;
    const std::optional<Args> parsed = parse_args(argc, argv, exit_code);
    if (!parsed) return exit_code;
    const Args& args = *parsed;
    std::optional<tbb::global_control> thread_limit;
    if (args.threads > 0) thread_limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(args.threads));
    try {
        const fathom::CsrGraph graph = read_graph(args);
        std::printf("graph %s obsp/%s: %lld cells, %lld stored entries\n", args.graph.c_str(), args.key.c_str(),
                    static_cast<long long>(graph.num_cells), static_cast<long long>(graph.nnz()));
        if (!args.locality.empty()) return run_locality(graph, args);
        const auto bench = args.cancel_after_ms > 0 ? run_cancelled : run;
        const auto wanted = [&](const char* name) {
            for (const auto& entry : args.implementations)
                if (entry == name || (entry == "both" && std::string(name) != "parallel")) return true;
            return false;
        };
        if (wanted("leidenalg")) bench(graph, args, fathom::LeidenImplementation::Leidenalg, "leidenalg");
        if (wanted("igraph")) bench(graph, args, fathom::LeidenImplementation::Igraph, "igraph");
        if (wanted("parallel")) bench(graph, args, fathom::LeidenImplementation::Parallel, "parallel");
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_leiden: %s\n", error.what());
        return 1;
    }
    return 0;
}
