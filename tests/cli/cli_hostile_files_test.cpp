// fathom-cli on hostile inputs: exit codes and messages, and no temporary output left
// behind when a convert is stopped by a signal.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/paths.hpp"
#include "tests/support/python.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

const std::string cli = FATHOM_CLI_PATH;
constexpr int kInputError = 3;

test::CommandResult fathom(const std::string& args) { return run_command(cli + " " + args + " 2>&1"); }

fs::path write_text(const std::string& label, const std::string& name, const std::string& text) {
    const auto path = test::temp_dir(label) / name;
    std::ofstream(path) << text;
    return path;
}

TEST(CliHostileFiles, EmptyMatricesExitWithTheInputErrorCode) {
    for (const auto& [name, size, expected] :
         {std::tuple{"zero-genes.mtx", "3 0 0", "3 cells x 0 genes"}, std::tuple{"zero-cells.mtx", "0 3 0", "0 cells x 3 genes"}}) {
        const auto path = write_text("cli-empty", name, std::string("%%MatrixMarket matrix coordinate integer general\n") +
                                                            size + "\n");
        const auto out = path.parent_path() / "out.h5ad";
        for (const std::string& command : {"info " + shell_quote(path.string()),
                                          "convert " + shell_quote(path.string()) + " " + shell_quote(out.string()),
                                          "run " + shell_quote(path.string()) + " --out " + shell_quote(out.string())}) {
            const auto result = fathom(command);
            EXPECT_EQ(result.exit_code, kInputError) << command << "\n" << result.output;
            EXPECT_NE(result.output.find(path.string()), std::string::npos) << result.output;
            EXPECT_NE(result.output.find(std::string("empty matrix: ") + expected), std::string::npos) << result.output;
            EXPECT_FALSE(fs::exists(out));
        }
    }
}

TEST(CliHostileFiles, AnAllZeroMatrixIsReadButNotAnalysed) {
    const auto path = write_text("cli-all-zero", "zeros.mtx", "%%MatrixMarket matrix coordinate integer general\n8 12 0\n");
    const auto info = fathom("info " + shell_quote(path.string()));
    ASSERT_EQ(info.exit_code, 0) << info.output;
    EXPECT_NE(info.output.find("shape: 8 cells x 12 genes"), std::string::npos) << info.output;
    const auto out = path.parent_path() / "out.h5ad";
    const auto run = fathom("run " + shell_quote(path.string()) + " --out " + shell_quote(out.string()));
    EXPECT_EQ(run.exit_code, kInputError) << run.output;
    EXPECT_NE(run.output.find(path.string()), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("every value is zero"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("TridiagEigen"), std::string::npos) << run.output;
    EXPECT_FALSE(fs::exists(out));
}

// The explorer checks a file with `info --read-all` in a separate process before it opens
// it (ui/OpenCheck): that must read every row. An h5ad with integer X whose last deflate
// chunk (values of the last cells only) is damaged: the check exits 3 naming the object.
TEST(CliHostileFiles, InfoReadAllReachesADamagedChunkAtTheEnd) {
    FATHOM_REQUIRE_PYTHON("anndata", "h5py", "scipy");
    const auto path = test::temp_dir("cli-read-all") / "late_damage.h5ad";
    const auto made = test::run_python(R"py(
import sys
import anndata as ad, h5py, numpy as np, scipy.sparse as sp
path = sys.argv[1]
rng = np.random.default_rng(2)
X = sp.random(5000, 300, density=0.07, format="csr", random_state=3, data_rvs=lambda n: rng.integers(1, 9, n)).astype(np.int32)
ad.AnnData(X=X).write_h5ad(path, compression="gzip")
with h5py.File(path, "r") as f:
    data = f["X/data"]
    last = data.id.get_chunk_info(data.id.get_num_chunks() - 1)
    assert last.chunk_offset[0] > X.indptr[2000], "the last chunk holds values of the first 2,000 cells"
with open(path, "r+b") as f:
    f.seek(last.byte_offset + last.size // 2)
    f.write(bytes([255]) * 64)
)py",
                                       {path.string()});
    ASSERT_EQ(made.exit_code, 0) << made.output;
    const auto whole = fathom("info --read-all " + shell_quote(path.string()));
    EXPECT_EQ(whole.exit_code, kInputError) << whole.output;
    EXPECT_NE(whole.output.find(path.string()), std::string::npos) << whole.output;
    EXPECT_NE(whole.output.find("/X/data"), std::string::npos) << whole.output;
}

TEST(CliHostileFiles, AFifoIsRefusedAtOnce) {
    const auto folder = test::temp_dir("cli-fifo");
    const auto path = folder / "x.h5ad";
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    const auto result = fathom("info " + shell_quote(path.string()));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_EQ(result.exit_code, kInputError) << result.output;
    EXPECT_NE(result.output.find(path.string() + ": is a FIFO (named pipe), not a regular file"), std::string::npos)
        << result.output;
}

/// Starts `fathom-cli convert IN OUT`; returns its pid.
pid_t start_convert(const fs::path& in, const fs::path& out) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execl(cli.c_str(), cli.c_str(), "convert", in.c_str(), out.c_str(), "--gzip", "6", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    return pid;
}

/// Signals a convert once its temporary file exists (`count` times); true when the
/// temporary file appeared. Waits for the process and returns how it ended.
int signal_convert(const fs::path& in, const fs::path& out, int signal_number, int count, bool& saw_temp) {
    const pid_t pid = start_convert(in, out);
    const fs::path temp = out.string() + ".tmp-" + std::to_string(pid);
    saw_temp = false;
    for (int wait = 0; wait < 3000 && !saw_temp; ++wait) {
        saw_temp = fs::exists(temp);
        if (!saw_temp) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int sent = 0; sent < count; ++sent) {
        ::kill(pid, signal_number);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_FALSE(fs::exists(temp)) << temp << " left behind";
    return status;
}

TEST(CliHostileFiles, AConvertStoppedBySigtermOrSigintLeavesNoTemporaryFile) {
    const auto folder = test::temp_dir("cli-signal");
    const auto in = folder / "big.h5";
    const auto made = fathom("synth --cells 10000 --genes 2000 --seed 5 --out " + shell_quote(in.string()));
    ASSERT_EQ(made.exit_code, 0) << made.output;
    for (const int signal_number : {SIGTERM, SIGINT}) {
        for (const int count : {1, 2}) {  // one: cancelled; two: the process ends at once
            const auto out = folder / ("out-" + std::to_string(signal_number) + "-" + std::to_string(count) + ".h5ad");
            bool saw_temp = false;
            const int status = signal_convert(in, out, signal_number, count, saw_temp);
            EXPECT_TRUE(saw_temp) << "the convert ended before its temporary file was seen";
            EXPECT_FALSE(fs::exists(out));
            if (count == 1 && saw_temp) {
                EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
            }
        }
    }
}

}  // namespace
}  // namespace fathom
