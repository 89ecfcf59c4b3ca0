// `gradwire run -n N [--] PROG ARGS`: the command line of the launcher (tools/support/launch.cpp): N local
// ranks of PROG with GW_RANK, GW_WORLD_SIZE, GW_LOCAL_RANK, GW_LOCAL_SIZE, GW_ROOT_ADDR and GW_ROOT_PORT
// set, every line they print prefixed with "[rank] "; when one rank fails the others are stopped (with
// --elastic, it is started again to join the job).
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "support/launch.hpp"

namespace gwcli {

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Start N local ranks of a program (GW_RANK, GW_WORLD_SIZE, GW_ROOT_ADDR/PORT set), "
                                        "output prefixed by rank; when one fails the others are stopped");
  auto ranks = std::make_shared<int>(1);
  auto grace = std::make_shared<double>(5.0);
  auto keep_going = std::make_shared<bool>(false);
  auto link = std::make_shared<std::string>();
  auto per_node = std::make_shared<int>(0);
  auto restarts = std::make_shared<int>(0);
  cmd->add_option("-n,--ranks", *ranks, "Number of ranks")->required()->check(CLI::Range(1, 4096));
  cmd->add_option("--grace", *grace, "Seconds the other ranks get after SIGTERM before SIGKILL")->check(CLI::Range(0.0, 3600.0));
  cmd->add_flag("--keep-going", *keep_going,
                "Let the other ranks run on when one fails (to watch how they handle it); the exit status is "
                "still the first failing rank's");
  cmd->add_option("--link", *link,
                  "Place every rank in its own network namespace behind a link of this rate (tc syntax: 1gbit, "
                  "10gbit, 100mbit); needs root, else runs on loopback (scripts/cluster.sh)");
  cmd->add_option("--ranks-per-node", *per_node,
                  "Emulate nodes of this many ranks (GW_NODE_ID, GW_LOCAL_RANK, GW_LOCAL_SIZE per node); with "
                  "--link a node's ranks share one namespace and its link")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--elastic", *restarts,
                "Elastic mode (docs/elastic.md): start a rank that fails again, at most N times in all "
                "(--elastic=N; --elastic: once), so that it joins the running job; implies --keep-going");
  // PROG ARGS: everything from the first word that is not one of run's options (or its value), or
  // everything after a "--" that comes before PROG. positionals_at_end: once the positional has its first
  // word, every later word is the program's, verbatim: options that look like run's own (-n, --link), a
  // "--" of the program's, the word "run". An unknown option before PROG is an error, not the program.
  auto command = std::make_shared<std::vector<std::string>>();
  cmd->add_option("command", *command, "The program and its arguments (all words from the program on are "
                                       "passed to it unchanged)");
  cmd->positionals_at_end();
  cmd->footer("Example: gradwire run -n 4 -- ./train --epochs 3");
  cmd->callback([&exit_code, ranks, grace, keep_going, link, per_node, restarts, command] {
    // The "--" that ended run's options is not in `command` (CLI11 reports it in remaining()).
    exit_code = run_ranks(*ranks, *command, *grace, *keep_going, *link, *per_node, *restarts);
  });
}

}  // namespace gwcli
