#include "tests/support/python.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fathom::test {

CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> buffer{};
    std::size_t count;
    while ((count = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), count);
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

std::string shell_quote(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

std::optional<std::string> python_missing(const std::vector<std::string>& modules) {
    if (!std::filesystem::exists("/usr/bin/python3")) return std::string("/usr/bin/python3 not found");
    std::string imports;
    for (const auto& module : modules) imports += "import " + module + "; ";
    const auto result = run_command("/usr/bin/python3 -c " + shell_quote(imports) + " 2>&1");
    if (result.exit_code != 0) return "/usr/bin/python3 cannot import the modules needed: " + result.output;
    return std::nullopt;
}

CommandResult run_python(const std::string& script, const std::vector<std::string>& args) {
    static std::atomic<int> counter{0};
    const auto path = std::filesystem::temp_directory_path() /
                      ("fathom-test-script-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".py");
    {
        std::ofstream out(path);
        out << script;
    }
    // Built by appending: GCC 12 warns falsely (-Wrestrict, bug 105329) on "literal" + string&&.
    std::string command = "/usr/bin/python3 ";
    command += shell_quote(path.string());
    for (const auto& arg : args) {
        command += ' ';
        command += shell_quote(arg);
    }
    auto result = run_command(command + " 2>&1");
    std::filesystem::remove(path);
    return result;
}

}  // namespace fathom::test
