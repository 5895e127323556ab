#!/usr/bin/env bash
# One entry point for CI: fetch, build the initramfs for a scenario, boot it.
#
# usage: e2e.sh SCENARIO_DIR [--add SRC:DEST]... [--module NAME]... [--timeout SECS] [--verbose]
#
# A scenario directory holds:
#   run.sh      (required) run by busybox sh inside the guest, from /scenario; prints
#               "PASS <name>" / "FAIL <name>: reason" lines (and "INFO ..." lines).
#   prepare.sh  (optional) run on the host first as `prepare.sh OUTDIR`; it may build
#               things into OUTDIR and prints one SRC:DEST per line on stdout, each
#               becoming an --add for build-initramfs.sh (libraries come along).
#   anything else: copied to /scenario in the guest.
# Exit status is run.sh's (0 = all passed).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="${TUNEUP_VM_CACHE:-$HOME/.cache/tuneup-vm}"

(($#)) || { sed -n '2,13p' "$0"; exit 64; }
scenario=$(cd "$1" && pwd); shift
build_args=() run_args=()
while (($#)); do
  case $1 in
    --add|--module) build_args+=("$1" "$2"); shift 2 ;;
    --timeout) run_args+=("$1" "$2"); shift 2 ;;
    --verbose|-v) run_args+=("$1"); shift ;;
    *) echo "e2e: unknown argument: $1" >&2; exit 64 ;;
  esac
done

# One VM at a time on this machine: runs queue on a lock (QEMU under TCG wants a whole core).
mkdir -p "$CACHE"
exec 9>"$CACHE/.vm.lock"
flock 9

"$HERE/fetch.sh"

# Shell functions every scenario's run.sh may read (`. /lib/tuneup-vm.sh`).
build_args+=(--add "$HERE/guest-lib.sh:/lib/tuneup-vm.sh")

if [[ -x $scenario/prepare.sh ]]; then
  out="$CACHE/prepare/$(basename "$scenario")"
  rm -rf "$out"; mkdir -p "$out"
  specs=$("$scenario/prepare.sh" "$out")   # fails the run if prepare.sh fails
  while IFS= read -r spec; do
    [[ -n $spec ]] && build_args+=(--add "$spec")
  done <<<"$specs"
fi

initrd="$CACHE/initramfs-$(basename "$scenario").cpio.gz"
"$HERE/build-initramfs.sh" --scenario "$scenario" --out "$initrd" ${build_args[@]+"${build_args[@]}"}
exec "$HERE/run.sh" --initrd "$initrd" ${run_args[@]+"${run_args[@]}"}
