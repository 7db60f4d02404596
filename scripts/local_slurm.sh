#!/usr/bin/env bash
# A one-node SLURM cluster with accounting on this machine, for the `slurm` tests.
#
#   scripts/local_slurm.sh install   apt-get install slurm-wlm munge slurmdbd mariadb-server (root)
#   scripts/local_slurm.sh start     write configs, start munged, MariaDB, slurmdbd, slurmctld,
#                                    slurmd; wait (bounded) until sinfo and sacct answer
#   scripts/local_slurm.sh status    which daemons run, sinfo
#   scripts/local_slurm.sh stop      stop the daemons by the PIDs in their PID files
#
# Configs, databases, spool folders, logs and PID files live in $DPTAUCC_SLURM_STATE (default
# ${TMPDIR:-/tmp}/dptaucc-slurm). /etc/slurm/slurm.conf and slurmdbd.conf become symbolic links
# to them so that sbatch, squeue and sacct find the cluster; the script refuses to replace a
# real configuration there. Needs root, no systemd and no cgroups (processes are tracked
# through /proc). Only loopback networking is used.
set -euo pipefail

STATE=${DPTAUCC_SLURM_STATE:-${TMPDIR:-/tmp}/dptaucc-slurm}
CLUSTER=dptaucc-local
DB_PORT=${DPTAUCC_SLURM_DB_PORT:-3307}
WAIT_S=${DPTAUCC_SLURM_WAIT_S:-60}
ETC=/etc/slurm
PACKAGES="slurm-wlm munge slurmdbd mariadb-server"

