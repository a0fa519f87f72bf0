#!/usr/bin/env bash
# A real Slurm on this one machine: munged, slurmctld and slurmd with a generated configuration
# in a work folder (nothing under /etc is read or written; one node with this machine's CPUs and
# two stand-in GPUs, device nodes aliasing /dev/null), then loom-catdog trained as 2 CPU ranks
# by `srun -n 2` and by an sbatch job of deploy/slurm/loom.sbatch (--gpus-per-task 1), each
# checked against `--world-size 2` in one process: the same loss at every step and the same
# metrics every epoch. Also: each rank of the recipe finds its rank, its own GPU and the
# rendezvous, a rank killed mid-epoch ends the other with loom's error, and a job of the recipe
# preempted by SIGUSR1 requeues itself and resumes to the uninterrupted run's losses. Every daemon it
# started is stopped when it ends, passed or failed. ctest -L cluster runs it (tests/cluster).
#   scripts/slurm-local.sh [--build DIR] [--work DIR] [--fail-job] [--shell]
#     --build DIR  a build with apps/catdog/loom-catdog and tests/cluster_tool (default: build)
#     --work DIR   configuration, state, logs and runs (default: a new folder in /tmp, removed
#                  when the checks pass)
#     --fail-job   the sbatch job trains on a folder that does not exist: the run must fail
#     --shell      start the cluster, open a shell with SLURM_CONF set, stop it when it exits
# Exit status: 0 passed, 1 failed, 77 cannot run here (the reason is printed: not root, no Slurm
# or munge, ...). LOOM_CLUSTER_TESTS=required makes that 77 a failure (CI, where it must run).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

say() { echo "slurm-local: $*"; }
fail() {
  say "FAILED: $*" >&2
  exit 1
}
skip() {
  if [ "${LOOM_CLUSTER_TESTS:-}" = required ]; then fail "cannot run here, and LOOM_CLUSTER_TESTS=required: $*"; fi
  say "SKIPPED: $*" >&2
  exit 77
}

build=$here/build work="" fail_job=0 shell=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --work) work=${2:?--work needs a folder}; shift 2 ;;
    --fail-job) fail_job=1; shift ;;
    --shell) shell=1; shift ;;
    *) echo "usage: scripts/slurm-local.sh [--build DIR] [--work DIR] [--fail-job] [--shell]" >&2; exit 2 ;;
  esac
done
build=$(realpath -m "$build")
catdog=$build/apps/catdog/loom-catdog
tool=$build/tests/cluster_tool
for program in "$catdog" "$tool"; do
  [ -x "$program" ] || fail "no $program: build the loom-catdog and cluster_tool targets of $build"
done

