/* The Open MPI peer of bench P8: MPI_Reduce_scatter_block (sum of COUNT floats, COUNT / size per rank)
 * and MPI_Allgather (COUNT / size floats from every rank into COUNT), one warm-up of each and REPS timed
 * repetitions, each started after a barrier and timed as the slowest rank's. Rank 0 prints one JSON line:
 * {"peer": "MPI", "ranks": n, "count": COUNT, "reduce_scatter": [...], "allgather": [...]} (seconds).
 * Every result is checked (each rank's input is rank + 1 everywhere: the sum is n (n + 1) / 2, the
 * gathered shard q holds q + 1).
 *
 *   mpirun -np 4 gradwire-mpi-shards COUNT REPS        (COUNT divisible by the number of ranks)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long parse(const char* s, const char* what, long lo, long hi) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "gradwire-mpi-shards: %s must be a number in %ld..%ld, not '%s'\n", what, lo, hi, s);
    exit(2);
  }
  return v;
}

static void fail(int rank, const char* what, double got, double expected) {
  fprintf(stderr, "gradwire-mpi-shards: rank %d: wrong %s %g (expected %g)\n", rank, what, got, expected);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One timed call of each after a barrier; returns this rank's seconds in *rs and *ag. */
static void run_once(float* full, float* shard, long count, int size, int rank, double* rs, double* ag) {
  const long part = count / size;
  const float sum = (float)size * (float)(size + 1) / 2.0f;
  double t0;
  long i;
  for (i = 0; i < count; ++i) full[i] = (float)(rank + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  MPI_Reduce_scatter_block(full, shard, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  *rs = MPI_Wtime() - t0;
  if (shard[0] != sum || shard[part - 1] != sum) fail(rank, "reduce-scatter sum", shard[0], sum);
  for (i = 0; i < part; ++i) shard[i] = (float)(rank + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  MPI_Allgather(shard, (int)part, MPI_FLOAT, full, (int)part, MPI_FLOAT, MPI_COMM_WORLD);
  *ag = MPI_Wtime() - t0;
  if (full[0] != 1.0f || full[count - 1] != (float)size) fail(rank, "gathered value", full[count - 1], size);
}

static void print_list(const char* name, const double* v, long n) {
  long r;
  printf(", \"%s\": [", name);
  for (r = 0; r < n; ++r) printf("%s%.9g", r ? ", " : "", v[r]);
  printf("]");
}

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  long count, reps, r;
  float *full, *shard;
  double *rs, *ag, mine_rs, mine_ag;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N gradwire-mpi-shards COUNT REPS\n");
    MPI_Finalize();
    return 2;
  }
  count = parse(argv[1], "COUNT", size, 1L << 31);
  reps = parse(argv[2], "REPS", 1, 10000);
  if (count % size != 0) {
    if (rank == 0) fprintf(stderr, "gradwire-mpi-shards: COUNT %ld is not divisible by the %d ranks\n", count, size);
    MPI_Finalize();
    return 2;
  }
  full = (float*)malloc((size_t)count * sizeof(float));
  shard = (float*)malloc((size_t)(count / size) * sizeof(float));
  rs = (double*)malloc((size_t)reps * sizeof(double));
  ag = (double*)malloc((size_t)reps * sizeof(double));
  if (!full || !shard || !rs || !ag) {
    fprintf(stderr, "gradwire-mpi-shards: out of memory for %ld floats\n", count);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  run_once(full, shard, count, size, rank, &mine_rs, &mine_ag);
  for (r = 0; r < reps; ++r) {
    run_once(full, shard, count, size, rank, &mine_rs, &mine_ag);
    MPI_Reduce(&mine_rs, &rs[r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine_ag, &ag[r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  }
  if (rank == 0) {
    printf("{\"peer\": \"MPI\", \"ranks\": %d, \"count\": %ld", size, count);
    print_list("reduce_scatter", rs, reps);
    print_list("allgather", ag, reps);
    printf("}\n");
    fflush(stdout);
  }
  free(full);
  free(shard);
  free(rs);
  free(ag);
  MPI_Finalize();
  return 0;
}
