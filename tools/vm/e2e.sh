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
#   modules     (optional) kernel modules to load at boot, one name a line (each an --module).
#   check.sh    (optional) run on the host after the guest as `check.sh ARTIFACTS_DIR`, where the
#               files the guest returned with guest-lib.sh's `artifact NAME FILE` are (also kept
#               in $TUNEUP_VM_CACHE/artifacts/SCENARIO); prints PASS/FAIL lines, exit 0 = passed.
#   anything else: copied to /scenario in the guest.
# Exit status is run.sh's (0 = all passed), or 1 when check.sh fails.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="${TUNEUP_VM_CACHE:-$HOME/.cache/tuneup-vm}"

(($#)) || { sed -n '2,17p' "$0"; exit 64; }
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

if [[ -f $scenario/modules ]]; then
  while read -r m _; do [[ -n $m && $m != \#* ]] && build_args+=(--module "$m"); done <"$scenario/modules"
fi

initrd="$CACHE/initramfs-$(basename "$scenario").cpio.gz"
"$HERE/build-initramfs.sh" --scenario "$scenario" --out "$initrd" ${build_args[@]+"${build_args[@]}"}
status=0
"$HERE/run.sh" --initrd "$initrd" --log "$CACHE/console.log" ${run_args[@]+"${run_args[@]}"} || status=$?

# Files the guest printed between TUNEUP-ARTIFACT-BEGIN/END NAME lines (gzip + base64, guest-lib.sh's `artifact`).
artifacts="$CACHE/artifacts/$(basename "$scenario")"
rm -rf "$artifacts"; mkdir -p "$artifacts"
awk -v dir="$artifacts" '
  /^TUNEUP-ARTIFACT-BEGIN [A-Za-z0-9._-]+$/ { name = $2; file = dir "/" name ".b64"; printf "" >file; next }
  /^TUNEUP-ARTIFACT-END / { if (name != "") close(file); name = ""; next }
  name != "" { print >file }' "$CACHE/console.log"
for f in "$artifacts"/*.b64; do
  [[ -e $f ]] || continue
  if base64 -d "$f" | gunzip >"${f%.b64}"; then rm "$f"; else echo "e2e: artifact $(basename "${f%.b64}") is damaged" >&2; fi
done
if [[ -x $scenario/check.sh && $status != 2 ]]; then
  echo "e2e: host check: $scenario/check.sh $artifacts"
  "$scenario/check.sh" "$artifacts" || status=1
fi
exit $status
