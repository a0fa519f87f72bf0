#!/usr/bin/env bash
# slurm_local_arguments: scripts/slurm-local.sh refuses a bad --build or --work with a message
# naming it, at once, before it makes anything (these checks come before the ones that skip).
#   tests/cluster/slurm_arguments_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=${1:?usage: slurm_arguments_test.sh SOURCE_DIR BUILD_DIR}
build_dir=${2:?usage: slurm_arguments_test.sh SOURCE_DIR BUILD_DIR}
failed=0
expect() {  # MESSAGE ARGS...: exit status 1 and MESSAGE on stderr
  local message=$1 out status
  shift
  out=$(bash "$source_dir/scripts/slurm-local.sh" "$@" 2>&1)
  status=$?
  if [ "$status" -ne 1 ] || [[ $out != *"$message"* ]]; then
    echo "slurm_local_arguments: FAILED: slurm-local.sh $* ended $status with '$out', not 1 with '$message'"
    failed=1
  fi
}
tmp=$(mktemp -d /tmp/loom-slurm-args.XXXXXX)
expect "no $tmp/none/apps/catdog/loom-catdog: build the loom-catdog and cluster_tool targets" --build "$tmp/none"
touch "$tmp/a-file"
expect "--work $tmp is not empty and not a folder of an earlier slurm-local run" --build "$build_dir" --work "$tmp"
long=$tmp/$(printf 'd%.0s' $(seq 100))
expect "--work $long: the path is too long for munged's socket" --build "$build_dir" --work "$long"
chmod 700 "$tmp"
expect "munged needs every folder above its socket searchable by all, and $tmp is not (chmod o+x)" \
  --build "$build_dir" --work "$tmp/run"
[ "$(ls -A "$tmp")" = a-file ] || { echo "slurm_local_arguments: FAILED: it made $(ls -A "$tmp")"; failed=1; }
rm -rf "$tmp"
[ "$failed" = 0 ] && echo "slurm_local_arguments: every bad --build and --work refused, nothing made"
exit "$failed"
