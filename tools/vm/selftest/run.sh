# Self-test of the VM rig (runs inside the guest under busybox sh, from /scenario).
# Proves each kernel path with the C fixtures from src/:
#   USB: FunctionFS HID gadget on dummy_hcd <-> libusb host program (usbhid detach,
#        feature reports 0xF0/0xF1, re-enumeration);
#   Bluetooth: RFCOMM between btvirt's hci0 and hci1; SDP with bluetoothd --compat.
# Prints PASS/FAIL/INFO lines; everything else is detail for a failing run.

failed=0
fail() { echo "FAIL $1: $2"; failed=1; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# ---------------------------------------------------------------- USB ------
echo "INFO udc: $(ls /sys/class/udc)"
ffs-hid-device >/tmp/usb-device.log 2>&1 &
devpid=$!
timeout 90 hid-host
rc=$?
if [ $rc != 0 ]; then
  fail usb-host "hid-host exited with $rc"
  kill $devpid 2>/dev/null   # it was not told to stop: SIGTERM makes it clean up and exit
fi
i=0
while kill -0 $devpid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 $devpid 2>/dev/null
wait $devpid
rc=$?
[ $rc = 0 ] || fail usb-device "ffs-hid-device exited with $rc"
if [ -e /sys/kernel/config/usb_gadget/tuneup ]; then
  fail usb-gadget-cleanup "gadget still in configfs"
else
  echo "PASS usb-gadget-cleanup"
fi
grep -E '^(INFO|PASS|FAIL) ' /tmp/usb-device.log
[ $failed = 0 ] || { echo "--- device log"; tail -40 /tmp/usb-device.log; }

# ---------------------------------------------------------- Bluetooth ------
t=$(uptime_s)
btvirt -l2 >/tmp/btvirt.log 2>&1 &
btpid=$!
i=0
while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
# hci0 plays the headset: page scan (connectable) + inquiry scan (discoverable).
if hciconfig hci0 up piscan && hciconfig hci1 up; then
  echo "PASS bt-controllers-up"
  echo "INFO btvirt -l2 to both controllers up: $(awk -v a=$t -v b=$(uptime_s) 'BEGIN{print b-a}') s"
else
  fail bt-controllers-up "$(cat /tmp/btvirt.log)"
fi
A0=$(bt-rfcomm addr hci0)
A1=$(bt-rfcomm addr hci1)
echo "INFO hci0 $A0, hci1 $A1"

rfcomm_pair() {  # rfcomm_pair CHANNEL NBYTES: server on hci0, client from hci1
  timeout 30 bt-rfcomm server "$A0" "$1" "$2" &
  local spid=$!
  sleep 0.3   # let the server reach listen()
  timeout 30 bt-rfcomm client "$A1" "$A0" "$1" "$2" || fail "bt-rfcomm-client-ch$1" "exit $?"
  wait $spid || fail "bt-rfcomm-server-ch$1" "exit $?"
}
rfcomm_pair 5 16384

# --------------------------------------------------------------- SDP -------
# The kernel has no SDP server; BlueZ's is inside bluetoothd, which needs a
# D-Bus system bus. --compat (-C) opens /run/sdp, the socket that sdptool add
# and libbluetooth's sdp_record_register() use.
mkdir -p /run/dbus /var/lib/bluetooth
echo 0123456789abcdef0123456789abcdef >/etc/machine-id
dbus-daemon --config-file=/scenario/dbus-system.conf --nofork --nopidfile >/tmp/dbus.log 2>&1 &
dbuspid=$!
i=0
while [ ! -S /run/dbus/system_bus_socket ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
t=$(uptime_s)
bluetoothd -n -C >/tmp/bluetoothd.log 2>&1 &
bluezpid=$!
i=0
while [ ! -S /run/sdp ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -S /run/sdp ] && echo "INFO bluetoothd up (/run/sdp) after $(awk -v a=$t -v b=$(uptime_s) 'BEGIN{print b-a}') s"
sleep 1  # bluetoothd powers the adapters and rewrites their settings
# bluetoothd switches page scan off on hci0 (no bonded devices): turn it back on,
# or every connect to hci0 fails with EHOSTDOWN (page timeout).
hciconfig hci0 piscan
if sdptool add --channel=7 SP >/tmp/sdp-add.log 2>&1; then
  echo "PASS bt-sdp-register-spp"
else
  fail bt-sdp-register-spp "$(cat /tmp/sdp-add.log)"
fi
# Query hci0's SDP server from hci1, like a host looking up a headset's SPP channel.
t=$(uptime_s)
timeout 30 sdptool -i hci1 search --bdaddr "$A0" SP >/tmp/sdp-search.log 2>&1
ch=$(awk '/Channel:/ {print $2; exit}' /tmp/sdp-search.log)
if [ "$ch" = 7 ]; then
  echo "PASS bt-sdp-find-spp-channel"
  echo "INFO sdp search from hci1: $(awk -v a=$t -v b=$(uptime_s) 'BEGIN{print b-a}') s"
  rfcomm_pair "$ch" 4096   # connect on the channel SDP gave, with bluetoothd running
else
  fail bt-sdp-find-spp-channel "channel '$ch'"
  cat /tmp/sdp-search.log
fi
kill $bluezpid $dbuspid $btpid 2>/dev/null

if [ $failed != 0 ]; then
  echo "--- bluetoothd log"; tail -30 /tmp/bluetoothd.log
  echo "--- dmesg"; dmesg | tail -60
fi
exit 0
