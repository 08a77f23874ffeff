#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test opq: pkg-config, libzmq (libzmq3-dev),
# SQLite (libsqlite3-dev) and GNU parallel (the tests' reference for opq map).
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
# GNU parallel: the reference the opq map tests compare placeholders against (Tests/OPQCLITests/
# ParallelComparisonTests.swift). moreutils ships another `parallel`; only GNU's will do.
if ! parallel --version 2>/dev/null | grep -q '^GNU parallel'; then
    missing+=(parallel)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "bootstrap: swift is not on PATH; install Swift 6 first" >&2; exit 1; }
