#!/usr/bin/env bash
# Host side of the ble-search scenario: only the tuneup for the guest (as tools/vm/tuneup/prepare.sh makes it:
# TUNEUP_GUEST_BINARY, else a static release build of its own) and the number of searches
# (TUNEUP_VM_BLE_SEARCHES, default 10) and whether to trace HCI with btmon (TUNEUP_VM_BLE_TRACE=1).
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
binary=$("$root/tools/vm/tuneup/guest-binary.sh")
strip -o "$out/tuneup" "$binary"
echo "$out/tuneup:/usr/bin/tuneup"
printf 'searches=%s\ntrace=%s\n' "${TUNEUP_VM_BLE_SEARCHES:-10}" "${TUNEUP_VM_BLE_TRACE:-0}" >"$out/ble-search.conf"
echo "$out/ble-search.conf:/etc/ble-search.conf"
