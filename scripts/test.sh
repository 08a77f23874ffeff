#!/usr/bin/env bash
# The test command of README.md: sets up a fresh Debian machine, builds, runs every test, then runs the
# benchmark at its smoke size so it keeps working. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
swift build --build-tests
swift test --skip-build
echo "== opq-bench --smoke (debug build: checks the benchmark runs, not the figures)"
swift run --skip-build opq-bench --smoke
