// Processes of the `gradwire` command, in one place: starting a program (fork + exec, its environment
// and output), waiting for it, the exit code of a status, this executable's path, and a free port for
// a rendezvous. `gradwire run` (its ranks), `gradwire train` (its launcher), the cluster script and the
// benchmarks' peers all start their processes through here.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace gwcli {

using Env = std::vector<std::pair<std::string, std::string>>;

struct SpawnOptions {
  Env env;              // added to (or replacing in) this process's environment
  int stdout_fd = -1;   // the child's stdout; -1: this process's stdout
  int stderr_fd = -1;   // the child's stderr; -1: this process's stderr
  bool own_group = false;  // the child leads a process group of its own (signals reach it through us)
};

// Starts argv[0] (searched in PATH) with argv; a program that cannot be started exits 127 after saying
// why on stderr, prefixed by `who`. Flushes this process's stdio first. Throws Failure when fork fails.
pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options, const std::string& who);

// An exit code for a waitpid status: the program's own, or 128 + the signal that killed it.
int exit_code_of(int status);

// Waits for `pid` (through EINTR) and returns exit_code_of its status.
int wait_exit(pid_t pid);

// spawn + wait_exit.
int run_and_wait(const std::vector<std::string>& argv, const SpawnOptions& options, const std::string& who);

// The path of this executable (/proc/self/exe). Throws Failure naming `who` when it cannot be read.
std::string self_path(const std::string& who);

// A free TCP port below Linux's ephemeral range (32768-60999), for a rendezvous root: a port from that
// range may be handed to a rank's own outgoing connection while it retries connecting to the root, and
// the root could then not listen on it. Throws Failure naming `who` when 20000-32000 are all taken.
int free_port(const std::string& who);

}  // namespace gwcli
