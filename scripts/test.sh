#!/usr/bin/env bash
# The test command of README.md: sets up a fresh Debian machine, builds, runs every test, then runs the
# benchmark at its smoke size so it keeps working. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
swift build --build-tests
# Four runs (and the deploy phase, 5.), so tests that measure deadlines never compete with tests that saturate the machine:
# 1. unit and worker tests (the worker's cancel and timeout tests measure sub-second deadlines);
# 2. tests that start the real executables (they block threads on sockets while processes run);
# 3. the seeded random-workload test of the core, which keeps both cores busy for about a minute;
# 4. the coordinator kill -9 tests (DurabilityTests), which keep 9 command slots busy for about a minute
#    and would disturb the timing of phase 2's cancel and worker-loss tests.
processes='OPQEndToEndTests|OPQCLITests'
swift test --skip-build --skip "RandomWorkload|$processes"
swift test --skip-build --filter "$processes" --skip "DurabilityTests|InstallTests|SlurmTests"
swift test --skip-build --filter RandomWorkload
swift test --skip-build --filter DurabilityTests
# 5. deploy: scripts/install.sh into a temporary prefix once (a release build with a static Swift
#    runtime: minutes), then the installed binaries with the toolchain hidden, their man pages and
#    completions, and the systemd units; then both Slurm modes on a single-node Slurm (about a minute).
scripts/bootstrap.sh --deploy
install_prefix=$(mktemp -d "${TMPDIR:-/tmp}/opq-install.XXXXXX")
scripts/install.sh --prefix "$install_prefix" --scratch-path .build/install
OPQ_INSTALL_PREFIX="$install_prefix" swift test --skip-build --filter InstallTests
rm -rf "$install_prefix"
swift test --skip-build --filter SlurmTests
echo "== opq-bench smoke runs (debug build: they check the benchmarks run, not the figures)"
swift run --skip-build opq-bench --smoke
swift run --skip-build opq-bench cluster --smoke
swift run --skip-build opq-bench map --smoke
