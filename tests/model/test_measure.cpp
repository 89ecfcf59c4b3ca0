// The machine's busy time (runtime/model/measure.hpp), the basis of a link's CPU per byte.

#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "model/measure.hpp"

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

// A thread that spins for 0.3 s of its own CPU time shows up in full in the machine's busy time (which
// counts every process, so other work on a loaded machine only adds), and no more time can pass busy
// than the CPUs had.
TEST(MeasureBusy, CountsASpinningThreadAndNoMoreThanTheCoresHad) {
  const double before = gw::model::busy_core_seconds();
  ASSERT_GE(before, 0) << "neither cpuidle nor /proc/stat could be read";
  const auto t0 = std::chrono::steady_clock::now();
  double spun = 0;
  std::thread spinner([&] {
    const double c0 = thread_cpu_s();
    volatile unsigned long sink = 0;
    while (thread_cpu_s() - c0 < 0.3) sink = sink + 1;
    spun = thread_cpu_s() - c0;
  });
  spinner.join();
  const double after = gw::model::busy_core_seconds();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cores = double(sysconf(_SC_NPROCESSORS_ONLN));
  const double slack = 0.01 * (cores + 1);  // /proc/stat's 10 ms units, where cpuidle is missing
  EXPECT_GE(after - before, spun - slack) << "the spinner's " << spun << " s of CPU went uncounted";
  EXPECT_LE(after - before, cores * wall + slack) << "more busy time than " << cores << " cores had in " << wall << " s";
}
