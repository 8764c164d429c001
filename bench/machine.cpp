// The machine's rates that bound the pipeline's steps (README "Performance": how far each
// step is from what the machine allows). Each figure is the median of --repeats runs.
//   first touch     a fresh mapping written once: page faults, zeroing (and, on a virtual
//                   machine, the host backing each page) - what every new large array pays
//   rewrite         the same bytes written again into memory the process holds
//   cold memory     --cold-gib GiB touched once after a pause of --cold-pause s, with
//                   4 KiB pages and with MADV_HUGEPAGE, seconds per GiB slice: what a
//                   process pays for memory it has never held (the first-touch figure
//                   above re-maps the block it just freed, which a virtual machine may
//                   still back; memory free for a while may have gone back to the host)
//   page cache      a file written with write() (the h5ad export's X), 1 and 2 writers
//   inflate         zlib streams of CSR-like chunks decompressed by libdeflate, per core
//                   (the 10x file's gzip'd indices and counts)
//   random reads    8-byte reads at random over --random-mib: one chain of dependent reads
//                   (a latency, as Leiden's sequential moves) and independent ones (a
//                   throughput, as UMAP's negative samples)
// Run: build/bench/bench_machine [--dir /tmp] [--repeats 5]
#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMiB = std::size_t{1} << 20;

