# The run machinery of the bench scripts (sourced by run_scaling.sh and run_ddp_overhead.sh):
# each run in its own process group with its output in OUT/NAME.log, stopped whole past
# RUN_TIMEOUT_S or DEADLINE (epoch seconds), nvidia-smi's clocks of every GPU before and after
# it; a failure is recorded in $failed, never fatal. The sourcing script sets out, run_timeout,
# clocks_csv and placement ("" for no sampling).
# shellcheck shell=bash disable=SC2154,SC2034
failed=0
note() { echo "$*" >&2; }

# A process that has not ended (a zombie has ended: it waits only for us to reap it).
running() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

clocks() {  # LABEL: one line per GPU, "label, time, index, clocks.sm, clocks.max.sm, power.draw, temperature.gpu"
  local t
  t=$(date -u +%H:%M:%S)
  [ -s "$clocks_csv" ] || echo "label, time, index, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], temperature.gpu" > "$clocks_csv"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null \
    | sed "s/^/$1, $t, /" >> "$clocks_csv"
}

# The running child's process group, stopped with everything in it if this script is stopped.
child=""
stop_child() {
  [ -n "$child" ] || return 0
  kill -TERM -- "-$child" 2>/dev/null
  sleep 3
  kill -KILL -- "-$child" 2>/dev/null
  child=""
}
trap 'stop_child; exit 143' TERM INT

# The seconds a run may take: RUN_TIMEOUT_S, or what is left before DEADLINE (0: none left).
allowed() {
  local limit=$run_timeout
  if [ -n "${DEADLINE:-}" ]; then
    local left=$(( DEADLINE - $(date +%s) ))
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  [ "$limit" -gt 0 ] || limit=0
  echo "$limit"
}

# run NAME SAMPLE COMMAND...: output to OUT/NAME.log (the report itself goes to OUT/NAME/), in its
# own process group, stopped whole past its allowed time. SAMPLE=1: nvidia-smi's compute
# processes sampled into PLACEMENT_SAMPLES meanwhile, the command's children into its .pids.
run() {
  local name=$1 sample=$2
  shift 2
  local limit
  limit=$(allowed)
  if [ "$limit" -lt 20 ]; then
    note "== $name: not run (${limit} s left before the deadline)"
    echo "not run: ${limit} s left before the deadline" > "$out/$name.log"
    failed=1
    return 0
  fi
  note "== $name (at most ${limit} s)"
  clocks "before $name"
  [ "$sample" = 1 ] && : > "$placement.pids"
  setsid "$@" > "$out/$name.log" 2>&1 &
  child=$!
  [ "$sample" = 1 ] && echo "$child parent -" >> "$placement.pids"
  local end=$((SECONDS + limit)) rc
  while running "$child"; do
    if [ "$SECONDS" -ge "$end" ]; then
      note "   still running after ${limit} s: stopped"
      echo "run_scaling.sh: stopped after ${limit} s" >> "$out/$name.log"
      local pgid=$child
      stop_child
      wait "$pgid" 2>/dev/null
      failed=1
      clocks "after $name"
      return 0
    fi
    if [ "$sample" = 1 ]; then
      local t c
      t=$(date +%s.%N)
      nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>/dev/null \
        | sed "s/^/$t, /" >> "$placement"
      for c in $(pgrep -P "$child" 2>/dev/null); do
        grep -q "^$c " "$placement.pids" && continue
        local rank world
        rank=$(tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | sed -n 's/^LOCAL_RANK=//p')
        world=$(tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | sed -n 's/^WORLD_SIZE=//p')
        [ -n "$rank" ] && echo "$c world${world:-?}-rank$rank $rank" >> "$placement.pids"
      done
      sleep 0.5
    else
      sleep 0.5
    fi
  done
  wait "$child"
  rc=$?
  child=""
  clocks "after $name"
  # 3 is the benches' "ranks differ": the report is still written.
  if [ "$rc" -ne 0 ]; then
    note "   failed, status $rc (see $out/$name.log)"
    failed=1
  fi
}
