#!/usr/bin/env bash
# Regenerates Sources/OPQWire/Generated/opq.pb.swift from Sources/OPQWire/opq.proto.
#
# Run it after every change to opq.proto and commit both files together; the build and CI never run
# protoc (building the protoc-gen-swift plugin takes ~10 minutes on a small machine).
#
#   scripts/generate-protocol.sh            # uses (or builds once) the cached plugin
#
# Needs `protoc` (Debian: protobuf-compiler) and a Swift toolchain. The plugin is built from
# swift-protobuf at the version Package.resolved pins (resolved first if the file is missing), so the
# generated code always matches the runtime library the package links, and cached in $OPQ_TOOLS_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/opq-tools/protoc-gen-swift-<version>). Environment overrides:
#   PROTOC_GEN_SWIFT    path to an existing protoc-gen-swift binary of the pinned version (skips the build)
#   SWIFT_PROTOBUF_URL  where to clone swift-protobuf from (default https://github.com/apple/swift-protobuf.git)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
proto_dir="$root/Sources/OPQWire"
out_dir="$proto_dir/Generated"

# The swift-protobuf version the package resolves to (Package.resolved is not committed: resolve first).
[[ -f "$root/Package.resolved" ]] || (cd "$root" && swift package resolve)
version="$(sed -n '/"identity" : "swift-protobuf"/,/}/s/.*"version" : "\([^"]*\)".*/\1/p' "$root/Package.resolved")"
if [[ -z "$version" ]]; then
  echo "error: swift-protobuf is not pinned in Package.resolved" >&2
  exit 1
fi

command -v protoc >/dev/null || { echo "error: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

plugin="${PROTOC_GEN_SWIFT:-}"
if [[ -z "$plugin" ]]; then
  cache="${OPQ_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opq-tools}/protoc-gen-swift-$version"
  plugin="$cache/protoc-gen-swift"
  if [[ ! -x "$plugin" ]]; then
    echo "building protoc-gen-swift $version into $cache (once; ~10 minutes)…" >&2
    src="$cache/src"
    rm -rf "$src"
    mkdir -p "$cache"
    git clone --quiet "${SWIFT_PROTOBUF_URL:-https://github.com/apple/swift-protobuf.git}" "$src"
    git -C "$src" checkout --quiet "$version"
    (cd "$src" && swift build -c release --product protoc-gen-swift)
    cp "$(cd "$src" && swift build -c release --show-bin-path)/protoc-gen-swift" "$plugin"
    rm -rf "$src"
  fi
fi

plugin_version="$("$plugin" --version 2>/dev/null | awk '{print $NF}')"
if [[ "$plugin_version" != "$version" ]]; then
  echo "error: $plugin is version '$plugin_version', Package.resolved pins $version" >&2
  exit 1
fi

mkdir -p "$out_dir"
protoc \
  --plugin=protoc-gen-swift="$plugin" \
  --proto_path="$proto_dir" \
  --swift_out="$out_dir" \
  --swift_opt=Visibility=Public \
  --swift_opt=FileNaming=DropPath \
  "$proto_dir/opq.proto"
echo "wrote ${out_dir#"$root/"}/opq.pb.swift (protoc-gen-swift $version)" >&2