# ---- the work folder: checked before anything is made ----------------------------------------
if [ -n "$work" ]; then
  work=$(realpath -m "$work")
  # A unix socket's path has at most 107 bytes.
  [ $((${#work} + 20)) -le 107 ] || fail "--work $work: the path is too long for munged's socket"
  # A folder of an earlier run is reused (its state would bring back that run's jobs); any other
  # folder must be new or empty.
  [ -f "$work/.slurm-local" ] || [ ! -e "$work" ] || [ -z "$(ls -A "$work" 2> /dev/null)" ] ||
    fail "--work $work is not empty and not a folder of an earlier slurm-local run"
  # munged refuses a socket below a folder that others cannot enter.
  for dir in $(d=$work; while [ "$d" != / ]; do d=$(dirname "$d"); echo "$d"; done); do
    [ -d "$dir" ] && [[ ! $(stat -c %A "$dir") == ?????????[xt] ]] &&
      fail "--work $work: munged needs every folder above its socket searchable by all, and $dir is not (chmod o+x)"
  done
fi

# ---- can Slurm run here? -------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "slurmd starts each job's processes as its user, which needs root (this is uid $(id -u))"
for command in munged munge unmunge slurmctld slurmd srun sbatch squeue scancel scontrol sinfo; do
  command -v "$command" > /dev/null ||
    skip "no '$command' on PATH (Debian: slurm-wlm and munge; scripts/install-deps.sh installs them)"
done
node=$(hostname -s)
getent hosts "$node" > /dev/null ||
  skip "this host's name '$node' does not resolve (getent hosts), and loom's ranks meet at the first host of SLURM_STEP_NODELIST"

if [ -z "$work" ]; then
  work=$(mktemp -d /tmp/loom-slurm.XXXXXX)
  remove_work=1
else
  rm -rf "${work:?}"/* "$work/.slurm-local"
  mkdir -p "$work" || fail "--work $work: cannot make the folder"
  remove_work=0
fi
chmod 755 "$work"
touch "$work/.slurm-local"
socket=$work/munge/munge.socket
mkdir -p "$work"/{munge,state,spool,log,dev,tmp,runs}
chmod 755 "$work/munge"
if ! { mknod "$work/dev/nvidia0" c 1 3 && mknod "$work/dev/nvidia1" c 1 3; } 2> /dev/null; then
  [ "$remove_work" = 1 ] && rm -rf "$work"
  skip "cannot make the stand-in GPU device nodes for the recipe's --gpus-per-task (mknod in $work/dev)"
fi
export SLURM_CONF=$work/slurm.conf
# Every process of the jobs carries this (srun and sbatch pass their environment on), so that
# the cleanup finds the ones left behind; the script's own helpers do not.
tag=LOOM_SLURM_LOCAL=$work
pids_file=$work/pids
: > "$pids_file"

# ---- cleanup: every daemon started here, whatever happened ------------------------------------
# A zombie is not alive: the daemons are this shell's children until it waits for them.
alive() {
  local state
  [ -n "$1" ] && state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2> /dev/null) &&
    [ -n "$state" ] && [ "$state" != Z ]
}
children_of() {  # PID: its child processes
  grep -l "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status 2> /dev/null | sed 's|^/proc/\([0-9]*\)/status$|\1|'
}
# The processes this run's jobs left: tasks carry $tag; a slurmstepd names its job, and this
# cluster's job ids start at $first_job.
leftovers() {
  local proc pid cmd job
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    alive "$pid" || continue
    cmd=$(tr '\0' ' ' 2> /dev/null < "$proc/cmdline") || continue
    if [[ $cmd =~ ^slurmstepd:\ \[([0-9]+)\. ]]; then
      job=${BASH_REMATCH[1]}
      [ -n "${first_job:-}" ] && [ "$job" -ge "$first_job" ] && [ "$job" -lt $((first_job + 20)) ] && echo "$pid"
    elif tr '\0' '\n' 2> /dev/null < "$proc/environ" | grep -qxF "$tag"; then
      echo "$pid"
    fi
  done
}
stop_pids() {  # PID...: TERM, up to 10 s to end, then KILL
  local pid left=""
  for pid in "$@"; do kill -TERM "$pid" 2> /dev/null; done
  for _ in $(seq 100); do
    left=""
    for pid in "$@"; do alive "$pid" && left+=" $pid"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for pid in $left; do kill -KILL "$pid" 2> /dev/null; done
  for pid in "$@"; do wait "$pid" 2> /dev/null; done
  return 0
}
cleanup() {
  local status=$? pid jobs strays
  trap - EXIT INT TERM
  if alive "${slurmctld_pid:-}"; then
    jobs=$(squeue -h -o %A 2> /dev/null)
    [ -n "$jobs" ] && scancel $jobs 2> /dev/null
    for _ in $(seq 50); do [ -z "$(squeue -h -o %A 2> /dev/null)" ] && break; sleep 0.2; done
  fi
  # The daemons, slurmctld's helper slurmscriptd with it, then whatever the jobs left.
  local daemons=()
  for pid in "${slurmd_pid:-}" "${slurmctld_pid:-}"; do alive "$pid" && daemons+=("$pid"); done
  [ -n "${slurmctld_pid:-}" ] && daemons+=($(children_of "$slurmctld_pid"))
  [ ${#daemons[@]} -gt 0 ] && stop_pids "${daemons[@]}"
  mapfile -t strays < <(leftovers)
  [ ${#strays[@]} -gt 0 ] && stop_pids "${strays[@]}"
  alive "${munged_pid:-}" && stop_pids "$munged_pid"
  # A job's slurmstepd is the init process's child once it detaches: give init a moment to reap
  # the ones that just ended, so that nothing named slurm is left, not even a zombie.
  for _ in $(seq 20); do
    cat /proc/[0-9]*/status 2> /dev/null |
      awk '/^Name:/ { name = $2 } /^State:/ && name == "slurmstepd" && $2 == "Z" { found = 1 } END { exit !found }' || break
    sleep 0.1
  done
  local left="" name
  while read -r name pid; do alive "$pid" && left+=" $name ($pid)"; done < "$pids_file"
  for pid in $(leftovers); do left+=" job process $pid"; done
  if [ -n "$left" ]; then
    say "FAILED: still running after the cleanup:$left" >&2
    status=1
  fi
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in "$work"/log/*.log; do
      [ -f "$log" ] && { echo "---- tail of $log"; tail -n 15 "$log"; }
    done >&2
    say "logs, configuration and runs kept in $work" >&2
  elif [ "$remove_work" = 1 ]; then
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Ports: Slurm's from 10000-19999, and a first job id whose loom rendezvous ports
# (20000 + job id mod 20000, as srun's ranks compute them) are free too. Both stay below the
# kernel's ephemeral ports (32768 and up on Linux): an outgoing connection of a test running
# beside this one may hold any of those, and slurmd then cannot bind its port (CI saw it).
port_free() { ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((10000 + RANDOM % 10000))
    port_free "$port" && port_free $((port + 1)) && { echo "$port"; return; }
  done
  fail "no free port pair found in 10000-19999"
}
slurm_port=$(free_port) || exit 1
for _ in $(seq 50); do
  first_job=$((1000 + RANDOM % 11000))
  port_free $((20000 + first_job)) && port_free $((20001 + first_job)) &&
    port_free $((20002 + first_job)) && port_free $((20003 + first_job)) && break
done

# ---- the daemons ------------------------------------------------------------------------------
started=$(date +%s.%N)
elapsed() { awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
wait_until() {  # SECONDS WHAT COMMAND...: retry COMMAND every 0.2 s
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
  fail "$what within $seconds s"
}

dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
munged -F --key-file="$work/munge/munge.key" --socket="$socket" --pid-file="$work/munge/munged.pid" \
  --log-file="$work/log/munged.log" --seed-file="$work/munge/munged.seed" > "$work/log/munged.out" 2>&1 &
munged_pid=$!
echo "munged $munged_pid" >> "$pids_file"
munge_works() {
  alive "$munged_pid" || fail "munged ended: $(grep -m 1 Error "$work/log/munged.out")"
  munge -n -S "$socket" 2> /dev/null | unmunge -S "$socket" > /dev/null 2>&1
}
wait_until 10 "munged did not answer on $socket" munge_works

cpus=$(nproc)
: > "$work/plugstack.conf"
cat > "$SLURM_CONF" << EOF
# A one-node cluster of scripts/slurm-local.sh; everything it needs lives in $work.
ClusterName=loomlocal
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$slurm_port
SlurmdPort=$((slurm_port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
PlugStackConfig=$work/plugstack.conf
TmpFS=$work/tmp
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=2
FirstJobId=$first_job
GresTypes=gpu
# At least 2 CPUs, for the two ranks, even where the machine has one.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$((cpus > 2 ? cpus : 2)) Gres=gpu:2 State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=10 State=UP
EOF
echo "NodeName=$node Name=gpu File=$work/dev/nvidia[0-1]" > "$work/gres.conf"

slurmctld -D -f "$SLURM_CONF" > "$work/log/slurmctld.out" 2>&1 &
slurmctld_pid=$!
echo "slurmctld $slurmctld_pid" >> "$pids_file"
slurmd -D -f "$SLURM_CONF" -N "$node" > "$work/log/slurmd.out" 2>&1 &
slurmd_pid=$!
echo "slurmd $slurmd_pid" >> "$pids_file"
node_idle() {
  alive "$slurmctld_pid" || fail "slurmctld ended: $(tail -n 3 "$work/log/slurmctld.out" "$work/log/slurmctld.log" 2> /dev/null)"
  alive "$slurmd_pid" || fail "slurmd ended: $(tail -n 3 "$work/log/slurmd.out" "$work/log/slurmd.log" 2> /dev/null)"
  local state
  state=$(sinfo -h -N -n "$node" -o %t 2> /dev/null)
  [[ $state == *drain* || $state == *inval* ]] && fail "node $node is $state: $(sinfo -h -R)"
  [ "$state" = idle ]
}
wait_until 30 "node $node did not become idle" node_idle
for pid in $(children_of "$slurmctld_pid"); do echo "slurmscriptd $pid" >> "$pids_file"; done
say "cluster up in $(elapsed): node $node, $((cpus > 2 ? cpus : 2)) CPUs, 2 stand-in GPUs, slurmctld port $slurm_port, jobs from $first_job, work $work"

if [ "$shell" = 1 ]; then
  say "SLURM_CONF=$SLURM_CONF; try: srun -n 2 hostname. Leave the shell to stop the cluster."
  PS1='(slurm-local) \w\$ ' bash --norc -i
  exit 0
fi

# ---- the jobs ---------------------------------------------------------------------------------
# Each step runs under `timeout`, within one deadline for the whole run, so that the cleanup
# always gets its turn before ctest's own timeout.
deadline=$((SECONDS + ${LOOM_SLURM_LOCAL_SECONDS:-150}))
bounded() {  # SECONDS COMMAND...: COMMAND under timeout, at most until the deadline
  local limit=$1 left=$((deadline - SECONDS))
  shift
  [ "$left" -gt 0 ] || fail "out of time (LOOM_SLURM_LOCAL_SECONDS) before: $*"
  timeout $((limit < left ? limit : left)) "$@"
}
export OMP_NUM_THREADS=1
"$tool" photos "$work/data" || fail "could not write the photo folder"
runs=$work/runs
train_on() {  # DATA [EPOCHS]: the training of every run, 2 epochs of 6 steps of 2 ranks x 4 images
  train=(train --data "$1" --epochs "${2:-2}" --batch-size 4 --device cpu --workers 0 --seed 3 --print-losses)
}
train_on "$work/data"

# The reference: 2 thread ranks in one process.
bounded 60 "$catdog" "${train[@]}" --world-size 2 --out "$runs/threads.st" > "$runs/threads.out" 2>&1 ||
  fail "loom-catdog --world-size 2 failed: $(tail -n 5 "$runs/threads.out")"

# A run's losses ("step N loss HEX", rank 0's stdout), one "step decimal" per line.
losses() {
  sed -n 's/^step \([0-9]*\) loss \(.*\)$/\1 \2/p' "$1" | while read -r step hex; do printf '%s %.12g\n' "$step" "$hex"; done
}
# The reference's steps and losses, every number of its metrics CSV equal to 1e-6 relative, and
# a header that names the launch.
same_training() {  # NAME OUT METRICS [REFERENCE EPOCHS]: REFERENCE.out, .metrics.csv in $runs
  local name=$1 out=$2 metrics=$3 reference=$runs/${4:-threads} epochs=${5:-2}
  [ "$(losses "$reference.out" | wc -l)" -eq $((6 * epochs)) ] ||
    fail "the reference printed no $((6 * epochs)) losses: $reference.out"
  awk -v name="$name" '
       NR == FNR { want[$1] = $2; n++; next }
       { if (!($1 in want)) { print name ": step " $1 " is not in the reference"; bad = 1; next }
         d = $2 - want[$1]; m = want[$1]
         if (d < 0) d = -d
         if (m < 0) m = -m
         if (d > 1e-6 * m) { print name ": step " $1 " loss " $2 ", the reference " want[$1]; bad = 1 }
         seen++ }
       END { if (seen != n) { print name ": " seen + 0 " steps, the reference " n; bad = 1 }
             exit bad }' <(losses "$reference.out") <(losses "$out") ||
    fail "$name did not train as --world-size 2 did ($out)"
  [ -f "$metrics" ] || fail "$name wrote no $metrics"
  paste -d, "$reference.metrics.csv" "$metrics" | awk -F, -v name="$name" -v epochs="$epochs" '
       NR == 1 { n = NF / 2; next }
       { for (i = 1; i <= n; i++) {
           d = $i - $(i + n); m = $i
           if (d < 0) d = -d
           if (m < 0) m = -m
           if (d > 1e-6 * m + 1e-12) { print name ": metrics row " NR - 1 " column " i ": " $(i + n) ", the reference " $i; bad = 1 } }
         rows++ }
       END { if (rows != epochs) { print name ": " rows + 0 " metrics rows, not " epochs; bad = 1 }
             exit bad }' || fail "$name's metrics differ from --world-size 2's"
  grep -q "world size 2 (launched, tcp), batch 4 per rank, 8 global" "$out" ||
    fail "$name's header does not say 'world size 2 (launched, tcp)': $(grep -m 1 '^loom-catdog: data' "$out")"
}

# srun -n 2: two processes, ranks from SLURM_PROCID, meeting at the node's loom port.
LOOM_SLURM_LOCAL=$work bounded 60 srun -n 2 --time=2 --job-name=loom-srun --kill-on-bad-exit=1 \
  "$catdog" "${train[@]}" --out "$runs/srun.st" > "$runs/srun.out" 2> "$runs/srun.err" ||
  fail "srun -n 2 loom-catdog failed: $(tail -n 5 "$runs/srun.err")"
same_training "srun -n 2" "$runs/srun.out" "$runs/srun.metrics.csv"
say "srun -n 2 loom-catdog train: 12 steps, losses and metrics as --world-size 2 ($(elapsed))"

# A lost rank: rank 1 is killed (SIGKILL) once rank 0 has printed step 3 of a long run. Rank 0
# must end by itself (no --kill-on-bad-exit here) with loom's error, not wait for it.
train_on "$work/data" 100
lost=$runs/lost.out
LOST=$lost LOOM_SLURM_LOCAL=$work bounded 60 srun -n 2 --time=2 --job-name=loom-lost bash -c '
    [ "$SLURM_PROCID" = 0 ] && exec "$@"
    "$@" &
    until grep -q "^step 3 " "$LOST"; do kill -0 $! 2> /dev/null || exit 3; sleep 0.05; done
    kill -KILL $!' rank "$catdog" "${train[@]}" --out "$runs/lost.st" > "$lost" 2> "$runs/lost.err"
status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "srun with rank 1 killed ended with status $status, not a failure in time"
grep -q "^step 3 " "$lost" || fail "rank 0 never printed step 3: $(tail -n 5 "$runs/lost.err")"
grep -q "loom-catdog: error: .*" "$runs/lost.err" || fail "rank 0 did not end with loom's error: $(tail -n 5 "$runs/lost.err")"
say "rank 1 killed at step $(grep -c '^step ' "$lost"): rank 0 stopped with '$(grep -m 1 -o 'loom-catdog: error: .\{0,120\}' "$runs/lost.err")' ($(elapsed))"
train_on "$work/data"

# sbatch JOB_ARGS...: submits the job and waits for its end (polling slurmctld every 0.2 s, where
# sbatch --wait sleeps 2, 4, 8 ... s between looks); its id in $job. Fails when it runs past
# SECONDS; returns the job's exit code.
batch() {  # SECONDS JOB_ARGS...
  local seconds=$1 state="" code
  shift
  [ $((deadline - SECONDS)) -lt "$seconds" ] && seconds=$((deadline - SECONDS))
  [ "$seconds" -gt 0 ] || fail "out of time (LOOM_SLURM_LOCAL_SECONDS) before: sbatch $*"
  job=$(LOOM_SLURM_LOCAL=$work sbatch --parsable "$@") || fail "sbatch $* was refused"
  job=${job%%;*}
  for _ in $(seq $((seconds * 5))); do
    state=$(scontrol show job -o "$job" 2> /dev/null | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p')
    case "$state" in
      PENDING | CONFIGURING | RUNNING | COMPLETING | "") sleep 0.2 ;;
      *) break ;;
    esac
  done
  case "$state" in
    PENDING | CONFIGURING | RUNNING | COMPLETING | "") fail "job $job ($*) did not end within $seconds s (state '$state')" ;;
  esac
  code=$(scontrol show job -o "$job" | sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p')
  [ "${code#* }" = 0 ] || return 1  # ended by a signal
  return "${code% *}"
}

# The recipe itself: sbatch of deploy/slurm/loom.sbatch on 1 node x 2 stand-in GPUs, first what
# each rank discovers (cluster_tool env), then the training.
# --signal: the recipe's SIGUSR1 comes 300 s before the limit, before these 2-minute jobs start.
recipe=(--nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=2 --signal=USR1@5 "$here/deploy/slurm/loom.sbatch")
batch 45 --job-name=loom-env --output="$runs/env.out" "${recipe[@]}" "$tool" env --visible-gpus 1 ||
  fail "job $job, the recipe's rank discovery, failed: $(cat "$runs/env.out" 2> /dev/null)"
port=$((20000 + job % 20000))
for rank in 0 1; do
  grep -qxF "{\"cuda_device\":0,\"cuda_visible_devices\":\"$rank\",\"launcher\":\"srun\",\"local_rank\":$rank,\"local_world_size\":2,\"master_addr\":\"$node\",\"master_port\":$port,\"rank\":$rank,\"world_size\":2}" "$runs/env.out" ||
    fail "rank $rank of the recipe did not find itself rank $rank of 2 with GPU $rank as its cuda:0 and the rendezvous $node:$port: $(cat "$runs/env.out")"
done
say "sbatch deploy/slurm/loom.sbatch: each rank found its rank, its own GPU as cuda:0 and the rendezvous $node:$port ($(elapsed))"

[ "$fail_job" = 1 ] && train_on "$work/no-such-data"
batch 60 --job-name=loom-train --output="$runs/sbatch.out" "${recipe[@]}" "$catdog" "${train[@]}" --out "$runs/sbatch.st" ||
  fail "job $job, sbatch of loom-catdog train, failed: $(tail -n 5 "$runs/sbatch.out" 2> /dev/null)"
same_training "sbatch" "$runs/sbatch.out" "$runs/sbatch.metrics.csv"
say "sbatch deploy/slurm/loom.sbatch loom-catdog train: losses and metrics as --world-size 2 ($(elapsed))"

# Preemption: a 10-epoch job of the recipe gets SIGUSR1, as Slurm's --signal sends it ahead of
# the time limit, once rank 0 has printed step 3. The ranks stop at one step boundary, rank 0
# checkpoints, they exit 143 and the script requeues the job; its second run continues from the
# checkpoint (--resume auto) and must train as an uninterrupted run does.
train_on "$work/data" 10
bounded 60 "$catdog" "${train[@]}" --world-size 2 --out "$runs/long.st" > "$runs/long.out" 2>&1 ||
  fail "loom-catdog --world-size 2 --epochs 10 failed: $(tail -n 5 "$runs/long.out")"
preempted=$runs/preempt.out
job=$(LOOM_SLURM_LOCAL=$work sbatch --parsable --job-name=loom-preempt --output="$preempted" \
        "${recipe[@]}" "$catdog" "${train[@]}" --out "$runs/preempt.st" --resume auto) ||
  fail "sbatch of the preemption job was refused"
job=${job%%;*}
for _ in $(seq 600); do grep -q '^step 3 ' "$preempted" 2> /dev/null && break; sleep 0.05; done
grep -q '^step 3 ' "$preempted" || fail "the preemption job never printed step 3: $(tail -n 5 "$preempted")"
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 $job failed"
# Requeued, the job is pending again, its start held back by Slurm (Reason=BeginTime, about two
# minutes here): released at once, as an administrator may, so that the check takes seconds.
state="" restarts=0
for _ in $(seq $(((deadline - SECONDS) * 5))); do
  info=$(scontrol show job -o "$job" 2> /dev/null)
  state=$(sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' <<< "$info")
  restarts=$(sed -n 's/.* Restarts=\([0-9]*\) .*/\1/p' <<< "$info")
  [ "$state" = PENDING ] && [ "${restarts:-0}" -ge 1 ] && scontrol update jobid="$job" StartTime=now 2> /dev/null
  case "$state" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) break ;;
  esac
  sleep 0.2
done
[ "$state" = COMPLETED ] || fail "the preempted job $job ended $state, not COMPLETED: $(tail -n 8 "$preempted")"
[ "${restarts:-0}" -eq 1 ] || fail "the preempted job $job ran $((${restarts:-0} + 1)) times, not twice"
grep -q "preempted by SIGUSR1" "$preempted" || fail "no rank said it was preempted: $(tail -n 8 "$preempted")"
grep -q "requeueing job $job" "$preempted" || fail "the script did not requeue the job: $(tail -n 8 "$preempted")"
grep -q -- "--resume auto: continuing from $runs/preempt.st.ckpt" "$preempted" ||
  fail "the requeued run did not continue from the checkpoint: $(grep -m 2 'resume auto' "$preempted")"
[ -z "$(find "$runs" -name 'preempt.st*.tmp*' -o -name 'preempt.st*.lock')" ] ||
  fail "the preemption left temporaries or locks: $(find "$runs" -name 'preempt.st*')"
same_training "the preempted and requeued job" "$preempted" "$runs/preempt.metrics.csv" long 10
say "sbatch job preempted (SIGUSR1) at step $(grep -c '^step ' <(sed -n '1,/requeueing/p' "$preempted")), requeued, resumed: losses and metrics as an uninterrupted run ($(elapsed))"
say "passed in $(elapsed)"
