#!/usr/bin/env bash
# Brings up / tears down a throw-away single-node Slurm cluster (Slurm 22.05, Debian 12) that
# lives entirely inside one folder, for tests of code that submits `sbatch --array` jobs.
# Needs root: slurmd must run jobs as the submitting user, and the packages may need installing.
#
#   scripts/slurm_cluster.sh start DIR [--cpus N]   # prints SLURM_CONF=DIR/slurm.conf, writes DIR/env
#   . DIR/env; sbatch --array=0-3 job.sh; squeue; scontrol -o show job ID
#   scripts/slurm_cluster.sh status DIR              # exit 0 when the three daemons answer
#   scripts/slurm_cluster.sh stop DIR                # idempotent; also kills leftover job processes
#
# The cluster: ClusterName=loomtest, one node `loomnode` (NodeAddr=127.0.0.1, CPUs=N, default
# nproc), partition `debug`. Its own munged (socket in DIR), its own free ports, all state, spool,
# logs and pid files in DIR. No slurmdbd, so plain sacct has nothing ("accounting storage is
# disabled"): final task states come from `scontrol -o show job ID` (records kept for
# MinJobAge=600 s), or from DIR/jobcomp.txt (jobcomp/filetxt, one key=value line per finished
# job, with ArrayJobId/ArrayTaskId; `sacct -c` reads it but drops the array fields).
# Network: slurmctld and slurmd listen on 127.0.0.1 only (CommunicationParameters=
# NoCtldInAddrAny,NoInAddrAny); munged and batch job steps use unix sockets in DIR. Not
# restricted here: srun (interactive steps) opens its own ports; this script does not use it.
# Harmless log noise: "mpi/pmix_v4: ... can not load PMIx library" (libpmix is not installed).
set -euo pipefail
# The daemons live in /usr/sbin, which a non-root PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

prog="$(basename "$0")"
die() { echo "$prog: $*" >&2; exit 1; }
usage() { die "usage: $prog start DIR [--cpus N] | stop DIR | status DIR"; }

# --- helpers -------------------------------------------------------------------------------

ensure_installed() {
  local missing=0 b
  for b in slurmctld slurmd munged sbatch squeue sinfo scontrol scancel; do
    command -v "$b" >/dev/null 2>&1 || missing=1
  done
  ((missing)) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    die "slurmctld/slurmd/munged not found; install them as root: apt-get install -y --no-install-recommends slurm-wlm munge"
  fi
  echo "$prog: installing slurm-wlm munge" >&2
  # policy-rc.d in containers keeps the packages' own services from starting; elsewhere they
  # would start on the default ports, which does not disturb ours (separate ports/socket).
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends slurm-wlm munge >&2 \
    || { apt-get update >&2 && apt-get install -y --no-install-recommends slurm-wlm munge >&2; } \
    || die "apt-get install slurm-wlm munge failed"
}

# Ports in use (any state, v4 and v6), so a freshly chosen one does not collide.
used_ports() {
  local h
  # Column 2 is ADDR:PORT in hex (mawk has no strtonum, so bash converts).
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$2 ~ /:/ { split($2, a, ":"); print a[2] }' \
    | while read -r h; do echo $((16#$h)); done | sort -un
}

# A free port below the ephemeral range (32768+), so outgoing connections cannot grab it
# between our check and the daemon's bind. $1: a port to avoid as well.
pick_port() {
  local avoid="${1:-0}" used p i
  used="$(used_ports)"
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    [[ $p -eq $avoid ]] && continue
    grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
  done
  return 1
}

# kill -0 is not enough: daemons are re-parented to PID 1, and an init that reaps late (as in
# some containers) leaves dead ones as zombies for seconds.
alive() {
  local st
  st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  st="${st##*) }"
  [[ ${st%% *} != Z ]]
}

# $1: DIR/run/NAME.pid; prints the pid if a live process named NAME has it (not a reused pid).
pid_of() {
  local pid name
  name="$(basename "$1" .pid)"
  [[ -s $1 ]] || return 1
  pid="$(tr -dc '0-9' <"$1")"
  [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] && alive "$pid" && echo "$pid"
}

# This cluster's job steps: slurmstepd gets a fresh environment from slurmd (no marker
# possible), but keeps our SlurmdLogFile open and runs in its folder (daemon chdir), so another
# cluster's or a real installation's steps are left alone.
cluster_stepds() {
  local dir="$1" p
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
    if [[ $(readlink "$p/cwd" 2>/dev/null) == "$dir/log" ]] \
      || find "$p/fd" -mindepth 1 -maxdepth 1 -lname "$dir/log/slurmd.log" 2>/dev/null | grep -q .; then
      echo "${p#/proc/}"
    fi
  done
  return 0
}

