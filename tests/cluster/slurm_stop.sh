#!/usr/bin/env bash
# Stops what start.sh started, by the PIDs in its pid files (slurmd first, then slurmctld, then munged),
# waiting up to 10 s for each; then ends (by PID) any slurmstepd left behind by this cluster's slurmds
# (recognised by its cwd = $BASE/log), which otherwise keeps its slurmd from exiting.
base=${BASE:-/tmp/mlmpi-slurm}
stepds() { for p in $(pgrep -x slurmstepd); do [ "$(readlink /proc/$p/cwd)" = "$base/log" ] && echo $p; done; }
for f in $base/run/slurmd.n1.pid $base/run/slurmd.n2.pid $base/run/slurmctld.pid $base/run/munged.pid; do
  [ -f "$f" ] || continue; p=$(cat "$f")
  if [ -n "$p" ] && kill "$p" 2>/dev/null; then
    for i in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$p" 2>/dev/null; then
      for s in $(stepds); do echo "killing leftover slurmstepd $s"; kill -9 $s; done; sleep 1
      kill -0 "$p" 2>/dev/null && { kill -9 "$p"; echo "killed $(basename $f .pid) ($p) with SIGKILL"; } || echo "stopped $(basename $f .pid) ($p)"
    else echo "stopped $(basename $f .pid) ($p)"; fi
  fi
  rm -f "$f"
done
for s in $(stepds); do echo "killing leftover slurmstepd $s"; kill -9 $s; done
