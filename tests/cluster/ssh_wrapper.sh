#!/usr/bin/env bash
# ssh with hosts_start.sh's key and settings (hydra: -launcher-exec or HYDRA_LAUNCHER_EXEC).
exec ssh -F "${BASE:-/tmp/mlmpi-hosts}/ssh_config" "$@"
