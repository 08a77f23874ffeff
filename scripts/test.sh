#!/usr/bin/env bash
# The test command of README.md: sets up a fresh Debian machine, builds, runs every test, then runs the
# benchmarks at their smoke size so they keep working. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh --tests
swift build --build-tests
# The suite runs in phases only where a phase measures something a saturated machine would blur:
# 1. every test but those below, in three runs: first the pure unit tests (core, wire, job files, journal,
#    coordinator state, dashboard, client types: CPU-bound, seconds of seeded and mutated inputs), then the
#    unit tests with threads, processes and sockets (worker, runtime, ZeroMQ, coordinator loop: some time
#    a cancel or a shutdown to the second), then the end-to-end process and CLI tests, whose dozens of
#    processes saturate the machine. Swift Testing runs every test of a run on one pool of threads, as
#    many as cores: run together, the CPU-bound tests held both threads and the worker's tests waited
#    for them past their own deadlines (40 s on a loaded machine);
# 2. the heavy ones, which keep both cores busy and would stretch phase 1's deadlines: the core's seeded
#    random workloads (with and without resources), the coordinator kill -9 rounds (DurabilityTests) and the cancels under 2 × cores
#    CPU-bound commands (CancelUnderLoadTests, which is meant to run on a saturated machine);
# 3. WorkerTrustTests, whose workers hold 1.5 s leases (a worker stopped with SIGSTOP past its lease):
#    a busy machine must not end a lease spuriously there;
# 4. CURVE across processes and network namespaces (CurveTests, NetnsTests: root and iproute2, which
#    bootstrap installs): their workers beat every 0.5 s and are lost after 1.5 s of silence, and a
#    partition's requeue is timed, so a saturated machine must not declare a worker lost spuriously;
# 5. the fuzz smoke (scripts/fuzz.sh --smoke): builds the libFuzzer targets in Fuzz/.build, runs each for
#    5 s, then floods a coordinator with 20,000 hostile messages (CoordinatorFuzzTests, kept out of phase 1
#    for the same reason as phase 2);
# 6. deploy: scripts/install.sh into a temporary prefix once (a release build with a static Swift
#    runtime: minutes), then the installed binaries with the toolchain hidden, their man pages and
#    completions, and the systemd units; then both Slurm modes on a single-node Slurm and one allocation
#    on a two-node Slurm in network namespaces (about two minutes);
# 7. ManyClientsTests (issue 11): ~10,000 client connections hold almost all of this process's descriptors
#    (RLIMIT_NOFILE), so it runs alone (about 10 s).
# Each phase's output also goes to a log; when a phase fails, what failed is printed again at the very end,
# so the last lines of a CI log (often all a reader gets) name the failing tests and their messages.
phase() { # phase NAME COMMAND...
    local name=$1 log status
    shift
    log=$(mktemp "${TMPDIR:-/tmp}/opq-test-phase.XXXXXX")
    set +e
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
        echo
        echo "== FAILED: phase '$name' (exit $status): $*"
        echo "== what failed (from $log):"
        grep -E -A4 '✘|recorded an issue|error: |[Ff]atal error|Crash|Test Case .* failed|Assertion failed' "$log" \
            | grep -v -E '^(--|.*✔)' | tail -n 90 || true
        echo "== FAILED: phase '$name' (exit $status)"
        exit "$status"
    fi
    rm -f "$log"
}
heavy='RandomWorkload|ResourceWorkload|DurabilityTests|CancelUnderLoadTests'
fuzz='CoordinatorFuzzTests'
deploy='InstallTests|SlurmTests'
curve='CurveTests|NetnsTests'
many='ManyClientsTests'
pure='^(OPQCoreTests|OPQJobFileTests|OPQWireTests|OPQJournalTests|OPQDashboardTests|OPQCoordinatorStateTests|OPQClientTests)\.'
threaded='^(OPQRuntimeTests|OPQWorkerTests|ZeroMQTests|OPQCoordinatorTests)\.'
phase "1a pure units" swift test --skip-build --filter "$pure" --skip "$heavy|$fuzz|WorkerTrustTests|$curve|$deploy|$many"
phase "1a units with threads and processes" swift test --skip-build --filter "$threaded" --skip "$heavy|$fuzz|WorkerTrustTests|$curve|$deploy|$many"
phase "1b processes and CLI" swift test --skip-build --filter '^(OPQEndToEndTests|OPQCLITests)\.' --skip "$heavy|$fuzz|WorkerTrustTests|$curve|$deploy|$many"
phase "2 heavy" swift test --skip-build --filter "$heavy"
phase "3 worker trust" swift test --skip-build --filter WorkerTrustTests
phase "4 curve and netns" swift test --skip-build --filter "$curve"
phase "5 fuzz smoke" scripts/fuzz.sh --smoke
install_prefix=$(mktemp -d "${TMPDIR:-/tmp}/opq-install.XXXXXX")
trap 'rm -rf "$install_prefix"' EXIT
scripts/install.sh --prefix "$install_prefix" --scratch-path .build/install
OPQ_INSTALL_PREFIX="$install_prefix" phase "6 install" swift test --skip-build --filter InstallTests
phase "6 slurm" swift test --skip-build --filter SlurmTests
phase "7 many clients" swift test --skip-build --filter "$many"
echo "== opq-bench smoke runs (debug build: they check the benchmarks run, not the figures)"
swift run --skip-build opq-bench --smoke
swift run --skip-build opq-bench cluster --smoke
swift run --skip-build opq-bench map --smoke
swift run --skip-build opq-bench cancel --smoke
swift run --skip-build opq-bench wire --smoke
swift run --skip-build opq-bench prune --smoke
swift run --skip-build opq-bench jobfile --smoke
swift run --skip-build opq-bench start --smoke
