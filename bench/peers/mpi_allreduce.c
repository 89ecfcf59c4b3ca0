/* The Open MPI peer of the allreduce benchmarks: MPI_Allreduce (sum, in place) of COUNT floats, one
 * warm-up of WARMUP back-to-back calls (default ITERS) and REPS timed repetitions of ITERS back-to-back
 * calls (default 1), each started after a barrier, a repetition timed as the slowest rank's, per call.
 * Rank 0 prints one JSON line:
 * {"peer": "MPI_Allreduce", "ranks": n, "count": COUNT, "seconds": [...]} (seconds per call).
 * Every result is checked, the warm-up's too (each rank starts with 1.0 per element: after k calls every
 * element is n^k, computed alike in float, overflow to infinity included).
 *
 *   mpirun -np 4 gradwire-mpi-allreduce COUNT REPS [ITERS [WARMUP]]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long parse(const char* s, const char* what, long lo, long hi) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "gradwire-mpi-allreduce: %s must be a number in %ld..%ld, not '%s'\n", what, lo, hi, s);
    exit(2);
  }
  return v;
}

/* Fills buf with 1.0, runs `calls` in-place sums after a barrier and checks the result; returns this
 * rank's seconds per call. */
static double run_calls(float* buf, long count, long calls, int size, int rank) {
  float expected = 1.0f;
  double t0, mine;
  long i, k;
  for (k = 0; k < calls; ++k) expected *= (float)size;
  for (i = 0; i < count; ++i) buf[i] = 1.0f;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (k = 0; k < calls; ++k) MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  mine = (MPI_Wtime() - t0) / (double)calls;
  if (buf[0] != expected || buf[count - 1] != expected || buf[count / 2] != expected) {
    fprintf(stderr, "gradwire-mpi-allreduce: rank %d: wrong sum %g (expected %g)\n", rank, (double)buf[0],
            (double)expected);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return mine;
}

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  long count, reps, iters = 1, warmup, r;
  float* buf;
  double* seconds;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3 || argc > 5) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N gradwire-mpi-allreduce COUNT REPS [ITERS [WARMUP]]\n");
    MPI_Finalize();
    return 2;
  }
  count = parse(argv[1], "COUNT", 1, 1L << 31);
  reps = parse(argv[2], "REPS", 1, 10000);
  if (argc >= 4) iters = parse(argv[3], "ITERS", 1, 100000);
  warmup = argc == 5 ? parse(argv[4], "WARMUP", 1, 100000) : iters;
  buf = (float*)malloc((size_t)count * sizeof(float));
  seconds = (double*)malloc((size_t)reps * sizeof(double));
  if (!buf || !seconds) {
    fprintf(stderr, "gradwire-mpi-allreduce: out of memory for %ld floats\n", count);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  run_calls(buf, count, warmup, size, rank);
  for (r = 0; r < reps; ++r) {
    double mine = run_calls(buf, count, iters, size, rank), slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    seconds[r] = slowest;
  }
  if (rank == 0) {
    printf("{\"peer\": \"MPI_Allreduce\", \"ranks\": %d, \"count\": %ld, \"seconds\": [", size, count);
    for (r = 0; r < reps; ++r) printf("%s%.9g", r ? ", " : "", seconds[r]);
    printf("]}\n");
    fflush(stdout);
  }
  free(buf);
  free(seconds);
  MPI_Finalize();
  return 0;
}
