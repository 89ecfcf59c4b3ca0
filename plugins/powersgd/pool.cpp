#include "pool.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

namespace psgd {

Pool::Pool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

Pool::~Pool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

unsigned Pool::available(unsigned limit, unsigned ranks_here) {
  unsigned n = 0;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = unsigned(CPU_COUNT(&set));
#endif
  if (n == 0) n = std::thread::hardware_concurrency();
  // Ranks that outnumber the cores each take one thread: a second thread only waits for a core the other
  // ranks hold, and the part it took holds up the product until it gets one.
  n /= std::max(ranks_here, 1u);
  return std::clamp(n, 1u, std::max(limit, 1u));
}

unsigned Pool::ranks_on_host() {
  for (const char* name : {"GW_LOCAL_SIZE", "LOCAL_WORLD_SIZE"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 1u << 20) return unsigned(n);
  }
  return 1;
}

bool Pool::take(unsigned* i) {  // mutex_ held
  if (job_ == nullptr || next_ >= parts_) return false;
  *i = next_++;
  return true;
}

void Pool::run(unsigned parts, const std::function<void(unsigned)>& part) {
  if (parts == 0) return;
  if (workers_.empty() || parts == 1) {
    for (unsigned i = 0; i < parts; ++i) part(i);
    return;
  }
  std::lock_guard<std::mutex> one(run_mutex_);
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &part;
  parts_ = parts;
  next_ = 0;
  finished_ = 0;
  ++generation_;
  wake_.notify_all();
  unsigned i;
  while (take(&i)) {
    lock.unlock();
    part(i);
    lock.lock();
    ++finished_;
  }
  done_.wait(lock, [&] { return finished_ == parts_; });
  job_ = nullptr;
}

void Pool::work() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
    if (stop_) return;
    seen = generation_;
    unsigned i;
    while (take(&i)) {
      const std::function<void(unsigned)>* job = job_;
      lock.unlock();
      (*job)(i);
      lock.lock();
      if (++finished_ == parts_) done_.notify_all();
    }
  }
}

}  // namespace psgd
