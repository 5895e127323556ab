#!/usr/bin/env bash
# Boot the initramfs under QEMU (TCG, no KVM), capture the serial console and
# report the scenario's result lines.
#
# usage: run.sh [--initrd FILE] [--kernel FILE] [--timeout SECS] [--log FILE] [--verbose]
#
# The scenario prints lines "PASS <name>" and "FAIL <name>: reason" on the console.
# Exit status: 0 if at least one PASS and no FAIL; 1 if any FAIL or no PASS;
# 2 on timeout (QEMU killed) or if the guest never reached the end of /init.
# --verbose streams the whole console to stderr while the guest runs; otherwise
# it is only shown (its tail) on failure. The log is kept at --log
# (default $TUNEUP_VM_CACHE/console.log).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="${TUNEUP_VM_CACHE:-$HOME/.cache/tuneup-vm}"
log() { echo "run: $*" >&2; }
die() { log "error: $*"; exit 2; }

[[ -e $CACHE/kernel.env ]] || die "cache not ready, run $HERE/fetch.sh first"
# shellcheck source=/dev/null
source "$CACHE/kernel.env"

initrd="$CACHE/initramfs.cpio.gz" kernel="$VMLINUZ" timeout=300 verbose=0
console="$CACHE/console.log"
while (($#)); do
  case $1 in
    --initrd) initrd=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --log) console=$2; shift 2 ;;
    --verbose|-v) verbose=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ -f $initrd ]] || die "no initramfs at $initrd (run build-initramfs.sh)"

# Only one QEMU at a time on this 2-core machine: a second run waits for the first.
exec 9>"$CACHE/qemu.lock"
flock 9

# -nic none: the guest needs no network. stdin is /dev/null so a CI run without
# a terminal behaves like an interactive one (and the terminal is never left raw).
# panic=-1 + -no-reboot: a kernel panic (or /init dying) ends QEMU at once.
qemu=(qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 2 -nographic -no-reboot
      -nic none -kernel "$kernel" -initrd "$initrd"
      -append "console=ttyS0 panic=-1 quiet")

log "booting $(basename "$kernel") with $(basename "$initrd") (timeout ${timeout}s)"
start=$(date +%s.%N)
set +e
if ((verbose)); then
  timeout -k 5 "$timeout" "${qemu[@]}" </dev/null 2>&1 | tr -d '\r' | tee "$console" >&2
else
  timeout -k 5 "$timeout" "${qemu[@]}" </dev/null 2>&1 | tr -d '\r' >"$console"
fi
qrc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

# Result lines may follow other text on the same console line if something
# wrote without a newline; match them anywhere after a line start or a space.
results=$(grep -aoE '(^| )(PASS|FAIL) [^ ].*' "$console" | sed 's/^ //' || true)
npass=$(grep -c '^PASS ' <<<"$results" || true)
nfail=$(grep -c '^FAIL ' <<<"$results" || true)
[[ -n $results ]] && printf '%s\n' "$results"
# Lines the scenario tags "INFO " (timings, versions) are shown too.
grep -aE '^INFO ' "$console" || true

status=0
if ((qrc == 124 || qrc == 137)); then
  log "TIMEOUT after ${timeout}s"
  status=2
elif ! grep -q '^TUNEUP-VM-END' "$console"; then
  log "guest did not reach the end of /init (qemu exit $qrc)"
  status=2
elif ((nfail > 0 || npass == 0)); then
  status=1
fi
((npass == 0)) && log "no PASS line seen"
if ((status != 0 && !verbose)); then
  log "last console lines ($console):"
  tail -n 80 "$console" >&2
fi
log "wall time ${elapsed}s"
echo "vm: $npass passed, $nfail failed"
exit $status
