// Running a launcher job from a multi-process test driver (tests/faults, tests/elastic): the job's
// output read line by line as it arrives, signals sent from those lines, and a hard limit after which
// the job is stopped (SIGCONT to the processes named, SIGTERM, SIGKILL).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace gwjob {

using Clock = std::chrono::steady_clock;

struct Job {
  int code = -1;
  bool timed_out = false;
  std::string output;
};

// Runs `command` (through sh) with stdout and stderr into one pipe; on_line sees every complete line as
// it arrives, and may return a signal to send (with its pid) or leave `action` empty. After limit_s the
// job is stopped (SIGCONT to every pid on_line named, then SIGTERM, then SIGKILL) and marked timed out.
struct Action {
  pid_t pid = 0;
  int sig = 0;
};
inline Job run_job(const std::string& command, double limit_s, const std::function<Action(const std::string&)>& on_line,
            const std::function<Action()>& on_tick = nullptr) {
  Job job;
  int fds[2];
  if (pipe(fds) != 0) return job;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  const auto start = Clock::now();
  std::string partial;
  std::vector<pid_t> named;
  bool term_sent = false, kill_sent = false;
  auto act = [&](Action a) {
    if (a.pid > 0 && a.sig > 0) kill(a.pid, a.sig);
    if (a.pid > 0) named.push_back(a.pid);
  };
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    poll(&p, 1, 100);
    if (p.revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      const ssize_t got = read(fds[0], buf, sizeof(buf));
      if (got <= 0) break;
      job.output.append(buf, size_t(got));
      partial.append(buf, size_t(got));
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        act(on_line(partial.substr(0, nl)));
        partial.erase(0, nl + 1);
      }
    }
    if (on_tick) act(on_tick());
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > limit_s && !term_sent) {
      job.timed_out = true;
      for (pid_t q : named) kill(q, SIGCONT);
      kill(pid, SIGTERM);
      term_sent = true;
    }
    if (waited > limit_s + 15 && !kill_sent) {
      kill(pid, SIGKILL);
      kill_sent = true;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  job.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return job;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Processes whose command line holds `tag`.
inline std::vector<int> processes_with(const std::string& tag) {
  std::vector<int> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    FILE* f = std::fopen(("/proc/" + std::string(e->d_name) + "/cmdline").c_str(), "rb");
    if (!f) continue;
    std::string cmd;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) cmd.append(buf, n);
    std::fclose(f);
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(tag) != std::string::npos) found.push_back(pid);
  }
  closedir(d);
  return found;
}

}  // namespace gwjob
