#!/usr/bin/env bash
# Starts a one-host Slurm "cluster": munged, slurmctld and one slurmd per node of slurm.conf (n1, n2,
# both on this host, different ports). PIDs go to $BASE/run/*.pid; logs to $BASE/log/.
# Needs (Debian 12): apt-get install slurmctld slurmd slurm-client munge   (run as root).
# The host name in slurm.conf ("vm") is replaced by this machine's `hostname -s`.
set -e
here=$(cd "$(dirname "$0")" && pwd)
base=${BASE:-/tmp/mlmpi-slurm}
host=$(hostname -s)
if [ -f $base/run/slurmctld.pid ] && kill -0 "$(cat $base/run/slurmctld.pid)" 2>/dev/null; then
  echo "already running (slurmctld pid $(cat $base/run/slurmctld.pid)); run stop.sh first"; exit 1
fi
mkdir -p $base/state $base/spool/n1 $base/spool/n2 $base/run $base/log /etc/slurm
sed -e "s/^SlurmctldHost=vm\$/SlurmctldHost=$host/" -e "s/NodeHostname=vm /NodeHostname=$host /" \
    -e "s#/tmp/mlmpi-slurm/#$base/#g" "$here/slurm.conf" > /etc/slurm/slurm.conf
getent hosts "$host" >/dev/null || echo "127.0.0.1 $host" >> /etc/hosts   # slurmctld must resolve it
[ -s /etc/munge/munge.key ] || { /usr/sbin/mungekey --create 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
if ! pgrep -u munge -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
  sleep 1; cp /run/munge/munged.pid $base/run/munged.pid
fi
munge -n | unmunge | grep STATUS
/usr/sbin/slurmctld -i        # -i: ignore (absent) saved state; writes $base/run/slurmctld.pid
for n in n1 n2; do /usr/sbin/slurmd -N $n; done   # writes $base/run/slurmd.$n.pid
for i in $(seq 30); do        # wait until both nodes are idle
  [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle')" = 2 ] && break; sleep 1
done
sinfo -N -l
