// The atomic file writer (core/types/atomic_file.hpp): content appears at the
// destination only when the whole write succeeded; a failure, a cancel or an exception
// from the writer leaves no partial file and no temporary file, and an existing file
// keeps its content; the destination is checked before anything is written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/types/JobContext.hpp"
#include "core/types/atomic_file.hpp"
#include "core/types/errors.hpp"
#include "tests/support/paths.hpp"

namespace fathom {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> listing(const fs::path& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(AtomicFile, WritesTheWholeContentAndLeavesNoTemporaryFile) {
    const auto folder = test::temp_dir("atomic-file-ok");
    const fs::path path = folder / "out.txt";
    write_file_atomically(path.string(), [](std::ostream& out) { out << "first\n"; });
    EXPECT_EQ(read_text(path), "first\n");
    // An existing file is replaced as a whole.
    write_file_atomically(path.string(), [](std::ostream& out) { out << "second, longer\n" << std::string(100000, 'x'); });
    EXPECT_EQ(read_text(path), "second, longer\n" + std::string(100000, 'x'));
    EXPECT_EQ(listing(folder), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, AFailingWriterLeavesNoPartialFile) {
    const auto folder = test::temp_dir("atomic-file-fail");
    const fs::path path = folder / "out.txt";
    try {
        write_file_atomically(path.string(), [](std::ostream& out) {
            out << std::string(1 << 20, 'x');  // a partial content exists on disk by now
            out.flush();
            throw std::runtime_error("the writer broke");
        });
        ADD_FAILURE() << "no error";
    } catch (const WriteError& error) {
        // Any other error becomes a WriteError naming the destination.
        EXPECT_EQ(error.file(), path.string());
        EXPECT_EQ(error.reason(), "the writer broke");
        EXPECT_EQ(std::string(error.what()), path.string() + ": the writer broke");
    }
    EXPECT_TRUE(fs::is_empty(folder)) << "left behind: " << listing(folder).front();
}

TEST(AtomicFile, AnExistingFileIsKeptIntactOnFailureAndCancel) {
    const auto folder = test::temp_dir("atomic-file-keep");
    const fs::path path = folder / "out.txt";
    { std::ofstream(path) << "previous\n"; }
    EXPECT_THROW(write_file_atomically(path.string(),
                                       [](std::ostream& out) {
                                           out << "half";
                                           throw WriteError("elsewhere.tmp", "disk full");
                                       }),
                 WriteError);
    JobContext ctx;
    ctx.cancel();
    // Cancelled and the input / option errors pass through unchanged.
    EXPECT_THROW(write_file_atomically(path.string(),
                                       [&](std::ostream& out) {
                                           out << "half";
                                           ctx.checkpoint();
                                       }),
                 Cancelled);
    EXPECT_THROW(write_file_atomically(path.string(), [](std::ostream&) { throw ReadError("in.h5", "gone"); }), ReadError);
    EXPECT_THROW(write_file_atomically(path.string(), [](std::ostream&) { throw std::invalid_argument("bad"); }),
                 std::invalid_argument);
    EXPECT_EQ(read_text(path), "previous\n");
    EXPECT_EQ(listing(folder), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, AWriteErrorAboutTheTemporaryFileNamesTheDestination) {
    const auto folder = test::temp_dir("atomic-file-readdress");
    const fs::path path = folder / "out.h5";
    AtomicFile file(path.string());
    try {
        file.run([&] { throw WriteError(file.temp_path(), "HDF5 said no"); });
        ADD_FAILURE() << "no error";
    } catch (const WriteError& error) {
        EXPECT_EQ(error.file(), path.string());
        EXPECT_EQ(error.reason(), "HDF5 said no");
    }
    // After a failure the file cannot be committed or written further.
    EXPECT_THROW(file.run([] {}), WriteError);
    EXPECT_THROW(file.commit(), WriteError);
    EXPECT_FALSE(file.committed());
    EXPECT_TRUE(fs::is_empty(folder));
}

TEST(AtomicFile, StepsThenCommit) {
    const auto folder = test::temp_dir("atomic-file-steps");
    const fs::path path = folder / "out.bin";
    {
        AtomicFile file(path.string());
        EXPECT_EQ(file.temp_path(), path.string() + ".tmp-" + std::to_string(::getpid()));
        std::ofstream stream;
        file.run([&] { stream.open(file.temp_path(), std::ios::binary); });
        file.run([&] { stream << "two steps"; });
        file.run([&] { stream.close(); });
        EXPECT_FALSE(fs::exists(path)) << "nothing at the destination before commit()";
        file.commit();
        EXPECT_TRUE(file.committed());
    }
    EXPECT_EQ(read_text(path), "two steps");
    // Not committed: the destructor removes the temporary file.
    {
        AtomicFile file((folder / "dropped.bin").string());
        file.run([&] { std::ofstream(file.temp_path()) << "never committed"; });
        EXPECT_TRUE(fs::exists(file.temp_path()));
    }
    EXPECT_EQ(listing(folder), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, TheDestinationIsCheckedBeforeAnythingIsWritten) {
    const auto folder = test::temp_dir("atomic-file-check");
    bool wrote = false;
    const auto writer = [&](std::ostream&) { wrote = true; };
    const auto expect_refused = [&](const std::string& path, const std::string& reason) {
        SCOPED_TRACE(path);
        try {
            write_file_atomically(path, writer);
            ADD_FAILURE() << "no error";
        } catch (const WriteError& error) {
            EXPECT_EQ(error.file(), path);
            EXPECT_NE(error.reason().find(reason), std::string::npos) << error.reason();
        }
        EXPECT_THROW(check_output_path(path), WriteError);
    };
    expect_refused((folder / "no-such-folder" / "out.txt").string(), "does not exist");
    expect_refused(folder.string(), "is a folder");
    expect_refused("", "empty output path");
    { std::ofstream(folder / "plain-file") << "x"; }
    expect_refused((folder / "plain-file" / "out.txt").string(), "is not a folder");
    if (::geteuid() != 0) {  // root writes anywhere
        const fs::path locked = folder / "locked";
        fs::create_directory(locked);
        fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
        expect_refused((locked / "out.txt").string(), "cannot write in folder");
        fs::permissions(locked, fs::perms::owner_all);
    }
    EXPECT_FALSE(wrote);
    EXPECT_NO_THROW(check_output_path((folder / "fine.txt").string()));
    EXPECT_FALSE(fs::exists(folder / "fine.txt")) << "check_output_path creates nothing";
}

}  // namespace
}  // namespace fathom
