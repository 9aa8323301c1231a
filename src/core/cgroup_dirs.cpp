// The cgroup directories of one controller (cgroup_dirs.hpp).
#include "cgroup_dirs.hpp"

#include <sstream>

namespace rabbit::cgroups {
namespace {

namespace fs = std::filesystem;

// `path`'s directory under `root` and each ancestor up to `root`; only `root` when `path` is not
// visible there.
void add_ancestry(const fs::path& root, const std::string& path, bool v2, std::vector<ControllerDir>& out) {
  fs::path rel = fs::path(path).relative_path();
  std::error_code ec;
  if (!rel.empty() && fs::is_directory(root / rel, ec)) {
    for (; !rel.empty() && rel != rel.parent_path(); rel = rel.parent_path()) out.push_back({root / rel, v2});
  }
  if (fs::is_directory(root, ec)) out.push_back({root, v2});
}

}  // namespace

std::vector<ControllerDir> controller_dirs(const std::string& proc_self_cgroup, const std::string& controller,
                                           const std::string& v2_root, const std::string& v1_root) {
  std::vector<ControllerDir> dirs;
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // "hierarchy-ID:controller-list:cgroup-path"; v2 is "0::PATH"
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const bool v2 = id == "0" && controllers.empty();
    bool listed = false;
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) listed = listed || c == controller;
    if (!v2 && !listed) continue;
    add_ancestry(v2 ? v2_root : v1_root, line.substr(b + 1), v2, dirs);
  }
  return dirs;
}

}  // namespace rabbit::cgroups
