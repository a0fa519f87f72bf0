#!/usr/bin/env bash
# slurm_local_cleanup: a run of scripts/slurm-local.sh whose training job fails (--fail-job) must
# fail with that job's loom error, and leave no daemon and no job process behind.
#   tests/cluster/slurm_cleanup_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=${1:?usage: slurm_cleanup_test.sh SOURCE_DIR BUILD_DIR}
build_dir=${2:?usage: slurm_cleanup_test.sh SOURCE_DIR BUILD_DIR}
fail() {
  echo "slurm_local_cleanup: FAILED: $*"
  exit 1
}
work=$(mktemp -d /tmp/loom-slurm-cleanup.XXXXXX)
chmod 755 "$work"
run=$work/run
bash "$source_dir/scripts/slurm-local.sh" --build "$build_dir" --work "$run" --fail-job > "$work/log" 2>&1
status=$?
cat "$work/log"
[ "$status" -eq 77 ] && exit 77
[ "$status" -eq 1 ] || fail "the run ended with status $status, not 1"
grep -q "FAILED: job [0-9]*, sbatch of loom-catdog train, failed" "$work/log" ||
  fail "the run did not fail at the training job"
grep -q "loom-catdog: error: --data $run/no-such-data: not a usable data folder" "$run/runs/sbatch.out" ||
  fail "the job did not end with loom's error about its --data"

running() {  # PID: alive and not a zombie
  local state
  state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2> /dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}
for daemon in munged slurmctld slurmd; do
  grep -q "^$daemon [0-9]*$" "$run/pids" || fail "$run/pids does not name $daemon"
done
while read -r name pid; do
  running "$pid" && fail "$name ($pid) is still running"
done < "$run/pids"
for environ in /proc/[0-9]*/environ; do
  pid=${environ#/proc/}
  pid=${pid%/environ}
  running "$pid" && tr '\0' '\n' 2> /dev/null < "$environ" | grep -qxF "LOOM_SLURM_LOCAL=$run" &&
    fail "process $pid of a job is still running: $(tr '\0' ' ' < "/proc/$pid/cmdline")"
done
echo "slurm_local_cleanup: the failed run stopped munged, slurmctld, slurmd and every job process"
rm -rf "$work"
