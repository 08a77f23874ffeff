#!/usr/bin/env bash
# Builds opq's release binaries with the Swift standard library and Foundation linked in statically, and
# installs them with man pages and shell completions, so the machine that runs them needs no Swift
# toolchain (only Debian's libsqlite3-0, which `ldd` lists, and libzmq5, which every binary opens with
# dlopen on its first ZeroMQ call: `ldd` does not list it, and `opq status` and `opq --version` never open it).
#
#   scripts/install.sh [--prefix DIR] [--scratch-path DIR] [--keep-symbols]
#
#   --prefix DIR        where to install (default /usr/local):
#                         DIR/bin/opq, DIR/bin/opq-coordinator, DIR/bin/opq-worker
#                         DIR/share/man/man1/opq*.1
#                         DIR/share/bash-completion/completions/opq*
#                         DIR/share/zsh/site-functions/_opq*
#                         DIR/share/fish/vendor_completions.d/opq*.fish
#   --scratch-path DIR  SwiftPM's build directory (default .build; a separate one keeps a debug build's
#                       products apart from the release build).
#   --keep-symbols      install the binaries unstripped (≈ 95 MB instead of ≈ 65 MB each; symbol names in
#                       crash backtraces and for perf/gdb). By default they are stripped.
#
# The git revision (`git describe --always --dirty`) is compiled in, so `opq --version` names it.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
scratch=.build
strip=(-s)
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --scratch-path) scratch="${2:?--scratch-path needs a directory}"; shift 2 ;;
        --scratch-path=*) scratch="${1#--scratch-path=}"; shift ;;
        --keep-symbols) strip=(); shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

revision=$(git describe --always --dirty --abbrev=12 2>/dev/null || true)
[ -n "$revision" ] || revision=unknown
# The revision reaches Swift as a C macro of the COPQBuildInfo target (see Sources/OPQVersion).
# --disable-local-rpath: no RUNPATH $ORIGIN (the binaries load no library of their own), so the dynamic
# loader neither reads /proc/self/exe to expand it nor first looks for libzmq and the libraries it needs
# in the binary's directory and its hardware subdirectories (issue 19: 15 failed opens at each start).
build=(swift build -c release --static-swift-stdlib --disable-local-rpath --scratch-path "$scratch" -Xcc "-DOPQ_GIT_REVISION=\"$revision\"")
products=(opq opq-coordinator opq-worker)
echo "install.sh: building ${products[*]} (release, static Swift runtime, revision $revision)" >&2
for product in "${products[@]}"; do
    # Every binary stays position-independent (address randomisation). Linking opq -no-pie would start
    # `opq status` in 5.2 instead of 6.2 ms CPU (issue 19, `opq-bench start`): not worth the hardening.
    "${build[@]}" --product "$product"
done
bin=$("${build[@]}" --show-bin-path)

install -d "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
for product in "${products[@]}"; do
    install -m 0755 "${strip[@]}" "$bin/$product" "$prefix/bin/$product"
    # Completions come from the installed binary itself (swift-argument-parser).
    "$prefix/bin/$product" --generate-completion-script bash >"$prefix/share/bash-completion/completions/$product"
    "$prefix/bin/$product" --generate-completion-script zsh >"$prefix/share/zsh/site-functions/_$product"
    "$prefix/bin/$product" --generate-completion-script fish >"$prefix/share/fish/vendor_completions.d/$product.fish"
done

# Man pages: swift-argument-parser's generate-manual tool, built from the checkout SwiftPM resolved
# (no network), run on each installed binary (it reads the binary's --experimental-dump-help).
parser=$(swift package --scratch-path "$scratch" show-dependencies --format json |
    python3 -c 'import json,sys
def walk(d):
    for p in d.get("dependencies", []):
        if p["identity"] == "swift-argument-parser": print(p["path"]); sys.exit()
        walk(p)
walk(json.load(sys.stdin))')
manual=(swift build -c release --package-path "$parser" --scratch-path "$scratch/generate-manual" --product generate-manual)
"${manual[@]}" >&2
generator="$("${manual[@]}" --show-bin-path)/generate-manual"
for product in "${products[@]}"; do
    "$generator" "$prefix/bin/$product" --output-directory "$prefix/share/man/man1" \
        --section 1 --authors "the opq authors" >/dev/null
done

echo "install.sh: installed into $prefix:" >&2
"$prefix/bin/opq" --version >&2
ls "$prefix/bin/opq" "$prefix/bin/opq-coordinator" "$prefix/bin/opq-worker" "$prefix/share/man/man1" >&2
