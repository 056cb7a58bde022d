#!/usr/bin/env bash
# on_host.sh NAME COMMAND...: run COMMAND with host name NAME (its own UTS namespace), as if on
# that host; with hydra, also points its ssh launcher at ssh_wrapper.sh (hosts_start.sh's key).
name=$1; shift
export HYDRA_LAUNCHER_EXEC=${HYDRA_LAUNCHER_EXEC:-$(cd "$(dirname "$0")" && pwd)/ssh_wrapper.sh}
exec unshare --uts sh -c 'hostname "$0"; exec "$@"' "$name" "$@"
