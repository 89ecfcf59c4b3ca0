// What a benchmark result must carry to be traced and compared: the machine it ran on, the command
// line that produced it and the commit of the source tree it was built from (docs/benchmarks.md,
// "Result files").
#pragma once

#include <nlohmann/json.hpp>

namespace gwcli::bench {

// {"machine": {"cpu", "cores", "memory_bytes", "kernel"}, "command": [argv...],
//  "commit": "<sha>[-dirty]" or "unknown", "time": UTC ISO 8601}.
// The commit is GRADWIRE_COMMIT when set; else `git rev-parse HEAD` in the first folder above the
// running executable that holds a `.git` (a build inside its source tree), with "-dirty" when tracked
// files differ from it; else "unknown" (an installed copy outside any checkout).
nlohmann::json run_info();

}  // namespace gwcli::bench
