#!/usr/bin/env bash
# Stops what hosts_start.sh started: the two sshd (by their pid files) and the namespaces.
base=${BASE:-/tmp/mlmpi-hosts}
for n in 1 2; do
  [ -f "$base/sshd.h$n.pid" ] && kill "$(cat "$base/sshd.h$n.pid")" 2>/dev/null
  rm -f "$base/sshd.h$n.pid"
done
ip netns del mlmpi-h1 2>/dev/null
ip netns del mlmpi-h2 2>/dev/null
true
