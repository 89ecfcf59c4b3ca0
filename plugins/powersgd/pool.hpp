// A few threads kept for the life of a codec, so a large product can use more than one core. The kernels
// (kernels.hpp) split their output over the threads, never the sums inside one output element, so their
// result is the same bits whatever the thread count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace psgd {

class Pool {
 public:
  // `threads` counts the calling thread: Pool(1) starts none and runs everything on the caller.
  explicit Pool(unsigned threads);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  unsigned threads() const { return unsigned(workers_.size()) + 1; }
  // Calls part(i) for every i < parts, spread over the threads (the caller takes its share), and returns
  // when all have returned. One run at a time per pool; part must not throw.
  void run(unsigned parts, const std::function<void(unsigned)>& part);

  // The thread count of a pool for this machine: the cores the process may run on, shared by the
  // `ranks_here` ranks of this host (each gets its share, at least 1), at most `limit`.
  static unsigned available(unsigned limit, unsigned ranks_here = 1);
  // The ranks on this host as the launcher says: GW_LOCAL_SIZE (gradwire run), else LOCAL_WORLD_SIZE
  // (torchrun), else 1.
  static unsigned ranks_on_host();

 private:
  void work();
  bool take(unsigned* i);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned parts_ = 0, next_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace psgd
