#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build opq: pkg-config, libzmq (libzmq3-dev) and SQLite
# (libsqlite3-dev). `scripts/bootstrap.sh --tests` (what scripts/test.sh runs) also installs what the
# tests start for real: GNU parallel (the reference for opq map), Prometheus, Chromium and curl (the
# dashboard's tests), iproute2 and tcpdump (hosts in network namespaces, a capture of their traffic), and
# for the deploy tests Slurm and munge (a single-node Slurm), systemd-analyze (the units) and man.
# Swift itself must already be installed. Safe to run again: it installs only what is missing.
set -euo pipefail

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libzmq; then
    missing+=(libzmq3-dev)
fi
# SQLite for the coordinator's journal (GRDB links the system library).
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists sqlite3; then
    missing+=(libsqlite3-dev)
fi
if [ "${1:-}" = "--tests" ] || [ "${1:-}" = "--deploy" ]; then
    # GNU parallel: the reference the opq map tests compare placeholders against (Tests/OPQCLITests/
    # ParallelComparisonTests.swift). moreutils ships another `parallel`; only GNU's will do.
    parallel --version 2>/dev/null | grep -q '^GNU parallel' || missing+=(parallel)
    command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 || missing+=(slurm-wlm)
    command -v munged >/dev/null 2>&1 || missing+=(munge)
    command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
    command -v man >/dev/null 2>&1 || missing+=(man-db)
    # The dashboard's tests: a real Prometheus server scrapes the coordinator, headless Chromium renders the page.
    command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    # GNU time measures a command's peak memory (MapOutputTests).
    [ -x /usr/bin/time ] || missing+=(time)
    # The foreach media example (examples/media-foreach.yaml): WAV → FLAC and spectrograms.
    command -v sox >/dev/null 2>&1 || missing+=(sox)
    command -v flac >/dev/null 2>&1 || missing+=(flac)
    # The network-namespace tests (NetnsTests, run as root): iproute2 and a packet capture.
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "bootstrap: swift is not on PATH; install Swift 6 first" >&2; exit 1; }
