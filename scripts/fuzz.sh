#!/usr/bin/env bash
# Fuzzes opq (README.md, "Fuzzing"):
#  1. libFuzzer over every decoder (Fuzz/: opq-fuzz-wire = frames, the four protobuf envelopes, their
#     validation and conversions; opq-fuzz-jobfile = YAML and JSON job files, map templates), built with
#     -sanitize=fuzzer,address in Fuzz/.build, from the committed seeds in Fuzz/Corpus/TARGET;
#  2. the coordinator-level fuzz test (Tests/OPQEndToEndTests/CoordinatorFuzzTests.swift): hostile
#     messages to a real coordinator over real ZeroMQ, checked after every batch.
#
# Usage: scripts/fuzz.sh [--smoke] [--seconds N] [--messages N] [--target wire|jobfile]... [--no-libfuzzer] [--no-coordinator]
#   --smoke        what CI runs: 5 s per libFuzzer target, 20,000 coordinator messages
#   --seconds N    libFuzzer time per target (default 300)
#   --messages N   coordinator messages (default 1,000,000; OPQ_FUZZ_MESSAGES)
# The coordinator test also reads OPQ_FUZZ_SEED, OPQ_FUZZ_BATCH, OPQ_FUZZ_AVOID (default none: prunes and
# disconnects included) and OPQ_FUZZ_MAX_RSS_MB; it needs `swift build --build-tests` first.
# A libFuzzer crash leaves its input in Fuzz/.build/crashes/; replay it with the command printed.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=300
messages=${OPQ_FUZZ_MESSAGES:-1000000}
targets=()
libfuzzer=1
coordinator=1
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) seconds=5; messages=20000 ;;
        --seconds) seconds="$2"; shift ;;
        --messages) messages="$2"; shift ;;
        --target) targets+=("$2"); shift ;;
        --no-libfuzzer) libfuzzer=0 ;;
        --no-coordinator) coordinator=0 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=(wire jobfile)

status=0
if [ "$libfuzzer" = 1 ]; then
    flags=(-c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
    for target in "${targets[@]}"; do
        echo "== building opq-fuzz-$target (libFuzzer + AddressSanitizer)"
        # The linker warns about every ASan symbol it cannot export; only errors matter.
        mkdir -p Fuzz/.build
        build_log=Fuzz/.build/build-$target.log
        built=0
        swift build --package-path Fuzz "${flags[@]}" --product "opq-fuzz-$target" > "$build_log" 2>&1 || built=$?
        grep -v "Cannot export local symbol" "$build_log" || true
        [ "$built" = 0 ] || { echo "fuzz.sh: building opq-fuzz-$target failed (exit $built)" >&2; exit 1; }
    done
    bin=$(swift build --package-path Fuzz "${flags[@]}" --show-bin-path)
    for target in "${targets[@]}"; do
        corpus=Fuzz/.build/corpus/$target
        crashes=Fuzz/.build/crashes
        mkdir -p "$corpus" "$crashes"
        echo "== libFuzzer: opq-fuzz-$target for $seconds s (seeds Fuzz/Corpus/$target, corpus $corpus)"
        # Inputs up to 64 KiB; one that runs longer than 10 s counts as a hang. New inputs go to $corpus
        # (not committed); the seeds stay as they are.
        log=Fuzz/.build/fuzz-$target.log
        if nice "$bin/opq-fuzz-$target" "$corpus" "Fuzz/Corpus/$target" -max_total_time="$seconds" \
                -max_len=65536 -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$crashes/$target-" \
                -print_final_stats=1 >"$log" 2>&1; then
            grep -E "^(Done|stat::(number_of_executed_units|new_units_added|peak_rss_mb))" "$log" || true
        else
            tail -n 80 "$log"
            echo "fuzz.sh: opq-fuzz-$target failed (log $log); replay: $bin/opq-fuzz-$target $crashes/$target-*" >&2
            status=1
        fi
    done
fi

if [ "$coordinator" = 1 ]; then
    echo "== coordinator fuzz: $messages hostile messages (CoordinatorFuzzTests)"
    OPQ_FUZZ_MESSAGES=$messages swift test --skip-build --filter CoordinatorFuzzTests || status=1
fi
exit $status
