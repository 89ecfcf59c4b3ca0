#!/usr/bin/env bash
# Every failure test of the communicator (mismatches, a killed rank, a late rank, destroy after a
# failure), GW_STRESS_REPEAT times (default 2) over shared memory and TCP, with every core kept busy by
# a spinning process: a wrong status under load (a dead peer's exit overtaking its failure notice, a
# timeout instead of a mismatch) fails it. For a long run: GW_STRESS_REPEAT=50 ctest -R failure_stress
#   usage: failure_stress.sh MP_COLLECTIVES_TEST
set -euo pipefail
test_binary=$1
repeat=${GW_STRESS_REPEAT:-2}
spinners=()
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  spinners+=($!)
done
trap 'kill "${spinners[@]}" 2>/dev/null || true' EXIT
filter='*Mismatch*:*Killed*:*LateRank*:*DestroyAfter*'
echo "failure_stress: ${repeat} repetitions of ${filter} with ${#spinners[@]} spinning processes"
"$test_binary" --gtest_filter="$filter" --gtest_repeat="$repeat" --gtest_brief=1
