// Wall time of Leiden (core/algo/leiden) on a stored connectivities graph, for each
// implementation (leidenalg's optimiser reproduced, igraph_community_leiden). Run:
//   build/bench/bench_leiden --graph FILE.h5ad [--key connectivities] [--repeats 3]
//       [--implementation both|leidenalg|igraph] [--resolution 1.0] [--seed 0]
// With --cancel-after-ms T each run is cancelled T ms after it starts and the time from
// the cancel request to the Cancelled exception is printed instead (cancellation latency).
// FILE is an h5ad with obsp[KEY] (fathom-cli run --neighbors writes one). Prints every
// run's wall and CPU time, the medians, clusters, passes and modularity; the graph is
// read once and not timed. Leiden is sequential: on a shared machine the CPU time is
// the steadier figure.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/algo/leiden.hpp"
#include "core/engine/JobContext.hpp"
#include "core/io/RowSource.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string graph;
    std::string key = "connectivities";
    int repeats = 3;
    std::string implementation = "both";
    double resolution = 1.0;
    std::uint64_t seed = 0;
    double cancel_after_ms = 0.0;  ///< > 0: cancel each run this long after it starts
};

[[noreturn]] void usage(const std::string& problem) {
    std::fprintf(stderr,
                 "bench_leiden: %s\nusage: bench_leiden --graph FILE.h5ad [--key connectivities] [--repeats R]\n"
                 "                    [--implementation both|leidenalg|igraph] [--resolution G] [--seed S]\n"
                 "                    [--cancel-after-ms T]\n",
                 problem.c_str());
    std::exit(2);
}

Args parse_args(int argc, char** argv) {
    Args args;
    for (int index = 1; index < argc; ++index) {
        const std::string flag = argv[index];
        const auto value = [&]() -> std::string {
            if (index + 1 >= argc) usage(flag + " needs a value");
            return argv[++index];
        };
        try {
            if (flag == "--graph") args.graph = value();
            else if (flag == "--key") args.key = value();
            else if (flag == "--repeats") args.repeats = std::stoi(value());
            else if (flag == "--implementation") args.implementation = value();
            else if (flag == "--resolution") args.resolution = std::stod(value());
            else if (flag == "--seed") args.seed = std::stoull(value());
            else if (flag == "--cancel-after-ms") args.cancel_after_ms = std::stod(value());
            else usage("unknown option " + flag);
        } catch (const std::logic_error&) {
            usage("bad value for " + flag);
        }
    }
    if (args.graph.empty()) usage("--graph is required");
    if (args.repeats < 1) usage("--repeats must be >= 1");
    if (args.implementation != "both" && args.implementation != "leidenalg" && args.implementation != "igraph")
        usage("--implementation must be both, leidenalg or igraph");
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
    return graph;
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
    // FNV-1a of the labels: equal digests mean identical labellings.
    std::uint64_t digest = 14695981039346656037ull;
    for (const auto label : result.labels) digest = (digest ^ static_cast<std::uint64_t>(label)) * 1099511628211ull;
    std::printf("%s: median %.3f s wall, %.3f s cpu over %d runs; %d clusters, %d passes, modularity %.9f, labels %016llx\n",
                name, seconds[seconds.size() / 2], cpu_seconds[cpu_seconds.size() / 2], args.repeats, result.num_clusters,
                result.passes, result.modularity, static_cast<unsigned long long>(digest));
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse_args(argc, argv);
    try {
        const fathom::CsrGraph graph = read_graph(args);
        std::printf("graph %s obsp/%s: %lld cells, %lld stored entries\n", args.graph.c_str(), args.key.c_str(),
                    static_cast<long long>(graph.num_cells), static_cast<long long>(graph.nnz()));
        const auto bench = args.cancel_after_ms > 0 ? run_cancelled : run;
        if (args.implementation != "igraph") bench(graph, args, fathom::LeidenImplementation::Leidenalg, "leidenalg");
        if (args.implementation != "leidenalg") bench(graph, args, fathom::LeidenImplementation::Igraph, "igraph");
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_leiden: %s\n", error.what());
        return 1;
    }
    return 0;
}
