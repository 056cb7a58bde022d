#!/usr/bin/env bash
# Two "hosts" on this machine for a multi-host MPI run: network namespaces mlmpi-h1 and mlmpi-h2
# joined by a veth pair (10.27.0.1 and 10.27.0.2), each running its own sshd in its own UTS
# namespace (host names h1 and h2, so MPI does not take them for one node and talks TCP between
# them). A key made here is the only one sshd accepts; ssh_wrapper.sh uses it (hydra's
# -launcher-exec). Needs root, iproute2 and openssh-server. Undo with hosts_stop.sh.
set -e
here=$(cd "$(dirname "$0")" && pwd)
base=${BASE:-/tmp/mlmpi-hosts}
mkdir -p "$base" /run/sshd
ip netns add mlmpi-h1
ip netns add mlmpi-h2
ip link add mlmpi-v1 type veth peer name mlmpi-v2
ip link set mlmpi-v1 netns mlmpi-h1
ip link set mlmpi-v2 netns mlmpi-h2
for n in 1 2; do
  ip -n mlmpi-h$n addr add 10.27.0.$n/24 dev mlmpi-v$n
  ip -n mlmpi-h$n link set mlmpi-v$n up
  ip -n mlmpi-h$n link set lo up
done
[ -f "$base/id" ] || ssh-keygen -q -t ed25519 -N "" -f "$base/id"
[ -f "$base/host_key" ] || ssh-keygen -q -t ed25519 -N "" -f "$base/host_key"
cp "$base/id.pub" "$base/authorized_keys"
for n in 1 2; do
  cat > "$base/sshd_config.h$n" <<CONF
ListenAddress 10.27.0.$n
Port 22
HostKey $base/host_key
AuthorizedKeysFile $base/authorized_keys
PidFile $base/sshd.h$n.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AcceptEnv *
CONF
  ip netns exec mlmpi-h$n unshare --uts sh -c "hostname h$n; exec /usr/sbin/sshd -f $base/sshd_config.h$n"
done
cat > "$base/ssh_config" <<CONF
Host *
  IdentityFile $base/id
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
CONF
for n in 1 2; do  # each host reaches the other through its sshd
  ip netns exec mlmpi-h1 ssh -F "$base/ssh_config" 10.27.0.$n hostname
done