# $@ plus all their descendants.
with_descendants() {
  local all=" $* " added=1 pid ppid table
  table="$(ps -e -o pid= -o ppid=)"
  while ((added)); do
    added=0
    while read -r pid ppid; do
      if [[ $all == *" $ppid "* && $all != *" $pid "* ]]; then all="$all$pid "; added=1; fi
    done <<<"$table"
  done
  echo "$all"
}

# SIGTERM to all given daemons at once (each takes 1-2 s to shut down, so one after the other
# would triple the wait), then SIGKILL whatever is still alive after 5 s. $@: pid files.
stop_daemons() {
  local f pid pids="" i left
  for f in "$@"; do pid="$(pid_of "$f")" && pids="$pids $pid"; done
  [[ -n $pids ]] || return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    left=""
    for pid in $pids; do alive "$pid" && left="$left $pid"; done
    [[ -n $left ]] || return 0
    sleep 0.1
  done
  echo "$prog: still alive 5 s after SIGTERM, sending SIGKILL:$left" >&2
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do
    left=""
    for pid in $pids; do alive "$pid" && left="$left $pid"; done
    [[ -n $left ]] || return 0
    sleep 0.1
  done
}

show_logs() {
  local dir="$1" f
  for f in "$dir"/log/munged.log "$dir"/log/slurmctld.log "$dir"/log/slurmd.log "$dir"/log/*.stderr; do
    [[ -s $f ]] || continue
    echo "----- tail of $f" >&2
    tail -n 25 "$f" >&2
  done
}

# --- commands ------------------------------------------------------------------------------

cmd_stop() {
  local dir="$1" pids i deadline
  [[ -d $dir ]] || return 0
  dir="$(realpath -e -- "$dir")"
  export SLURM_CONF="$dir/slurm.conf"
  # Cancel jobs while the controller still answers, so they end through Slurm (KillWait=2);
  # give their steps at most 10 s to go.
  if pid_of "$dir/run/slurmctld.pid" >/dev/null && [[ -f $SLURM_CONF ]]; then
    timeout 5 scancel --partition=debug >/dev/null 2>&1 || true
    deadline=$((SECONDS + 10))
    while [[ -n $(cluster_stepds "$dir") ]] && ((SECONDS < deadline)); do sleep 0.2; done
  fi
  stop_daemons "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/run/munged.pid"
  # Whatever survived (controller dead, hung step): freeze each step tree first so nothing
  # forks or gets re-parented away between listing and killing, then SIGKILL it.
  for ((i = 0; i < 3; i++)); do
    pids="$(cluster_stepds "$dir" | tr '\n' ' ')"
    [[ -n ${pids// /} ]] || break
    # shellcheck disable=SC2086
    pids="$(with_descendants $pids)"
    echo "$prog: killing leftover job processes:$pids" >&2
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  rm -f "$dir/munge/munge.socket"*
  return 0
}

cmd_status() {
  local dir="$1" d
  [[ -d $dir ]] || { echo "$prog: $dir does not exist" >&2; return 1; }
  dir="$(realpath -e -- "$dir")"
  for d in munged slurmctld slurmd; do
    pid_of "$dir/run/$d.pid" >/dev/null || { echo "$prog: $d is not running" >&2; return 1; }
  done
  SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo -h >/dev/null 2>&1 || { echo "$prog: sinfo does not answer" >&2; return 1; }
}

cmd_start() {
  local dir="$1" cpus="$2" host ctld_port slurmd_port t0 deadline d state=""
  ensure_installed
  [[ $(id -u) -eq 0 ]] || die "start must run as root (slurmd runs jobs as the submitting user)"
  if [[ -e $dir ]]; then
    [[ -d $dir && -z $(ls -A "$dir") ]] || die "$dir exists and is not an empty folder"
  fi
  dir="$(realpath -m -- "$dir")"
  # The path goes unquoted into slurm.conf and munged's options.
  [[ $dir =~ ^[A-Za-z0-9._/+-]+$ ]] || die "$dir: use only letters, digits and . _ / + - in DIR"
  # Unix socket paths are limited to 107 bytes; slurmstepd puts loomnode_JOBID.4294967291 in
  # the spool folder, munged its socket plus ".lock".
  ((${#dir} <= 60)) || die "$dir: path too long for unix sockets (max 60 characters)"
  mkdir -p "$dir"

  # From here on a failure must not leave daemons behind.
  trap 'rc=$?; if ((rc)); then echo "$prog: start failed" >&2; show_logs "'"$dir"'"; cmd_stop "'"$dir"'"; fi' EXIT

  t0=$(date +%s.%N)
  host="$(hostname -s 2>/dev/null || hostname)"
  ctld_port="$(pick_port)" || die "no free port"
  slurmd_port="$(pick_port "$ctld_port")" || die "no free port"
  # 0755: other users' clients must reach the munge socket; munged refuses group/world-writable
  # folders on the way to its key and socket.
  chmod 0755 "$dir"
  mkdir -m 0755 "$dir/munge" "$dir/log" "$dir/run" "$dir/state" "$dir/spool"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  : >"$dir/plugstack.conf" # keep /etc/slurm/plugstack.conf (spank plugins) out
  [[ -n $cpus ]] || cpus="$(nproc)"

  cat >"$dir/slurm.conf" <<EOF
# Generated by $prog for a throw-away test cluster; see the script for why each setting.
ClusterName=loomtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
# Bind 127.0.0.1 (SlurmctldHost's / NodeAddr's address) instead of INADDR_ANY.
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
MailProg=/bin/true
# No cgroups (containers rarely allow them): track job processes by parent pid.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd; finished jobs go to a text file that sacct -c can read.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
# Schedule at submit and at every job end, not on the default 60 s tick.
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Finished jobs (and array tasks) stay visible to scontrol show job for 10 minutes.
MinJobAge=600
KillWait=2
OverTimeLimit=0
InactiveLimit=0
SlurmdTimeout=30
SlurmctldTimeout=30
MessageTimeout=10
# A node DOWN for not responding comes back when its slurmd registers again; one set DOWN by
# scontrol stays DOWN until state=resume.
ReturnToService=1
MpiDefault=none
SwitchType=switch/none
# Use the configured CPU count even if the machine has fewer (more parallel tasks in tests).
SlurmdParameters=config_overrides
NodeName=loomnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=loomnode Default=YES MaxTime=INFINITE State=UP
EOF

  export SLURM_CONF="$dir/slurm.conf"
  # munged forks and returns once its socket is ready; slurmctld/slurmd read the config before
  # they daemonize, so config errors show up as a non-zero exit with the message on stderr.
  munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
    --seed-file="$dir/munge/munged.seed" 2>"$dir/log/munged.stderr" \
    || die "munged failed to start"
  slurmctld -f "$SLURM_CONF" 2>"$dir/log/slurmctld.stderr" || die "slurmctld failed to start"
  slurmd -f "$SLURM_CONF" -N loomnode 2>"$dir/log/slurmd.stderr" || die "slurmd failed to start"

  # Bounded wait (60 s) until the node registered and is idle.
  deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    state="$(timeout 5 sinfo -h -n loomnode -o %T 2>/dev/null || true)"
    [[ $state == idle ]] && break
    for d in munged slurmctld slurmd; do
      [[ -s $dir/run/$d.pid ]] || continue # not written yet
      pid_of "$dir/run/$d.pid" >/dev/null || die "$d died during start-up"
    done
    sleep 0.2
  done
  [[ $state == idle ]] || die "node loomnode not idle after 60 s (state: ${state:-no answer})"
  for d in munged slurmctld slurmd; do pid_of "$dir/run/$d.pid" >/dev/null || die "$d is not running"; done

  {
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "# munged socket, for munge/unmunge --socket (Slurm itself reads it from AuthInfo)"
    echo "export LOOM_MUNGE_SOCKET=$dir/munge/munge.socket"
  } >"$dir/env"
  trap - EXIT
  echo "$prog: cluster up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (ports $ctld_port/$slurmd_port)" >&2
  echo "SLURM_CONF=$SLURM_CONF"
}

(($# >= 2)) || usage
cmd="$1" dir="$2"
shift 2
case "$cmd" in
  start)
    cpus=""
    while (($#)); do
      case "$1" in
        --cpus) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--cpus needs a positive integer"; cpus="$2"; shift 2 ;;
        *) usage ;;
      esac
    done
    cmd_start "$dir" "$cpus" ;;
  stop) (($# == 0)) || usage; cmd_stop "$dir" ;;
  status) (($# == 0)) || usage; cmd_status "$dir" ;;
  *) usage ;;
esac
