#include "tools/plot/python_runner.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "common/input_error.h"

extern char** environ;

namespace sparsefuse::plot {

namespace fs = std::filesystem;

namespace {

// argv[1] is the directory holding the package, argv[2] the package name.
constexpr const char* kBootstrap =
    "import importlib, sys\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "main = importlib.import_module(sys.argv.pop(1) + '.cli').main\n"
    "sys.exit(main(sys.argv[1:]))\n";

// A temporary directory removed on scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/sparsefuse-python-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory from " + pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void require_results_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    throw InputError(dir, "", "no such directory; expected a results directory holding result.json files "
                              "(written by 'sparsefuse compare ... --out DIR' or 'sparsefuse simulate ... --out DIR')");
  }
  if (!fs::is_directory(dir, ec)) {
    throw InputError(dir, "", "not a directory; expected a results directory holding result.json files");
  }
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == "result.json" && it->is_regular_file(ec)) return;
  }
  throw InputError(dir, "", "no result.json found (searched recursively); write some with "
                            "'sparsefuse compare SCENARIO --schemes a,b --out DIR' or 'sparsefuse simulate SCENARIO --out DIR'");
}

std::string python_interpreter() {
  const char* override_path = std::getenv("SPARSEFUSE_PYTHON");
  return override_path && *override_path ? override_path : "/usr/bin/python3";
}

int run_plot_python(const std::vector<std::string>& args) {
  return run_python_package({"sparsefuse_plot", "the plotting code", "python3-matplotlib", embedded_python_files},
                            args);
}

int run_python_package(const EmbeddedPackage& package, const std::vector<std::string>& args) {
  const std::string python = python_interpreter();
  if (access(python.c_str(), X_OK) != 0) {
    std::cerr << "sparsefuse: error: " << python << " not found or not executable; " << package.role
              << " needs Debian's python3 and " << package.needs << " (tools/setup installs them)\n";
    return 1;
  }
  TempDir dir;
  for (const auto& file : package.files()) {
    fs::path path = fs::path(dir.path()) / std::string(file.path);
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(file.content.data(), std::streamsize(file.content.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  std::vector<std::string> argv_strings = {python, "-I", "-B", "-c", kBootstrap, dir.path(), std::string(package.name)};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::cout.flush();
  std::cerr.flush();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    std::cerr << "sparsefuse: error: cannot run " << python << ": " << std::strerror(rc) << "\n";
    return 1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "sparsefuse: error: waiting for " << python << ": " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (code == 0 || code == 2) return code;
    std::cerr << "sparsefuse: error: " << package.role << " (" << python << ") failed with exit status " << code
              << "\n";
    return 1;
  }
  std::cerr << "sparsefuse: error: " << package.role << " (" << python << ") was killed by signal "
            << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << "\n";
  return 1;
}

}  // namespace sparsefuse::plot