say() { echo "[local_slurm] $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }

need_root() { [ "$(id -u)" = "0" ] || die "$1 needs root (it writes $ETC and runs the daemons)"; }

install() {
  if command -v slurmctld >/dev/null && command -v slurmdbd >/dev/null \
     && command -v munged >/dev/null && command -v mariadbd >/dev/null; then
    say "installed: $(slurmctld -V), $(mariadbd --version | cut -d' ' -f1-4)"
    return
  fi
  need_root install
  command -v apt-get >/dev/null || die "apt-get not found: install $PACKAGES by hand"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
  say "installed $PACKAGES"
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS WHAT COMMAND...: run COMMAND every second until it succeeds or time is up
wait_for() {
  local limit=$1 what=$2; shift 2
  local t=0
  until "$@" >/dev/null 2>&1; do
    t=$((t + 1))
    if [ "$t" -ge "$limit" ]; then
      say "gave up after ${limit}s waiting for $what; logs in $STATE/log"
      tail -n 5 "$STATE"/log/*.log >&2 || true
      exit 1
    fi
    [ $((t % 10)) = 0 ] && say "still waiting for $what (${t}s)"
    sleep 1
  done
}

link_conf() {  # link_conf NAME: /etc/slurm/NAME -> $STATE/etc/NAME, never over a real file
  local target=$ETC/$1
  if [ -e "$target" ] && [ ! -L "$target" ]; then
    die "$target is a real configuration (not ours); refusing to replace it"
  fi
  mkdir -p "$ETC"
  ln -sfn "$STATE/etc/$1" "$target"
}

write_configs() {
  local host node mem
  host=$(hostname -s)
  node=$(slurmd -C | head -n1)
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$((mem * 9 / 10))  # leave room for the daemons
  node=$(sed "s/RealMemory=[0-9]*/RealMemory=$mem/" <<<"$node")
  cat >"$STATE/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
JobCompType=jobcomp/none
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$STATE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$STATE/etc/slurmdbd.conf"
  link_conf slurm.conf
  link_conf slurmdbd.conf
}

start_munge() {
  if pid_alive "$STATE/run/munged.pid"; then return; fi
  mkdir -p /run/munge "$STATE/munge"
  chown munge:munge /run/munge "$STATE/munge"
  [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key missing (reinstall munge)"
  runuser -u munge -- munged --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
  wait_for 10 "munged" test -s "$STATE/munge/munged.pid"
  ln -sfn "$STATE/munge/munged.pid" "$STATE/run/munged.pid"
  wait_for 10 "munge to answer" bash -c 'munge -n | unmunge'
}

start_mariadb() {
  if pid_alive "$STATE/run/mariadb.pid"; then return; fi
  local data=$STATE/mysql
  if [ ! -d "$data/mysql" ]; then
    mkdir -p "$data"
    chown mysql:mysql "$data"
    mariadb-install-db --user=mysql --datadir="$data" --auth-root-authentication-method=socket \
      >"$STATE/log/mariadb-install.log" 2>&1
  fi
  # mariadbd does not daemonise itself: run it in the background and record its PID
  # (it runs as mysql: its socket, PID file and log live in its own folder)
  nohup mariadbd --user=mysql --datadir="$data" --socket="$data/mysql.sock" \
    --bind-address=127.0.0.1 --port="$DB_PORT" --pid-file="$data/mariadb.pid" \
    --log-error="$data/mariadb.log" --innodb-buffer-pool-size=64M \
    >/dev/null 2>&1 </dev/null &
  wait_for "$WAIT_S" "MariaDB" mariadb --socket="$data/mysql.sock" -e "select 1"
  ln -sfn "$data/mariadb.pid" "$STATE/run/mariadb.pid"
  mariadb --socket="$data/mysql.sock" <<EOF
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
EOF
}

start_daemon() {  # start_daemon NAME: start slurmdbd/slurmctld/slurmd unless running
  local name=$1
  pid_alive "$STATE/run/$name.pid" && return
  "$name" >>"$STATE/log/$name.out" 2>&1
  wait_for 15 "$name to write its PID file" test -s "$STATE/run/$name.pid"
}

start() {
  need_root start
  command -v slurmctld >/dev/null || die "SLURM is not installed: run '$0 install' first"
  mkdir -p "$STATE"/{etc,run,log,spool/ctld,spool/d}
  chmod 755 "$STATE"
  write_configs
  start_munge
  start_mariadb
  start_daemon slurmdbd
  wait_for "$WAIT_S" "slurmdbd to answer" sacctmgr -n list cluster
  # the cluster must be known to accounting before slurmctld starts
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
  start_daemon slurmctld
  start_daemon slurmd
  wait_for "$WAIT_S" "the node to be idle (sinfo)" \
    bash -c "sinfo -h -o '%t' | grep -Eq '^(idle|mix|alloc)'"
  wait_for "$WAIT_S" "sacct to answer" sacct -n -X -S now-1minutes
  say "cluster $CLUSTER up: $(sinfo -h -o '%P %D node(s) %c CPUs %m MB %t' | head -n1); state in $STATE"
}

stop() {
  local name pidfile pid
  for name in slurmd slurmctld slurmdbd mariadb munged; do
    pidfile=$STATE/run/$name.pid
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      local t=0
      while kill -0 "$pid" 2>/dev/null && [ "$t" -lt 30 ]; do sleep 0.5; t=$((t + 1)); done
      if kill -0 "$pid" 2>/dev/null; then
        say "$name ($pid) still runs after 15 s: SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
      fi
      say "stopped $name ($pid)"
    fi
    rm -f "$pidfile"
  done
  for f in slurm.conf slurmdbd.conf; do
    if [ -L "$ETC/$f" ] && [ "$(readlink "$ETC/$f")" = "$STATE/etc/$f" ]; then rm -f "$ETC/$f"; fi
  done
}

status() {
  local name rc=0
  for name in munged mariadb slurmdbd slurmctld slurmd; do
    if pid_alive "$STATE/run/$name.pid"; then
      echo "$name: running (pid $(cat "$STATE/run/$name.pid"))"
    else
      echo "$name: stopped"; rc=1
    fi
  done
  [ "$rc" = 0 ] && sinfo
  return "$rc"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 install|start|status|stop (state in $STATE)" >&2; exit 2 ;;
esac
