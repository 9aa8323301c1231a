// Temporary names, stale temporaries and the durable rename (rabbit/core/durable_file.hpp).
#include "rabbit/core/durable_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "rabbit/core/error.hpp"

namespace rabbit::durable {
namespace {

namespace fs = std::filesystem;

// This host's name as it may appear in a file name (letters, digits, '-' and '_'; '.' ends it).
std::string host_tag() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  std::string tag;
  for (const char* c = name; *c && *c != '.'; ++c)
    tag += (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_') ? *c : '_';
  return tag.empty() ? "localhost" : tag;
}

std::string prefix_of(const fs::path& final_path) {
  return "." + final_path.filename().string() + ".tmp";
}

bool process_alive(long pid) {
  if (pid <= 0) return true;  // not a pid we could have written: leave the file alone
  if (pid == static_cast<long>(getpid())) return true;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

void fsync_path(const std::string& path, int flags, const std::string& what) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot open {} {} to flush it: {}", what, path, std::strerror(errno)));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  // Some file systems (and /dev/shm) refuse fsync of a directory; nothing more can be done there.
  if (rc != 0 && err != EINVAL && err != EROFS)
    throw Error(fmt::format("cannot flush {} {} to the disk: {}", what, path, std::strerror(err)));
}

}  // namespace

std::string temporary_path(const std::string& final_path) {
  const fs::path p(final_path);
  return (p.parent_path() / (prefix_of(p) + fmt::format("{}.{}", getpid(), host_tag()))).string();
}

std::vector<std::string> remove_stale_temporaries(const std::string& final_path) {
  const fs::path p(final_path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = prefix_of(p);
  const std::string suffix = "." + host_tag();
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (process_alive(std::stol(digits))) continue;
    std::error_code rm;
    if (fs::remove(it->path(), rm)) removed.push_back(it->path().string());
  }
  return removed;
}

void commit_by_rename(const std::string& tmp_path, const std::string& final_path) {
  fsync_path(tmp_path, O_RDONLY, "the file");
  std::error_code ec;
  fs::rename(tmp_path, final_path, ec);
  if (ec) throw Error(fmt::format("cannot rename {} to {}: {}", tmp_path, final_path, ec.message()));
  const fs::path dir = fs::path(final_path).parent_path();
  fsync_path(dir.empty() ? std::string(".") : dir.string(), O_RDONLY | O_DIRECTORY, "the directory");
}

}  // namespace rabbit::durable
