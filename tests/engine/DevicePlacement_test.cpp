// Shards on accelerator devices through EngineConfig::device_provider: the engine
// loads each shard through the provider straight from the file, and falls back to CPU
// shards, saying why, when there is no provider, no usable device or the device runs
// out of memory. Fallback runs give exactly the CPU run's results.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include "core/backend/CpuBackend.hpp"
#include "core/backend/DeviceProvider.hpp"
#include "core/engine/Engine.hpp"
#include "core/io/synth.hpp"
#include "core/types/errors.hpp"
#include "gpu/knn_kernels.hpp"
#include "tests/support/paths.hpp"

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

/// A CPU shard that presents itself as a CUDA shard ("cuda:<device>"), so that the
/// engine treats it as device-resident.
class DeviceLikeBackend final : public Backend {
public:
    DeviceLikeBackend(std::unique_ptr<Backend> inner, int device) : m_inner(std::move(inner)), m_device(device) {}
    std::string name() const override { return "cuda:" + std::to_string(m_device); }
    BackendKind kind() const noexcept override { return BackendKind::Cuda; }
    std::int64_t row_begin() const noexcept override { return m_inner->row_begin(); }
    std::int64_t num_rows() const noexcept override { return m_inner->num_rows(); }
    std::int64_t num_genes() const noexcept override { return m_inner->num_genes(); }
    std::int64_t nnz() const noexcept override { return m_inner->nnz(); }
    std::unique_ptr<Backend> clone() const override { return std::make_unique<DeviceLikeBackend>(m_inner->clone(), m_device); }
    std::unique_ptr<Backend> clone_columns(std::span<const std::uint8_t> keep, JobContext& ctx) const override {
        return std::make_unique<DeviceLikeBackend>(m_inner->clone_columns(keep, ctx), m_device);
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
    void scale_rows(std::span<const double> factors, JobContext& ctx) override { m_inner->scale_rows(factors, ctx); }
    void log1p(JobContext& ctx) override { m_inner->log1p(ctx); }
    void subset_columns(std::span<const std::uint8_t> keep, JobContext& ctx) override { m_inner->subset_columns(keep, ctx); }
    void subset_rows(std::span<const std::uint8_t> keep, std::int64_t begin, JobContext& ctx) override {
        m_inner->subset_rows(keep, begin, ctx);
    }

private:
    std::unique_ptr<Backend> m_inner;
    int m_device = 0;
};

/// A stand-in accelerator: "devices" 0 and 1, shards held by CPU backends built from
/// the blocks the reader returns; records what it was asked. `out_of_memory` makes
/// every load fail as a full device does.
class FakeProvider final : public DeviceProvider {
public:
    explicit FakeProvider(bool out_of_memory = false, bool device_like = false)
        : m_out_of_memory(out_of_memory), m_device_like(device_like) {}
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
        if (m_device_like) return std::make_unique<DeviceLikeBackend>(std::move(backend), device);
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
    settings.num_pcs = 10;
    settings.run_neighbors = with_graph;
    settings.run_umap = false;
    settings.run_leiden = with_graph;
    settings.markers.clear();
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
    settings.num_pcs = 10;
    settings.run_umap = true;
    settings.run_leiden = false;
    settings.markers.clear();
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

}  // namespace
}  // namespace fathom