double seconds_of(const std::function<void()>& work) {
    const auto start = Clock::now();
    work();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double median_of(int repeats, const std::function<double()>& run) {
    std::vector<double> values;
    for (int index = 0; index < repeats; ++index) values.push_back(run());
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

char* map_fresh(std::size_t bytes, bool huge = true) {
    void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::runtime_error("mmap failed");
    if (huge) ::madvise(block, bytes, MADV_HUGEPAGE);  // as the application's large blocks
    return static_cast<char*>(block);
}

/// Seconds to write each GiB of a fresh `gib`-GiB mapping once, after `pause_s` seconds.
std::vector<double> cold_touch(int gib, bool huge, int pause_s) {
    std::this_thread::sleep_for(std::chrono::seconds(pause_s));
    const std::size_t slice = std::size_t{1} << 30;
    char* block = map_fresh(slice * static_cast<std::size_t>(gib), huge);
    std::vector<double> seconds;
    for (int index = 0; index < gib; ++index)
        seconds.push_back(seconds_of([&] { std::memset(block + slice * static_cast<std::size_t>(index), 1, slice); }));
    ::munmap(block, slice * static_cast<std::size_t>(gib));
    return seconds;
}

/// Seconds per GiB to write `bytes` to a fresh file in `dir` with `writers` threads.
double page_cache_write(const std::string& dir, std::size_t bytes, int writers) {
    const std::string path = dir + "/fathom_bench_machine.tmp";
    std::vector<char> buffer(4 * kMiB, 1);
    const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0) throw std::runtime_error("cannot create " + path);
    const double elapsed = seconds_of([&] {
        std::vector<std::thread> threads;
        const std::size_t share = bytes / static_cast<std::size_t>(writers);
        for (int writer = 0; writer < writers; ++writer)
            threads.emplace_back([&, writer] {
                for (std::size_t done = 0; done < share; done += buffer.size()) {
                    const auto offset = static_cast<off_t>(share * static_cast<std::size_t>(writer) + done);
                    if (::pwrite(fd, buffer.data(), buffer.size(), offset) != static_cast<ssize_t>(buffer.size()))
                        throw std::runtime_error("write failed");
                }
            });
        for (auto& thread : threads) thread.join();
    });
    ::close(fd);
    ::unlink(path.c_str());
    return elapsed * static_cast<double>(std::size_t{1} << 30) / static_cast<double>(bytes);
}

/// CSR-like chunks as a 10x file stores them: 128 KiB of sorted gene indices (int32)
/// and of small counts (float32), each deflated at level 4.
struct Chunks {
    std::vector<std::vector<std::uint8_t>> compressed;
    std::size_t chunk_bytes = 128 * 1024;
};

Chunks make_chunks(std::size_t total_bytes) {
    Chunks chunks;
    std::mt19937_64 random(7);
    std::uniform_int_distribution<int> step(1, 20);
    std::geometric_distribution<int> count(0.6);
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(4);
    std::vector<std::uint8_t> plain(chunks.chunk_bytes);
    std::int32_t gene = 0;
    for (std::size_t done = 0; done < total_bytes; done += chunks.chunk_bytes) {
        const bool indices = (done / chunks.chunk_bytes) % 2 == 0;
        for (std::size_t offset = 0; offset < plain.size(); offset += 4) {
            if (indices) {
                gene = gene > 20000 ? step(random) : gene + step(random);
                std::memcpy(plain.data() + offset, &gene, 4);
            } else {
                const float value = static_cast<float>(1 + count(random));
                std::memcpy(plain.data() + offset, &value, 4);
            }
        }
        std::vector<std::uint8_t> out(libdeflate_zlib_compress_bound(compressor, plain.size()));
        out.resize(libdeflate_zlib_compress(compressor, plain.data(), plain.size(), out.data(), out.size()));
        chunks.compressed.push_back(std::move(out));
    }
    libdeflate_free_compressor(compressor);
    return chunks;
}

/// Seconds per GiB of output to inflate every chunk on one thread.
double inflate_rate(const Chunks& chunks) {
    libdeflate_decompressor* decompressor = libdeflate_alloc_decompressor();
    std::vector<std::uint8_t> out(chunks.chunk_bytes);
    const double elapsed = seconds_of([&] {
        for (const auto& chunk : chunks.compressed) {
            std::size_t produced = 0;
            if (libdeflate_zlib_decompress(decompressor, chunk.data(), chunk.size(), out.data(), out.size(), &produced) !=
                LIBDEFLATE_SUCCESS)
                throw std::runtime_error("inflate failed");
        }
    });
    libdeflate_free_decompressor(decompressor);
    const double bytes = static_cast<double>(chunks.compressed.size() * chunks.chunk_bytes);
    return elapsed * static_cast<double>(std::size_t{1} << 30) / bytes;
}

/// Nanoseconds per read: one dependent chain through a random cycle of `slots`.
double dependent_read_ns(const std::vector<std::uint64_t>& next, std::size_t reads) {
    std::uint64_t position = 0;
    const double elapsed = seconds_of([&] {
        for (std::size_t read = 0; read < reads; ++read) position = next[position];
    });
    if (position == ~std::uint64_t{0}) std::puts("");  // keeps the chain
    return elapsed * 1e9 / static_cast<double>(reads);
}

/// Nanoseconds per read: independent reads at random slots (the addresses from a cheap generator).
double independent_read_ns(const std::vector<std::uint64_t>& table, std::size_t reads) {
    std::uint64_t state = 88172645463325252ULL, sum = 0;
    const std::uint64_t slots = table.size();
    const double elapsed = seconds_of([&] {
        for (std::size_t read = 0; read < reads; ++read) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            sum += table[static_cast<std::size_t>(((state >> 32) * slots) >> 32)];  // slots < 2^32
        }
    });
    if (sum == 42) std::puts("");
    return elapsed * 1e9 / static_cast<double>(reads);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The machine's rates that bound the pipeline's steps"};
    std::string dir = "/tmp";
    int repeats = 5;
    std::size_t touch_mib = 1024, random_mib = 1024;
    int cold_gib = 8, cold_pause = 10;
    app.add_option("--dir", dir, "folder for the page-cache write test (a file of --touch-mib is written and removed)");
    app.add_option("--repeats", repeats, "runs per figure (the median is printed)")->check(CLI::Range(1, 100));
    app.add_option("--touch-mib", touch_mib, "bytes per memory and file test, MiB")->check(CLI::Range(64, 65536));
    app.add_option("--random-mib", random_mib, "table size of the random-read tests, MiB")->check(CLI::Range(1, 16384));
    app.add_option("--cold-gib", cold_gib, "GiB of the cold-memory test (0: skip it)")->check(CLI::Range(0, 64));
    app.add_option("--cold-pause", cold_pause, "seconds before each cold-memory test")->check(CLI::Range(0, 600));
    CLI11_PARSE(app, argc, argv);
    const std::size_t bytes = touch_mib * kMiB;
    const double gib = static_cast<double>(bytes) / static_cast<double>(std::size_t{1} << 30);

    const double first_touch = median_of(repeats, [&] {
        char* block = map_fresh(bytes);
        const double elapsed = seconds_of([&] { std::memset(block, 1, bytes); });
        ::munmap(block, bytes);
        return elapsed / gib;
    });
    char* held = map_fresh(bytes);
    std::memset(held, 1, bytes);
    const double rewrite = median_of(repeats, [&] { return seconds_of([&] { std::memset(held, 2, bytes); }) / gib; });
    ::munmap(held, bytes);
    std::printf("memory      first touch %.3f s/GiB, rewrite of held memory %.3f s/GiB\n", first_touch, rewrite);
    if (cold_gib > 0) {
        for (const bool huge : {false, true}) {
            const std::vector<double> slices = cold_touch(cold_gib, huge, cold_pause);
            std::printf("cold memory %d GiB after %d s, %s, s per GiB slice:", cold_gib, cold_pause,
                        huge ? "MADV_HUGEPAGE" : "4 KiB pages");
            for (const double value : slices) std::printf(" %.2f", value);
            std::printf("\n");
        }
    }

    const double write1 = median_of(repeats, [&] { return page_cache_write(dir, bytes, 1); });
    const double write2 = median_of(repeats, [&] { return page_cache_write(dir, bytes, 2); });
    std::printf("page cache  write() %.3f s/GiB with 1 writer, %.3f s/GiB with 2 (%s)\n", write1, write2, dir.c_str());

    const Chunks chunks = make_chunks(std::min<std::size_t>(bytes, 512 * kMiB));
    std::size_t compressed = 0;
    for (const auto& chunk : chunks.compressed) compressed += chunk.size();
    const double inflate = median_of(repeats, [&] { return inflate_rate(chunks); });
    std::printf("inflate     %.3f s/GiB of output per core (libdeflate, 128 KiB CSR-like chunks, ratio %.2f)\n", inflate,
                static_cast<double>(chunks.compressed.size() * chunks.chunk_bytes) / static_cast<double>(compressed));

    const std::size_t slots = random_mib * kMiB / 8;
    std::vector<std::uint64_t> next(slots);
    {
        // One random cycle through every slot (Sattolo's algorithm).
        std::vector<std::uint64_t> order(slots);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937_64 random(11);
        for (std::size_t index = slots - 1; index > 0; --index)
            std::swap(order[index], order[std::uniform_int_distribution<std::size_t>(0, index - 1)(random)]);
        for (std::size_t index = 0; index < slots; ++index) next[order[index]] = order[(index + 1) % slots];
    }
    const std::size_t reads = 20'000'000;
    const double dependent = median_of(repeats, [&] { return dependent_read_ns(next, reads); });
    const double independent = median_of(repeats, [&] { return independent_read_ns(next, reads); });
    std::printf("random      over %zu MiB: dependent read %.1f ns, independent read %.2f ns (one core)\n", random_mib,
                dependent, independent);
    return 0;
}
