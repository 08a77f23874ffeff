#!/usr/bin/env bash
# The test command of README.md: sets up a fresh Debian machine, builds, runs every test, then runs the
# benchmark at its smoke size so it keeps working. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
swift build --build-tests
# Four runs, so tests that measure deadlines never compete with tests that saturate the machine:
# 1. unit and worker tests (the worker's cancel and timeout tests measure sub-second deadlines);
# 2. tests that start the real executables (they block threads on sockets while processes run);
# 3. the seeded random-workload test of the core, which keeps both cores busy for about a minute;
# 4. the coordinator kill -9 tests (DurabilityTests), which keep 9 command slots busy for about a minute
#    and would disturb the timing of phase 2's cancel and worker-loss tests;
# 5. the fuzz smoke (scripts/fuzz.sh --smoke): builds the libFuzzer targets in Fuzz/.build, runs each for
#    5 s, then floods a coordinator with 20,000 hostile messages (CoordinatorFuzzTests, kept out of phase 2
#    for the same reason as phase 4).
processes='OPQEndToEndTests|OPQCLITests'
swift test --skip-build --skip "RandomWorkload|$processes"
swift test --skip-build --filter "$processes" --skip "DurabilityTests|CoordinatorFuzzTests"
swift test --skip-build --filter RandomWorkload
swift test --skip-build --filter DurabilityTests
scripts/fuzz.sh --smoke
echo "== opq-bench smoke runs (debug build: they check the benchmarks run, not the figures)"
swift run --skip-build opq-bench --smoke
swift run --skip-build opq-bench cluster --smoke
swift run --skip-build opq-bench map --smoke
