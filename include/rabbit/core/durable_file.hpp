#pragma once
// Files that are complete or absent (docs/architecture.md "Termination, temporary files and
// memory"): a file is written under a temporary name in the directory of its final name, flushed
// to the disk (fsync), renamed over the final name, and the directory is flushed too, so that
// neither a killed process nor a crashed node leaves a truncated file under the final name.
// Temporary names carry the writer's pid and host, so that temporary files left by dead processes
// of this host can be recognised and removed.
#include <string>
#include <vector>

namespace rabbit::durable {

/// `.<name>.tmp<pid>.<host>` in the directory of `final_path`.
std::string temporary_path(const std::string& final_path);

/// Removes the temporary files of `final_path` (any pid) left by processes of this host that are
/// no longer alive; returns the paths removed. Those of live processes and other hosts are kept.
std::vector<std::string> remove_stale_temporaries(const std::string& final_path);

/// fsync(2)s the closed file `tmp_path`, renames it to `final_path` and fsyncs the directory.
/// Throws Error naming the file and the cause.
void commit_by_rename(const std::string& tmp_path, const std::string& final_path);

}  // namespace rabbit::durable
