#include "support/process.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "support/tool.hpp"

namespace gwcli {

pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options, const std::string& who) {
  if (argv.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, who + ": no program to start");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw Failure(GW_ERR_INTERNAL, who + ": fork: " + std::strerror(errno));
  if (pid > 0) {
    if (options.own_group) setpgid(pid, pid);  // also here: a signal sent right after fork must find the group
    return pid;
  }
  if (options.own_group) setpgid(0, 0);
  if (options.stdout_fd >= 0) dup2(options.stdout_fd, STDOUT_FILENO);
  if (options.stderr_fd >= 0) dup2(options.stderr_fd, STDERR_FILENO);
  for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "%s: cannot start '%s': %s\n", who.c_str(), args[0], std::strerror(errno));
  _exit(127);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return exit_code_of(status);
}

int run_and_wait(const std::vector<std::string>& argv, const SpawnOptions& options, const std::string& who) {
  return wait_exit(spawn(argv, options, who));
}

std::string self_path(const std::string& who) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Failure(GW_ERR_INTERNAL, who + ": cannot find my own executable (/proc/self/exe): " + ec.message());
  return p.string();
}

int free_port(const std::string& who) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Failure(GW_ERR_INTERNAL, who + ": socket: " + std::strerror(errno));
  const int start = int(getpid() % 12000);
  for (int i = 0; i < 12000; ++i) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    const int port = 20000 + (start + i) % 12000;
    a.sin_port = htons(uint16_t(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      close(fd);
      return port;
    }
  }
  close(fd);
  throw Failure(GW_ERR_INTERNAL, who + ": no free port between 20000 and 32000 for the rendezvous");
}

}  // namespace gwcli
