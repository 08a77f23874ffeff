# Shared by single-node.sh and netns-cluster.sh (sourced, not run): the parts of a throw-away Slurm in a
# directory that do not depend on how its nodes are laid out. Every function takes the directory as $1.

# A TCP port nobody listens on now (the kernel's pick for a bind to port 0 on every interface).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])'; }

# munged with a fresh key, its socket in DIR/munge.
start_munge() {
    local dir=$1
    mkdir -p "$dir"/{run,log,state,spool,munge}
    chmod 0700 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
}

# The slurm.conf lines every layout shares: munge, no cgroups (linuxproc tracks a job's processes by
# parentage), no accounting, cons_tres + backfill, state and logs under DIR, every job as root.
common_conf() {
    local dir=$1
    cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
MpiDefault=none
CONF
}

# Cancels every job (waiting up to 15 s for them to end), then stops the daemons whose pid files are given
# (SIGTERM, SIGKILL after 5 s), then kills step daemons of jobs that did not end (those with a file open
# under DIR).
stop_slurm() {
    local dir=$1 pidfile pid proc
    shift
    if [ -s "$dir/run/slurmctld.pid" ] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
        SLURM_CONF="$dir/slurm.conf" scancel --user=root 2>/dev/null || true
        for _ in $(seq 150); do
            [ -z "$(SLURM_CONF="$dir/slurm.conf" squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    for pidfile in "$@"; do
        [ -s "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    for proc in /proc/[0-9]*; do
        [ "$(cat "$proc/comm" 2>/dev/null)" = slurmstepd ] || continue
        ls -l "$proc/fd" 2>/dev/null | grep -q " $dir/" && kill -KILL "${proc#/proc/}" 2>/dev/null || true
    done
}
