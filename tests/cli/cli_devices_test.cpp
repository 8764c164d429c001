// fathom-cli run --devices cuda:...: without a usable CUDA device the run falls back to
// the CPU, says so on stderr and in the report, and writes exactly the CPU run's
// results; with a device the results agree with the CPU run within the backend
// tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/RowSource.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;

struct CliRun {
    test::CommandResult command;
    nlohmann::json report;
    DenseMatrix<float> pca;
};

CliRun run_on(const std::string& input, const std::string& devices, const std::filesystem::path& folder) {
    const auto out = (folder / ("out_" + devices.substr(0, 4) + ".h5ad")).string();
    const auto report = (folder / ("report_" + devices.substr(0, 4) + ".json")).string();
    CliRun result;
    result.command = run_command(cli + " run " + shell_quote(input) + " --recipe zheng17 --n-top-genes 200 --n-pcs 15 --devices " +
                                 devices + " --no-matrix --out " + shell_quote(out) + " --report " + shell_quote(report) + " 2>&1");
    EXPECT_EQ(result.command.exit_code, 0) << result.command.output;
    std::ifstream stream(report);
    if (stream) result.report = nlohmann::json::parse(stream);
    if (std::filesystem::exists(out)) result.pca = io::open_dataset(out).meta.obsm.at("X_pca");
    return result;
}

TEST(CliDevices, CudaWithoutADeviceRunsOnTheCpuSaysSoAndMatchesTheCpuRun) {
    const auto folder = test::temp_dir("cli-devices");
    const auto input = (folder / "synth.h5").string();
    const auto made = run_command(cli + " synth --cells 1200 --genes 1500 --seed 4 --quiet --out " + shell_quote(input) + " 2>&1");
    ASSERT_EQ(made.exit_code, 0) << made.output;
    const auto devices = run_command(cli + " devices 2>&1");
    ASSERT_EQ(devices.exit_code, 0) << devices.output;
    const bool has_device = devices.output.find("none usable") == std::string::npos;

    const auto cpu = run_on(input, "cpu:1", folder);
    const auto cuda = run_on(input, "cuda:0", folder);
    ASSERT_EQ(cpu.pca.rows(), 1200);
    ASSERT_EQ(cuda.pca.rows(), 1200);
    if (!has_device) {
        EXPECT_NE(cuda.command.output.find("fathom-cli: --devices cuda:0: "), std::string::npos) << cuda.command.output;
        EXPECT_NE(cuda.command.output.find("; ran on the CPU instead (1 shard)"), std::string::npos) << cuda.command.output;
        ASSERT_TRUE(cuda.report.contains("device_note"));
        EXPECT_NE(cuda.report["device_note"].get<std::string>().find("ran on the CPU instead"), std::string::npos);
        EXPECT_EQ(cuda.report["shards"], nlohmann::json::array({"cpu:0"}));
        EXPECT_EQ(cuda.pca.values(), cpu.pca.values()) << "the fallback is the CPU run itself";
    } else {
        // On a device: the same scores up to each component's sign, within rounding.
        for (std::int64_t component = 0; component < cpu.pca.cols(); ++component) {
            double dot = 0.0;
            for (std::int64_t cell = 0; cell < cpu.pca.rows(); ++cell) dot += double(cpu.pca(cell, component)) * cuda.pca(cell, component);
            const double sign = dot < 0 ? -1.0 : 1.0;
            double worst = 0.0, scale = 0.0;
            for (std::int64_t cell = 0; cell < cpu.pca.rows(); ++cell) {
                worst = std::max(worst, std::abs(cpu.pca(cell, component) - sign * cuda.pca(cell, component)));
                scale = std::max(scale, double(std::abs(cpu.pca(cell, component))));
            }
            EXPECT_LE(worst, 1e-3 * scale) << "component " << component;
        }
    }
    EXPECT_FALSE(cpu.report.contains("device_note"));
}

}  // namespace
}  // namespace fathom
