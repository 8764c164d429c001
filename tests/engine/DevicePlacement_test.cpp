// Shards on accelerator devices through EngineConfig::device_provider: the engine
// loads each shard through the provider straight from the file, and falls back to CPU
// shards, saying why, when there is no provider, no usable device or the device runs
// out of memory. Fallback runs give exactly the CPU run's results.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <cmath>
#include <filesystem>
#include <mutex>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/DeviceAccelerator.hpp"
#include "core/backend/DeviceProvider.hpp"
#include "core/engine/Engine.hpp"
#include "core/engine/detail/DevicePlacement.hpp"
#include "core/io/synth.hpp"
#include "core/types/errors.hpp"
#include "gpu/knn_kernels.hpp"
#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/thread_comm.hpp"

namespace fathom {
namespace {

using namespace std::chrono_literals;

const std::string& dataset_path() {
    static const std::string path = [] {
        io::SynthOptions options;
        options.num_cells = 700;
        options.num_genes = 500;
        options.num_cell_types = 3;
        options.seed = 9;
        const auto folder = test::temp_dir("device-placement");
        const std::string file = (folder / "synthetic.h5").string();
        io::write_synthetic(file, options);
        return file;
    }();
    return path;
}

/// Simulated device out-of-memory: the next `count` calls of the in-place primitive
/// `step` on device-like shards throw DeviceOutOfMemory before changing anything, as
/// a full device does (Backend's contract for in-place primitives).
struct OutOfMemoryInjection {
    std::string step;
    std::atomic<int> count{0};
    std::atomic<int> thrown{0};
    void maybe_throw(const char* primitive, int device) {
        if (step != primitive) return;
        int armed = count.load();
        while (armed > 0)
            if (count.compare_exchange_weak(armed, armed - 1)) {
                ++thrown;
                throw DeviceOutOfMemory("cuda:" + std::to_string(device) + ": GPU out of memory (cudaMalloc of 64 MiB)");
            }
    }
};

/// A CPU shard that presents itself as a CUDA shard ("cuda:<device>"), so that the
/// engine treats it as device-resident.
class DeviceLikeBackend final : public Backend {
public:
    DeviceLikeBackend(std::unique_ptr<Backend> inner, int device, std::shared_ptr<OutOfMemoryInjection> injection = {})
        : m_inner(std::move(inner)), m_device(device), m_injection(std::move(injection)) {}
    std::string name() const override { return "cuda:" + std::to_string(m_device); }
    BackendKind kind() const noexcept override { return BackendKind::Cuda; }
    std::int64_t row_begin() const noexcept override { return m_inner->row_begin(); }
    std::int64_t num_rows() const noexcept override { return m_inner->num_rows(); }
    std::int64_t num_genes() const noexcept override { return m_inner->num_genes(); }
    std::int64_t nnz() const noexcept override { return m_inner->nnz(); }
    std::unique_ptr<Backend> clone() const override {
        return std::make_unique<DeviceLikeBackend>(m_inner->clone(), m_device, m_injection);
    }
    std::unique_ptr<Backend> clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const override {
        inject("clone_columns");
        return std::make_unique<DeviceLikeBackend>(m_inner->clone_columns(keep, ctx), m_device, m_injection);
    }
    CsrShard to_host() const override { return m_inner->to_host(); }
    RowStats row_stats(std::span<const std::uint8_t> mask, JobContext& ctx) const override { return m_inner->row_stats(mask, ctx); }
    ColumnStats column_stats(const ColumnStatsRequest& request, JobContext& ctx) const override {
        return m_inner->column_stats(request, ctx);
    }
    GroupColumnStats group_column_stats(std::span<const std::int32_t> labels, int groups, const ColumnStatsRequest& request,
                                        JobContext& ctx) const override {
        return m_inner->group_column_stats(labels, groups, request, ctx);
    }
    std::vector<float> gene_column(std::int32_t gene, JobContext& ctx) const override { return m_inner->gene_column(gene, ctx); }
    GramResult gram(GeneBlock genes, const Standardization& standardization, JobContext& ctx) const override {
        return m_inner->gram(genes, standardization, ctx);
    }
    DenseMatrix<double> project(const ProjectionRequest& request, JobContext& ctx) const override {
        return m_inner->project(request, ctx);
    }
    void scale_rows(std::span<const double> factors, JobContext& ctx) override {
        inject("scale_rows");
        m_inner->scale_rows(factors, ctx);
    }
    void log1p(JobContext& ctx) override {
        inject("log1p");
        m_inner->log1p(ctx);
    }
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) override {
        inject("subset_columns");
        m_inner->subset_columns(keep, ctx);
    }
    void subset_rows(std::span<const std::uint8_t> keep, std::int64_t begin, JobContext& ctx) override {
        inject("subset_rows");
        m_inner->subset_rows(keep, begin, ctx);
    }

private:
    void inject(const char* primitive) const {
        if (m_injection) m_injection->maybe_throw(primitive, m_device);
    }
    std::unique_ptr<Backend> m_inner;
    int m_device = 0;
    std::shared_ptr<OutOfMemoryInjection> m_injection;
};

/// A stand-in accelerator: "devices" 0 and 1, shards held by CPU backends built from
/// the blocks the reader returns; records what it was asked. `out_of_memory` makes
/// every load fail as a full device does.
class FakeProvider final : public DeviceProvider {
public:
    explicit FakeProvider(bool out_of_memory = false, bool device_like = false,
                          std::shared_ptr<OutOfMemoryInjection> injection = {})
        : m_out_of_memory(out_of_memory), m_device_like(device_like), m_injection(std::move(injection)) {}
    DeviceResolution resolve(const DeviceSpec& spec) const override {
        if (spec.cuda_devices.empty()) return {{0, 1}, {}};
        for (int device : spec.cuda_devices)
            if (device > 1) return {{}, "cuda:" + std::to_string(device) + " does not exist (2 devices)"};
        return {spec.cuda_devices, {}};
    }
    std::unique_ptr<Backend> load(const RowBlockReader& read, const RowRange& range,
                                  std::span<const std::int64_t> global_row_offsets, std::int64_t num_genes, int device,
                                  JobContext&) const override {
        if (m_out_of_memory) throw DeviceOutOfMemory("cuda:" + std::to_string(device) + ": GPU out of memory (cudaMalloc of 9000 MiB)");
        CsrShard shard;
        shard.row_begin = range.begin;
        shard.num_genes = num_genes;
        // Two blocks, as a device loader reads through its staging buffer.
        const std::int64_t middle = range.begin + range.size() / 2;
        for (const auto& [begin, end] : {std::pair{range.begin, middle}, std::pair{middle, range.end}}) {
            if (begin == end) continue;
            const CsrShard block = read(begin, end);
            EXPECT_EQ(block.row_begin, begin);
            const std::int64_t base = shard.row_offsets.back();
            for (std::size_t row = 1; row < block.row_offsets.size(); ++row) shard.row_offsets.push_back(base + block.row_offsets[row]);
            shard.gene_indices.insert(shard.gene_indices.end(), block.gene_indices.begin(), block.gene_indices.end());
            shard.values.insert(shard.values.end(), block.values.begin(), block.values.end());
        }
        EXPECT_EQ(shard.nnz(), global_row_offsets[static_cast<std::size_t>(range.end)] - global_row_offsets[static_cast<std::size_t>(range.begin)]);
        std::lock_guard lock(m_mutex);
        m_loaded.push_back({device, range});
        auto backend = std::make_unique<CpuBackend>(std::move(shard), device);
        if (m_device_like) return std::make_unique<DeviceLikeBackend>(std::move(backend), device, m_injection);
        return backend;
    }
    /// The device search's host loop (gpu/knn_kernels.hpp), recording the devices.
    bool exact_knn(const DenseMatrix<float>& points, int num_dims, int num_neighbors, std::span<const int> devices,
                   std::vector<std::int32_t>& indices, std::vector<float>& distances, JobContext&) const override {
        std::vector<float> packed;
        for (std::int64_t row = 0; row < points.rows(); ++row)
            packed.insert(packed.end(), points.row(row).begin(), points.row(row).begin() + num_dims);
        indices.assign(static_cast<std::size_t>(points.rows() * num_neighbors), 0);
        distances.assign(indices.size(), 0.0f);
        gpu::kernels::exact_knn_host(packed.data(), points.rows(), num_dims, num_neighbors, 0, points.rows(), indices.data(),
                                     distances.data());
        std::lock_guard lock(m_mutex);
        m_knn_devices.assign(devices.begin(), devices.end());
        return true;
    }
    /// Records the call and leaves the embedding as it is (the initialisation).
    bool umap_sgd(const UmapSgdProblem& problem, float*, int publish_every, const std::function<void(int)>& publish, int device,
                  JobContext&) const override {
        std::lock_guard lock(m_mutex);
        m_umap = {problem.num_vertices, publish_every, device};
        publish(publish_every);
        return true;
    }
    std::vector<std::int64_t> umap_call() const {
        std::lock_guard lock(m_mutex);
        return m_umap;
    }
    std::vector<int> knn_devices() const {
        std::lock_guard lock(m_mutex);
        return m_knn_devices;
    }
    std::vector<std::pair<int, RowRange>> loaded() const {
        std::lock_guard lock(m_mutex);
        return m_loaded;
    }

private:
    bool m_out_of_memory = false;
    bool m_device_like = false;
    std::shared_ptr<OutOfMemoryInjection> m_injection;
    mutable std::mutex m_mutex;
    mutable std::vector<int> m_knn_devices;
    mutable std::vector<std::int64_t> m_umap;
    mutable std::vector<std::pair<int, RowRange>> m_loaded;
};

struct RunResult {
    std::vector<std::int32_t> leiden;  ///< Leiden codes (with_graph): a function of the kNN graph
    std::string note;
    std::vector<std::string> devices;
    std::vector<float> pca;
};

RunResult run(const std::string& devices, std::shared_ptr<DeviceProvider> provider, bool with_graph = false) {
    EngineConfig config;
    config.devices = devices;
    config.device_provider = std::move(provider);
    Engine engine(config);
    auto opened = engine.open(dataset_path());
    EXPECT_TRUE(opened.wait_for(120s));
    EXPECT_EQ(opened.status().state, JobState::Succeeded) << opened.status().message;
    PipelineSettings settings;
    settings.num_top_genes = 150;
    settings.pca.num_components = 10;
    settings.run_neighbors = with_graph;
    settings.run_umap = false;
    settings.run_leiden = with_graph;
    settings.run_markers = false;
    auto ran = engine.run(settings);
    EXPECT_TRUE(ran.wait_for(120s));
    EXPECT_EQ(ran.status().state, JobState::Succeeded) << ran.status().message;
    const auto snapshot = engine.snapshot();
    RunResult result{{}, snapshot->dataset->device_note, snapshot->dataset->devices, snapshot->obsm.at("X_pca")->values()};
    if (with_graph) {
        const Column* leiden = snapshot->obs->find("leiden");
        EXPECT_NE(leiden, nullptr);
        if (leiden != nullptr) result.leiden = std::get<CategoricalColumn>(leiden->data).codes;
    }
    return result;
}

TEST(DevicePlacement, CpuDevicesNeedNoProviderAndLeaveNoNote) {
    const auto cpu = run("cpu:2", nullptr);
    EXPECT_TRUE(cpu.note.empty()) << cpu.note;
    EXPECT_EQ(cpu.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
}

TEST(DevicePlacement, WithoutAProviderCudaRunsOnTheCpuAndSaysSo) {
    const auto cpu = run("cpu:2", nullptr);
    const auto cuda = run("cuda:0,1", nullptr);
    EXPECT_EQ(cuda.note, "--devices cuda:0,1: this program has no CUDA backend; ran on the CPU instead (2 shards)");
    EXPECT_EQ(cuda.devices, cpu.devices);
    EXPECT_EQ(cuda.pca, cpu.pca) << "the fallback is the CPU run itself";
}

TEST(DevicePlacement, NoUsableDeviceFallsBackWithTheProvidersReason) {
    const auto cpu = run("cpu:1", nullptr);
    const auto cuda = run("cuda:5", std::make_shared<FakeProvider>());
    EXPECT_EQ(cuda.note, "--devices cuda:5: cuda:5 does not exist (2 devices); ran on the CPU instead (1 shard)");
    EXPECT_EQ(cuda.pca, cpu.pca);
}

TEST(DevicePlacement, DeviceShardsAreLoadedThroughTheProviderInRowOrder) {
    const auto cpu = run("cpu:2", nullptr);
    auto provider = std::make_shared<FakeProvider>();
    const auto placed = run("cuda:1,0", provider);
    EXPECT_TRUE(placed.note.empty()) << placed.note;
    const auto loaded = provider->loaded();
    ASSERT_EQ(loaded.size(), 2u);
    EXPECT_EQ(loaded[0].first, 1) << "shard 0 on the first listed device";
    EXPECT_EQ(loaded[1].first, 0);
    EXPECT_EQ(loaded[0].second.begin, 0);
    EXPECT_EQ(loaded[0].second.end, loaded[1].second.begin);
    EXPECT_EQ(loaded[1].second.end, 700);
    EXPECT_EQ(placed.devices, (std::vector<std::string>{"cpu:1", "cpu:0"}));
    // The same split by non-zeros as cpu:2, so the same partials in the same order.
    EXPECT_EQ(placed.pca, cpu.pca);
}

// The ranks on one node split its GPUs into contiguous, disjoint parts and never share one.
TEST(DevicePlacement, RanksOnANodeTakeDisjointPartsOfItsGpus) {
    using detail::node_rank_devices;
    EXPECT_EQ(node_rank_devices({0, 1, 2, 3}, 0, 2, "n1"), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_rank_devices({0, 1, 2, 3}, 1, 2, "n1"), (std::vector<int>{2, 3}));
    EXPECT_EQ(node_rank_devices({0, 1, 2}, 0, 2, "n1"), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_rank_devices({0, 1, 2}, 1, 2, "n1"), (std::vector<int>{2}));
    EXPECT_EQ(node_rank_devices({5, 7}, 1, 2, "n1"), (std::vector<int>{7}));
    for (int count = 1; count <= 9; ++count)
        for (int ranks = 1; ranks <= count; ++ranks) {
            std::vector<int> devices(static_cast<std::size_t>(count));
            std::iota(devices.begin(), devices.end(), 0);
            std::vector<int> joined;
            for (int rank = 0; rank < ranks; ++rank) {
                const auto part = node_rank_devices(devices, rank, ranks, "n1");
                EXPECT_FALSE(part.empty());
                joined.insert(joined.end(), part.begin(), part.end());
            }
            EXPECT_EQ(joined, devices) << count << " GPUs, " << ranks << " ranks";
        }
    try {
        node_rank_devices({0, 1}, 2, 3, "gpu-node-7");
        ADD_FAILURE() << "three ranks on two GPUs must be refused";
    } catch (const std::invalid_argument& error) {
        EXPECT_EQ(std::string(error.what()),
                  "--devices cuda: 3 ranks share node gpu-node-7 and its 2 GPUs; a GPU is never shared: start at most 2 "
                  "ranks per node (e.g. mpirun --map-by ppr:2:node) or use --devices cpu:N");
    }
}

// Over ranks with --devices cuda, each rank loads its rows onto its own GPUs: the global
// cut is that of one process with all the ranks' GPUs, each rank reads only its run of it.
TEST(DevicePlacement, EachRankPlacesItsShardsOnItsOwnGpus) {
    const io::OpenedDataset whole = io::open_dataset(dataset_path());
    const std::vector<std::int64_t> offsets = whole.source->row_offsets();
    auto provider = std::make_shared<FakeProvider>();
    std::vector<std::vector<std::string>> names(2);
    std::vector<std::string> notes(2);
    std::vector<int> shards(2);
    test::run_ranks(2, [&](Comm& comm) {
        const auto rank = static_cast<std::size_t>(comm.rank());
        io::OpenedDataset opened = io::open_dataset(dataset_path());
        JobContext ctx;
        const std::shared_ptr<Comm> shared(std::shared_ptr<Comm>{}, &comm);
        ShardSet set = detail::load_rank_shards(*opened.source, offsets, DeviceSpec::parse("cuda"), provider.get(), shared,
                                                ctx, notes[rank]);
        shards[rank] = set.num_shards();
        for (int index = set.first_local_shard(); index < set.first_local_shard() + set.num_local_shards(); ++index)
            names[rank].push_back(set.shard(index).name());
    });
    EXPECT_EQ(names[0], (std::vector<std::string>{"cpu:0"})) << "rank 0: the first GPU (the fake's backends say cpu:<device>)";
    EXPECT_EQ(names[1], (std::vector<std::string>{"cpu:1"}));
    EXPECT_EQ(shards[0], 2);
    EXPECT_EQ(notes[0], "");
    auto loaded = provider->loaded();
    std::sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto layout = plan_row_ranges(offsets, 2);
    ASSERT_EQ(loaded.size(), 2u);
    EXPECT_EQ(loaded[0].second.begin, layout[0].begin);
    EXPECT_EQ(loaded[0].second.end, layout[0].end);
    EXPECT_EQ(loaded[1].second.begin, layout[1].begin);
    EXPECT_EQ(loaded[1].second.end, layout[1].end);

    // Three ranks on the fake's two GPUs are refused (every rank of the node alike);
    // without a provider every rank falls back to the CPU and says so.
    test::run_ranks(3, [&](Comm& comm) {
        io::OpenedDataset opened = io::open_dataset(dataset_path());
        JobContext ctx;
        std::string note;
        const std::shared_ptr<Comm> shared(std::shared_ptr<Comm>{}, &comm);
        EXPECT_THROW(detail::load_rank_shards(*opened.source, offsets, DeviceSpec::parse("cuda"), provider.get(), shared,
                                              ctx, note),
                     std::invalid_argument);
        ShardSet set = detail::load_rank_shards(*opened.source, offsets, DeviceSpec::parse("cuda:0,1"), nullptr, shared,
                                                ctx, note);
        EXPECT_EQ(note, "--devices cuda:0,1: this program has no CUDA backend; ran on the CPU instead (2 shards)");
        EXPECT_EQ(set.num_shards(), 6);
        EXPECT_EQ(set.first_local_shard(), 2 * comm.rank());
    });
}

TEST(DevicePlacement, DeviceShardsSendTheExactKnnToTheDevicesInShardOrder) {
    auto provider = std::make_shared<FakeProvider>(false, true);
    const auto placed = run("cuda:1,0", provider, true);
    EXPECT_EQ(placed.devices, (std::vector<std::string>{"cuda:1", "cuda:0"}));
    EXPECT_EQ(provider->knn_devices(), (std::vector<int>{1, 0}));
    const auto cpu = run("cpu:2", nullptr, true);
    EXPECT_EQ(placed.pca, cpu.pca);
    ASSERT_EQ(placed.leiden.size(), 700u);
    EXPECT_EQ(placed.leiden, cpu.leiden) << "the device search gives the CPU's exact graph";
}

TEST(DevicePlacement, DeviceShardsSendUmapToTheFirstDevice) {
    auto provider = std::make_shared<FakeProvider>(false, true);
    EngineConfig config;
    config.devices = "cuda:1,0";
    config.device_provider = provider;
    Engine engine(config);
    auto opened = engine.open(dataset_path());
    ASSERT_TRUE(opened.wait_for(120s));
    PipelineSettings settings;
    settings.num_top_genes = 150;
    settings.pca.num_components = 10;
    settings.run_umap = true;
    settings.run_leiden = false;
    settings.run_markers = false;
    auto ran = engine.run(settings);
    ASSERT_TRUE(ran.wait_for(120s));
    ASSERT_EQ(ran.status().state, JobState::Succeeded) << ran.status().message;
    EXPECT_EQ(provider->umap_call(), (std::vector<std::int64_t>{700, 10, 1})) << "700 cells, a frame every 10 epochs, cuda:1";
    EXPECT_EQ(engine.snapshot()->obsm.at("X_umap")->rows(), 700);
}

TEST(DevicePlacement, OutOfMemoryWhileLoadingFallsBackToTheCpuAndSaysSo) {
    const auto cpu = run("cpu:2", nullptr);
    const auto cuda = run("cuda", std::make_shared<FakeProvider>(true));
    EXPECT_NE(cuda.note.find("GPU out of memory"), std::string::npos) << cuda.note;
    EXPECT_NE(cuda.note.find("ran on the CPU instead (1 shard)"), std::string::npos) << cuda.note;
    EXPECT_EQ(cuda.devices, (std::vector<std::string>{"cpu:0"}));
    const auto one = run("cpu:1", nullptr);
    EXPECT_EQ(cuda.pca, one.pca);
    EXPECT_EQ(cpu.devices.size(), 2u);
}

// ---- out of memory in an in-place step: that shard moves to the CPU ----

std::shared_ptr<OutOfMemoryInjection> injection_of(const std::string& step, int count) {
    auto injection = std::make_shared<OutOfMemoryInjection>();
    injection->step = step;
    injection->count = count;
    return injection;
}

TEST(DevicePlacement, OutOfMemoryInAnInPlaceShardStepMovesThatShardToTheCpu) {
    // Two device-like shards; the first scale_rows call to reach a shard fails.
    CsrShard first, second;
    first.num_genes = second.num_genes = 3;
    first.row_offsets = {0, 2, 3};
    first.gene_indices = {0, 2, 1};
    first.values = {1.0f, 2.0f, 3.0f};
    second.row_begin = 2;
    second.row_offsets = {0, 1};
    second.gene_indices = {2};
    second.values = {5.0f};
    const auto injection = injection_of("scale_rows", 1);
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<DeviceLikeBackend>(std::make_unique<CpuBackend>(first, 0), 0, injection));
    backends.push_back(std::make_unique<DeviceLikeBackend>(std::make_unique<CpuBackend>(second, 1), 1, injection));
    ShardSet shards(std::move(backends));
    JobContext ctx;
    const std::vector<double> factors{2.0, 0.5, 10.0};
    shards.scale_rows(factors, ctx);
    EXPECT_EQ(injection->thrown.load(), 1);
    ASSERT_EQ(shards.device_notes().size(), 1u);
    const std::string& note = shards.device_notes()[0];
    const int moved = note.rfind("cuda:0", 0) == 0 ? 0 : 1;
    EXPECT_EQ(shards.shard(moved).kind(), BackendKind::Cpu) << note;
    EXPECT_EQ(shards.shard(moved).name(), "cpu:" + std::to_string(moved));
    EXPECT_EQ(shards.shard(1 - moved).kind(), BackendKind::Cuda) << "the other shard stays on its device";
    EXPECT_EQ(note, "cuda:" + std::to_string(moved) + ": GPU out of memory (cudaMalloc of 64 MiB); scale_rows and the later steps of cuda:" +
                        std::to_string(moved) + " ran on the CPU (cpu:" + std::to_string(moved) + ")");
    EXPECT_NE(ctx.progress().message.find("scale_rows and the later steps"), std::string::npos) << ctx.progress().message;
    // Scaled exactly once, on whichever backend ran it.
    const ShardedCsr host = shards.to_host();
    EXPECT_EQ(host.shard(0).values, (std::vector<float>{2.0f, 4.0f, 1.5f}));
    EXPECT_EQ(host.shard(1).values, (std::vector<float>{50.0f}));
    // Later steps of the moved shard run on the CPU; copies keep the note.
    shards.log1p(ctx);
    const ShardSet copy = shards.clone();
    EXPECT_EQ(copy.device_notes(), shards.device_notes());
    EXPECT_EQ(copy.shard(moved).kind(), BackendKind::Cpu);
    EXPECT_FLOAT_EQ(copy.to_host().shard(1).values[0], std::log1p(50.0f));
    // The other shard runs out of memory in a row subset: both are on the CPU then.
    injection->step = "subset_rows";
    injection->count = 1;
    const std::vector<std::uint8_t> keep{1, 0, 1};
    shards.subset_rows(keep, ctx);
    EXPECT_EQ(injection->thrown.load(), 2);
    ASSERT_EQ(shards.device_notes().size(), 2u);
    EXPECT_NE(shards.device_notes()[1].find("subset_rows and the later steps of cuda:" + std::to_string(1 - moved)),
              std::string::npos) << shards.device_notes()[1];
    EXPECT_EQ(shards.shard(0).kind(), BackendKind::Cpu);
    EXPECT_EQ(shards.shard(1).kind(), BackendKind::Cpu);
    EXPECT_EQ(shards.num_cells(), 2);
    EXPECT_EQ(shards.shard(1).row_begin(), 1);
    EXPECT_FLOAT_EQ(shards.to_host().shard(1).values[0], std::log1p(50.0f));
}

TEST(DevicePlacement, OutOfMemoryInAnyInPlacePipelineStepGivesTheCpuResultsAndANote) {
    const auto cpu = run("cpu:2", nullptr);
    // normalize_total, log1p, and the copy of the HVG columns (clone_columns).
    for (const std::string step : {"scale_rows", "log1p", "clone_columns"}) {
        SCOPED_TRACE(step);
        const auto injection = injection_of(step, 1);
        const auto placed = run("cuda:1,0", std::make_shared<FakeProvider>(false, true, injection));
        EXPECT_EQ(injection->thrown.load(), 1) << "the pipeline calls " << step << " on the device shards";
        const std::string what = step == "clone_columns" ? "the copy of the kept genes of cuda:" : step + " and the later steps of cuda:";
        EXPECT_NE(placed.note.find("GPU out of memory (cudaMalloc of 64 MiB); " + what), std::string::npos) << placed.note;
        EXPECT_NE(placed.note.find("ran on the CPU (cpu:"), std::string::npos) << placed.note;
        EXPECT_EQ(placed.devices, (std::vector<std::string>{"cuda:1", "cuda:0"})) << "the raw shards stay on their devices";
        EXPECT_EQ(placed.pca, cpu.pca) << "the fallback shard computes exactly what the CPU run does";
    }
}

// ---- PCA's eigensolver and the spectral product on the shards' first device ----

/// Records the device calls of the placement hooks; `fail` makes them throw as a device
/// does (DeviceError from the solver, DeviceOutOfMemory from the upload).
class SolverProvider final : public DeviceProvider {
public:
    bool fail = false;
    mutable std::vector<int> eigen_devices, sparse_devices, umap_devices, knn_devices;
    DeviceResolution resolve(const DeviceSpec&) const override { return {{0, 1}, {}}; }
    std::unique_ptr<Backend> load(const RowBlockReader&, const RowRange&, std::span<const std::int64_t>, std::int64_t, int,
                                  JobContext&) const override {
        throw DeviceError("not used");
    }
    bool symmetric_eigenpairs(const DenseMatrix<double>& matrix, int count, int device, std::vector<double>& values,
                              std::vector<double>& vectors, JobContext&) const override {
        eigen_devices.push_back(device);
        if (fail) throw DeviceError("cuda:1: cusolverDnDsyevdx failed: info 3, 0 of 2 eigenpairs");
        values.assign(static_cast<std::size_t>(count), 1.0);
        vectors.assign(static_cast<std::size_t>(count * matrix.rows()), 0.0);
        return true;
    }
    /// Declines, or runs out of memory.
    bool exact_knn(const DenseMatrix<float>&, int, int, std::span<const int> devices, std::vector<std::int32_t>&,
                   std::vector<float>&, JobContext&) const override {
        knn_devices.assign(devices.begin(), devices.end());
        if (fail) throw DeviceOutOfMemory("cuda:1: GPU out of memory (cudaMalloc of 5 MiB)");
        return false;
    }
    /// Declines, or runs out of memory.
    bool umap_sgd(const UmapSgdProblem&, float*, int, const std::function<void(int)>&, int device, JobContext&) const override {
        umap_devices.push_back(device);
        if (fail) throw DeviceOutOfMemory("cuda:1: GPU out of memory (cudaMalloc of 7 MiB)");
        return false;
    }
    /// y = 2 x, whatever the matrix.
    struct Doubling final : DeviceSparseMatrix {
        std::int64_t rows = 0;
        void multiply(const double* x, double* y, int count) override {
            for (std::int64_t index = 0; index < rows * count; ++index) y[index] = 2.0 * x[index];
        }
    };
    std::unique_ptr<DeviceSparseMatrix> upload_sparse_matrix(std::span<const std::int64_t> offsets, std::span<const std::int32_t>,
                                                             std::span<const double>, int device) const override {
        sparse_devices.push_back(device);
        if (fail) throw DeviceOutOfMemory("cuda:1: GPU out of memory (cudaMalloc of 3 MiB)");
        auto matrix = std::make_unique<Doubling>();
        matrix->rows = static_cast<std::int64_t>(offsets.size()) - 1;
        return matrix;
    }
};

/// Two device-like shards ("cuda:1", "cuda:0") of one empty row each, `genes` wide.
ShardSet device_like_shards(std::int64_t genes, bool device_like = true) {
    std::vector<std::unique_ptr<Backend>> backends;
    for (int shard = 0; shard < 2; ++shard) {
        CsrShard rows;
        rows.row_begin = shard;
        rows.num_genes = genes;
        rows.row_offsets = {0, 0};
        auto cpu = std::make_unique<CpuBackend>(std::move(rows), shard);
        if (device_like) backends.push_back(std::make_unique<DeviceLikeBackend>(std::move(cpu), 1 - shard));
        else backends.push_back(std::move(cpu));
    }
    return ShardSet(std::move(backends));
}

TEST(DevicePlacement, TheShardsDevicesMakeTheAcceleratorInShardOrder) {
    SolverProvider provider;
    EXPECT_FALSE(detail::device_accelerator(nullptr, device_like_shards(10))) << "no provider";
    EXPECT_FALSE(detail::device_accelerator(&provider, device_like_shards(10, false))) << "CPU shards";
    const auto accelerator = detail::device_accelerator(&provider, device_like_shards(10));
    ASSERT_TRUE(accelerator);
    EXPECT_EQ(accelerator->name(), "cuda:1,0");
}

TEST(DevicePlacement, KnnAndUmapDeclineWhenTheDeviceRunsOutOfMemory) {
    SolverProvider provider;
    provider.fail = true;
    const auto accelerator = detail::device_accelerator(&provider, device_like_shards(10));
    ASSERT_TRUE(accelerator);
    JobContext ctx;
    const DenseMatrix<float> points(6, 2, 1.0f);
    std::vector<std::int32_t> indices;
    std::vector<float> distances;
    EXPECT_FALSE(accelerator->exact_knn(points, 2, 3, indices, distances, ctx));
    EXPECT_EQ(provider.knn_devices, (std::vector<int>{1, 0})) << "every shard's device, in shard order";
    EXPECT_EQ(ctx.progress().message, "cuda:1: GPU out of memory (cudaMalloc of 5 MiB); kNN runs on the CPU instead");
    const std::vector<std::int64_t> offsets{0, 1, 2};
    const std::vector<std::int32_t> tail{1, 0};
    const std::vector<double> schedule{1.0, 1.0};
    UmapSgdProblem problem;
    problem.num_vertices = 2;
    problem.offsets = offsets;
    problem.tail = tail;
    problem.epochs_per_sample = schedule;
    problem.epochs_per_negative_sample = schedule;
    DenseMatrix<float> embedding(2, 2);
    EXPECT_FALSE(accelerator->umap_sgd(problem, embedding, 10, [](int) {}, ctx));
    EXPECT_EQ(provider.umap_devices, (std::vector<int>{1})) << "the first shard's device";
    EXPECT_EQ(ctx.progress().message, "cuda:1: GPU out of memory (cudaMalloc of 7 MiB); UMAP runs on the CPU instead");
}

TEST(DevicePlacement, PcaEigensolverRunsOnTheFirstDeviceForLargeCovariances) {
    SolverProvider provider;
    const auto accelerator = detail::device_accelerator(&provider, device_like_shards(10));
    ASSERT_TRUE(accelerator);
    JobContext ctx;
    std::vector<double> values, vectors;
    const std::int64_t large = DeviceAccelerator::kDefaultMinEigensolverSize;
    EXPECT_FALSE(accelerator->symmetric_eigenpairs(DenseMatrix<double>(large - 1, large - 1, 0.0), 2, values, vectors, ctx))
        << "small covariances stay on the host";
    EXPECT_TRUE(provider.eigen_devices.empty());
    EXPECT_TRUE(accelerator->symmetric_eigenpairs(DenseMatrix<double>(large, large, 0.0), 2, values, vectors, ctx));
    EXPECT_EQ(provider.eigen_devices, (std::vector<int>{1})) << "the first shard's device";
    EXPECT_EQ(values.size(), 2u);
    provider.fail = true;
    EXPECT_FALSE(accelerator->symmetric_eigenpairs(DenseMatrix<double>(large, large, 0.0), 2, values, vectors, ctx))
        << "a solver failure declines";
    EXPECT_EQ(ctx.progress().message,
              "cuda:1: cusolverDnDsyevdx failed: info 3, 0 of 2 eigenpairs; the PCA eigendecomposition runs on the CPU instead");
}

TEST(DevicePlacement, SpectralProductRunsOnTheFirstDeviceAndDeclinesWhenItDoesNotFit) {
    SolverProvider provider;
    const auto accelerator = detail::device_accelerator(&provider, device_like_shards(10));
    ASSERT_TRUE(accelerator);
    const std::vector<std::int64_t> offsets{0, 1, 2};
    const std::vector<std::int32_t> columns{1, 0};
    const std::vector<double> values{0.5, 0.5};
    JobContext ctx;
    const auto product = accelerator->upload_sparse_matrix(offsets, columns, values, ctx);
    ASSERT_TRUE(product);
    const double x[2] = {3.0, -1.0};
    double y[2] = {0.0, 0.0};
    product->multiply(x, y, 1);
    EXPECT_EQ(y[0], 6.0) << "the provider's product";
    EXPECT_EQ(y[1], -2.0);
    EXPECT_EQ(provider.sparse_devices, (std::vector<int>{1}));
    provider.fail = true;
    EXPECT_FALSE(accelerator->upload_sparse_matrix(offsets, columns, values, ctx)) << "out of memory declines";
    EXPECT_EQ(ctx.progress().message,
              "cuda:1: GPU out of memory (cudaMalloc of 3 MiB); the spectral initialisation runs on the CPU instead");
}

}  // namespace
}  // namespace fathom
