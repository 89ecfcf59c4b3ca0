// The launcher behind `gradwire run` (launch.cpp): N local ranks of a program, their output prefixed by
// rank, signals forwarded, the others stopped when one fails; with a link rate, in the emulated cluster.
#pragma once

#include <string>
#include <vector>

namespace gwcli {

// Starts `n` ranks of `command` and waits for them; the first failing rank's exit status (128 + signal
// for one killed by a signal), else 0. grace_s: seconds the others get after SIGTERM before SIGKILL;
// keep_going: the others run on when one fails; link: "" or a rate (1gbit) for the emulated cluster;
// per_node: ranks per emulated node (0: none); restarts: --elastic's budget, how many times in all a rank that
// fails is started again to join the running job (0: never; docs/elastic.md).
int run_ranks(int n, const std::vector<std::string>& command, double grace_s, bool keep_going, const std::string& link,
              int per_node, int restarts = 0);

}  // namespace gwcli
