#!/usr/bin/env bash
# Every failure test of the communicator (mismatches, a killed rank, a late rank, a missing or stalled
# rank at the rendezvous, destroy after a failure) and of the compressed allreduce and gw_sync (ranks
# with different codecs or registrations),
# GW_STRESS_REPEAT times (default 2) over shared memory and TCP, with every core kept busy by a spinning
# process: a wrong status under load (a dead peer's exit overtaking its failure notice, a timeout instead
# of a mismatch) fails it. For a long run: GW_STRESS_REPEAT=50 ctest --test-dir build -R failure_stress
#   usage: failure_stress.sh MP_COLLECTIVES_TEST [SYNC_TEST]
set -euo pipefail
repeat=${GW_STRESS_REPEAT:-2}
spinners=()
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  spinners+=($!)
done
trap 'kill "${spinners[@]}" 2>/dev/null || true' EXIT
echo "failure_stress: ${repeat} repetitions with ${#spinners[@]} spinning processes"
# Both programs run whatever the first one's verdict; the exit status fails if either failed.
status=0
"$1" --gtest_filter='*Mismatch*:*Killed*:*LateRank*:*DestroyAfter*:*RankThatNeverStarts*:*Stalled*' --gtest_repeat="$repeat" --gtest_brief=1 || status=1
if [ $# -ge 2 ]; then
  "$2" --gtest_filter='*Mismatch*' --gtest_repeat="$repeat" --gtest_brief=1 || status=1
fi
exit $status
