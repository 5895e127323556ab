# End-to-end proof through the real Linux USB and Bluetooth stacks (runs in the guest under busybox sh).
#   USB: the simulated headset presented by `tuneup sim headset --usb-gadget` (FunctionFS on dummy_hcd), driven by
#        `tuneup devices/probe/flash --device usb:...` through its hidraw node (usbhid stays bound) and through libusb
#        (usbhid detached), across the bootloader's re-enumeration; `hidraw:/dev/hidrawN` too.
#   RFCOMM: `tuneup sim headset --rfcomm` on btvirt's hci0, `tuneup probe/flash --device bt:...` from hci1,
#        with an explicit channel and through SDP.
#   BLE: `tuneup sim wearable --ble hci0` (a peripheral), `tuneup wearable search/info/stream --device ble:...` from
#        hci1, and BlueZ's gatttool discovering and reading the service; then a stream that reconnects after the
#        simulator drops the link, and after it is killed and started again.
# Prints PASS/FAIL/INFO lines at the start of a line; exits 0 (run.sh's caller counts FAILs).
. /lib/tuneup-vm.sh  # scenario_start, fail, now, since, first_line, usb_sim_start, hidraw_node, bt_start, bt_sim_start
scenario_start

# check NAME COMMAND...: runs COMMAND (with a timeout), PASS if it exits 0, FAIL with its output otherwise.
check() {
  name=$1; shift
  if timeout 300 "$@" >/tmp/$name.out 2>&1; then echo "PASS $name"; else fail $name "exit $?: $(tail -3 /tmp/$name.out | tr '\n' ' ')"; fi
}

# expect NAME FILE TEXT: PASS if FILE contains TEXT.
expect() {
  if grep -q "$3" "$2"; then echo "PASS $1"; else fail $1 "no '$3' in: $(head -5 "$2" | tr '\n' ' ')"; fi
}

# ---------------------------------------------------------------- USB ------
# The simulated headset on the gadget, enumerated (usb_sim_start).
usb_sim_start
node=$(hidraw_node)
usbdev=$(for d in /sys/bus/usb/devices/*; do [ "$(cat $d/idVendor 2>/dev/null)" = 1209 ] && { echo ${d##*/}; break; }; done)
if [ -n "$node" ] && [ -e /sys/class/hidraw/${node#/dev/}/device/driver ]; then
  echo "PASS usb-hidraw-node"
  echo "INFO headset at usb:$usbdev, hidraw node $node, HID driver $(basename "$(readlink /sys/class/hidraw/${node#/dev/}/device/driver)")"
else
  fail usb-hidraw-node "no hidraw node with a driver: $(ls /sys/class/hidraw 2>&1 | tr '\n' ' ')"
fi
# watch_driver FILE: samples the headset's USB interface 0 every 20 ms until /tmp/watch-stop exists: "driver=usbhid"
# (the HID driver is bound), "driver=usbfs" (libusb detached it and claimed the interface), "driver=" (none),
# "absent" (re-enumerating).
watch_driver() {
  rm -f /tmp/watch-stop
  while [ ! -e /tmp/watch-stop ]; do
    i=/sys/bus/usb/devices/$usbdev:1.0
    if [ ! -e $i ]; then echo absent; else d=$(readlink $i/driver); echo "driver=${d##*/}"; fi
    sleep 0.02
  done >$1
}
# longest_unbound FILE: the longest run of samples with the interface there and usbhid not bound to it (a driver
# binding a fresh interface takes a few; libusb holding it for a session, hundreds).
longest_unbound() { awk '$1 == "absent" || $1 == "driver=usbhid" { n = 0; next } { n++; if (n > m) m = n } END { print m + 0 }' "$1"; }
# flash_watched NAME ARGS...: `check NAME tuneup flash ARGS...` while watch_driver samples; sets $took (seconds).
flash_watched() {
  name=$1; shift
  watch_driver /tmp/$name.driver &
  watcher=$!
  t=$(now)
  check $name tuneup flash "$@"
  took=$(since $t)
  touch /tmp/watch-stop; wait $watcher
}

check usb-devices tuneup devices
expect usb-devices-lists-headset /tmp/usb-devices.out "1209:0001"
expect usb-devices-reach-by-hidraw /tmp/usb-devices.out "Reach by.*hidraw $node"
check usb-probe tuneup probe --device usb:1209:0001 --verbose
expect usb-probe-version /tmp/usb-probe.out "1.4.2"
expect usb-probe-through-hidraw /tmp/usb-probe.out "through hidraw $node"
check usb-probe-hidraw-address tuneup probe --device hidraw:$node
expect usb-probe-hidraw-address-version /tmp/usb-probe-hidraw-address.out "1.4.2"
check usb-probe-libusb tuneup probe --device usb:1209:0001 --usb-backend libusb
expect usb-probe-libusb-version /tmp/usb-probe-libusb.out "1.4.2"

# The flash over hidraw (the default for usb:): the headset jumps to its bootloader (1209:0002, a new hidraw node)
# and back; usbhid stays bound to every incarnation the whole time.
flash_watched usb-flash /images/app-1.5.0.img --device usb:1209:0001 --key /images/dev-public.pem --wait 60 --capture /tmp/usb-recorded.pcapng
adaptive=$took
unbound=$(longest_unbound /tmp/usb-flash.driver)
if [ "$unbound" -le 15 ]; then echo "PASS usb-flash-hidraw-driver-stays-bound"; else
  fail usb-flash-hidraw-driver-stays-bound "interface 0 without usbhid for $unbound samples in a row"; fi
echo "INFO hidraw flash: $(grep -c . /tmp/usb-flash.driver) driver samples ($(grep -c absent /tmp/usb-flash.driver) absent while re-enumerating, $(grep -c driver=usbhid /tmp/usb-flash.driver) with usbhid bound), longest run without usbhid $unbound"
node=$(hidraw_node)
if [ -n "$node" ] && [ -e /sys/class/hidraw/${node#/dev/}/device/driver ]; then echo "PASS usb-hidraw-node-after-flash"; else
  fail usb-hidraw-node-after-flash "node '$node', $(ls /sys/class/hidraw 2>&1 | tr '\n' ' ')"; fi
check usb-probe-after-flash tuneup probe --device usb:1209:0001
expect usb-probe-new-version /tmp/usb-probe-after-flash.out "1.5.0"

# The same flash through libusb: it detaches usbhid while it talks (the watcher must see that, or it proves nothing).
flash_watched usb-flash-libusb /images/app-1.5.0.img --device usb:1209:0001 --no-resume --force --usb-backend libusb --wait 60
libusb=$took
unbound=$(longest_unbound /tmp/usb-flash-libusb.driver)
if [ "$unbound" -gt 15 ]; then echo "PASS usb-flash-libusb-detaches"; else
  fail usb-flash-libusb-detaches "the watcher saw interface 0 without usbhid for only $unbound samples in a row"; fi
echo "INFO libusb flash: $(grep -c . /tmp/usb-flash-libusb.driver) driver samples, $(grep -c driver=usbfs /tmp/usb-flash-libusb.driver) with usbfs holding interface 0, longest run without usbhid $unbound"
echo "INFO usb flash of app-1.5.0.img (164515 bytes): hidraw ${adaptive} s, libusb ${libusb} s, libusb/hidraw $(awk -v a=$adaptive -v b=$libusb 'BEGIN { printf "%.2f", b / a }')x"
grep -E "^Written|^Total" /tmp/usb-flash.out | sed 's/^/INFO usb hidraw: /'
grep -E "^Written|^Total" /tmp/usb-flash-libusb.out | sed 's/^/INFO usb libusb: /'
node=$(hidraw_node)
if [ -n "$node" ] && [ -e /sys/class/hidraw/${node#/dev/}/device/driver ]; then echo "PASS usb-driver-reattached-after-libusb"; else
  fail usb-driver-reattached-after-libusb "node '$node'"; fi

# A hidraw: address follows the headset to its bootloader's node (same USB port) and back.
t=$(now)
check usb-flash-hidraw-address tuneup flash /images/app-1.5.0.img --device hidraw:$node --no-resume --force --wait 60
echo "INFO usb flash through hidraw:$node: $(since $t) s"
t=$(now)
check usb-flash-fixed-polling tuneup flash /images/app-1.5.0.img --device usb:1209:0001 --no-resume --force --poll-interval 50ms --wait 60
fixed=$(since $t)
echo "INFO usb flash (hidraw): adaptive polling ${adaptive} s, fixed 50 ms polling ${fixed} s, ratio $(awk -v a=$adaptive -v b=$fixed 'BEGIN { printf "%.1f", b / a }')x"
grep -E "^Written|^Total" /tmp/usb-flash-fixed-polling.out | sed 's/^/INFO usb fixed 50 ms: /'

kill $usbsim; wait $usbsim
if [ -e /sys/kernel/config/usb_gadget/tuneup ]; then fail usb-gadget-cleanup "gadget left in configfs"; else echo "PASS usb-gadget-cleanup"; fi
[ $failed = 0 ] || { echo "--- usb simulator stderr"; tail -30 /tmp/usb-sim.err; }

# Issue 32 §4: the first flash above (1.4.2 to 1.5.0 over hidraw), recorded by the tool (USB HID reports, link type
# 148), replayed by the emulated headset on the gadget, re-enumerating into its bootloader and back where the
# recording did: the same flash completes (a state directory of its own: no record of the first flash).
tuneup sim headset --usb-gadget --emulate /tmp/usb-recorded.pcapng </dev/null >/tmp/usb-emu.out 2>/tmp/usb-emu.err &
emu=$!
echo "INFO emulated headset at $(first_line /tmp/usb-emu.out 10)"
i=0
while [ -z "$(hidraw_node)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
t=$(now)
check usb-emulated-flash env XDG_STATE_HOME=/tmp/emulated-state tuneup flash /images/app-1.5.0.img --device usb:1209:0001 \
  --key /images/dev-public.pem --wait 60
echo "INFO usb flash against the emulated headset: $(since $t) s (recorded live: ${adaptive} s)"
i=0
while kill -0 $emu 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $emu 2>/dev/null; wait $emu; status=$?
if [ $status = 0 ] && grep -q "emulation complete" /tmp/usb-emu.err; then echo "PASS usb-emulation-complete"; else
  fail usb-emulation-complete "exit $status: $(tail -5 /tmp/usb-emu.err | tr '\n' ' ')"; fi
if [ -e /sys/kernel/config/usb_gadget/tuneup ]; then fail usb-emulation-gadget-cleanup "gadget left in configfs"; else echo "PASS usb-emulation-gadget-cleanup"; fi

# ------------------------------------------------------ station, watch mode ------
# Two blank units appear as USB gadgets one after the other (another --seed: another hardware id); the station
# watches the USB ports, provisions each as it comes (flash with two re-enumerations, identity, calibration, tests,
# lock) and sees it taken out.
tuneup station run --recipe /recipes/sim-headset.yaml --usb --watch --db /tmp/line.sqlite --station vm --format json \
  --wait 60 </dev/null >/tmp/station.out 2>/tmp/station.err &
station=$!
n=0
for seed in 11 12; do
  n=$((n + 1))
  t=$(now)
  tuneup sim headset --usb-gadget --blank --seed $seed --time-scale 0.2 --battery-drain 0 </dev/null \
    >/tmp/unit-$seed.out 2>/tmp/unit-$seed.err &
  unit=$!
  i=0
  while [ "$(grep -c '"event":"finished"' /tmp/station.out)" -lt $n ] && [ $i -lt 1800 ]; do
    sleep 0.1; i=$((i + 1))
    [ $((i % 300)) = 0 ] && echo "INFO station after $(since $t) s: $(grep '"event":"step-started"' /tmp/station.out | tail -1 | grep -o '"step":"[^"]*"')"
  done
  if [ "$(grep -c '"event":"finished"' /tmp/station.out)" -lt $n ]; then
    fail station-unit-$n "not done in $(since $t) s: $(tail -2 /tmp/station.out | tr '\n' ' ') $(tail -3 /tmp/station.err /tmp/unit-$seed.err | tr '\n' ' ')"
    kill $unit; wait $unit
    break
  fi
  echo "INFO station: unit $n (seed $seed) done in $(since $t) s: $(grep '"event":"finished"' /tmp/station.out | tail -1 | grep -o '"outcome":"[a-z]*"\|"serial":"[^"]*"\|"message":"[^"]*"' | tr '\n' ' ')"
  kill $unit; wait $unit
  i=0
  while [ "$(grep -c '"event":"left"' /tmp/station.out)" -lt $n ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
done
kill -INT $station; wait $station
passed=$(grep '"event":"finished"' /tmp/station.out | grep -c '"outcome":"pass"')
units=$(grep '"event":"finished"' /tmp/station.out | grep -o '"hardwareID":"[0-9a-f]*"' | sort -u | wc -l)
if [ "$passed" = 2 ] && [ "$units" = 2 ]; then echo "PASS station-watch-usb"; else
  fail station-watch-usb "passed $passed of 2, $units units: $(grep -E '"finished"|"stopping"' /tmp/station.out | tail -2 | tr '\n' ' ') $(tail -2 /tmp/station.err | tr '\n' ' ')"
fi
expect station-watch-left /tmp/station.out '"event":"left"'
expect station-slot-is-port /tmp/station.out '"slot":"usb:[0-9]*-[0-9.]*"'
[ $failed = 0 ] || { echo "--- station stderr"; tail -20 /tmp/station.err; tail -5 /tmp/station.out; }

# ---------------------------------------------------------- Bluetooth ------
# btvirt's controllers and bluetoothd as the SDP server (bt_start), the simulated headset on RFCOMM channel 3.
bt_start /scenario/dbus-system.conf
bt_sim_start
check bt-probe tuneup probe --device "$baddr"
expect bt-probe-version /tmp/bt-probe.out "1.4.2"
check bt-probe-via-sdp tuneup probe --device "${baddr%:3}"
t=$(now)
check bt-flash tuneup flash /images/app-1.5.0.img --device "$baddr" --key /images/dev-public.pem --wait 60
echo "INFO rfcomm flash of app-1.5.0.img (164515 bytes): $(since $t) s"
grep -E "^Written|^Total" /tmp/bt-flash.out | sed 's/^/INFO rfcomm: /'
check bt-probe-after-flash tuneup probe --device "$baddr" --verbose
expect bt-probe-new-version /tmp/bt-probe-after-flash.out "1.5.0"
kill $btsim; wait $btsim

if [ $failed != 0 ]; then
  echo "--- bluetooth simulator stderr"; tail -30 /tmp/bt-sim.err
  echo "--- bt-probe-after-flash"; grep -v "^$" /tmp/bt-probe-after-flash.out | tail -15
  echo "--- dmesg"; dmesg | tail -40
fi

# ------------------------------------------------------------ BLE wearable ------
# The simulated wearable as a BLE peripheral on hci0 (`tuneup sim wearable --ble`: ATT on L2CAP CID 4, advertising
# 0xFDD2), the central on hci1: `tuneup wearable search` finds it by an LE scan, `info` reads it and `stream` streams
# accelerometer and gyroscope at 50 Hz with double taps (sent through the simulator's stdin); then BlueZ's gatttool, a
# third-party client, discovers the service and reads DeviceInformation. bluetoothd must be off (its own GATT server
# takes the ATT channel).
kill $btd; wait $btd 2>/dev/null
failed_before=$failed
# A write to the simulator's control FIFO after it has died must fail that check, not end the script with SIGPIPE.
trap '' PIPE
# bluetoothd powers its adapters off when it exits. The kernel connects LE only on adapters with LE enabled
# (bluetoothd does it; without it, btmgmt), then both come back up.
for a in 0 1; do
  { timeout 10 btmgmt --index $a le on && timeout 10 btmgmt --index $a power on; } >/tmp/btmgmt-$a.out 2>&1 \
    || echo "INFO btmgmt hci$a: $(tail -1 /tmp/btmgmt-$a.out)"
  hciconfig hci$a | grep -q "UP RUNNING" || fail ble-adapter-hci$a-up "$(hciconfig hci$a | tr '\n' ' ')"
done
rm -f /tmp/ble-ctl; mkfifo /tmp/ble-ctl
tuneup sim wearable --ble hci0 --seed 3 --verbose </tmp/ble-ctl >/tmp/ble-sim.out 2>/tmp/ble-sim.err &
blesim=$!
exec 3>/tmp/ble-ctl
bleaddr=$(first_line /tmp/ble-sim.out 30)
case $bleaddr in
  ble:*) echo "PASS ble-sim-peripheral"; echo "INFO simulated wearable advertising as $bleaddr" ;;
  *) fail ble-sim-peripheral "no address ($(cat /tmp/ble-sim.err | tr '\n' ' '))" ;;
esac
# The simulator advertises through the kernel's management interface (Add Advertising, connectable): the kernel
# uses extended advertising on these controllers, which the kernel's LE connect (extended scanning) on hci1 sees.
grep -q "advertising through HCI commands" /tmp/ble-sim.err && echo "INFO ble: the simulator fell back to HCI advertising"
export TUNEUP_BT_ADAPTER=hci1
# The search finds the wearable already advertising, as a user's would be. (It missed it in half the searches until
# the scan kept the Device Found events the kernel sends before it answers Start Discovery: tools/vm/ble-search
# repeats this step alone.)
if timeout 20 tuneup wearable search --duration 3s --verbose >/tmp/ble-search.out 2>&1 && grep -q "$bleaddr  wearable 3" /tmp/ble-search.out; then
  echo "PASS ble-search"
else
  fail ble-search "$(tail -3 /tmp/ble-search.out | tr '\n' ' ')"
fi
check ble-info timeout 30 tuneup wearable info --device "$bleaddr"
expect ble-info-product /tmp/ble-info.out "0x4020 variant 1"
expect ble-info-mtu /tmp/ble-info.out "247"
t=$(now)
(for s in 3 1 1 1; do sleep $s; echo double-tap >&3; done) &
check ble-stream timeout 40 tuneup wearable stream --device "$bleaddr" --period 20ms --duration 4s --format json
echo "INFO ble session (connect, discovery, reads, 4 s of streaming): $(since $t) s"
grep '"type":"summary"' /tmp/ble-stream.out | sed 's/^/INFO ble stream: /'
expect ble-stream-samples /tmp/ble-stream.out '"type":"sample"'
expect ble-stream-gestures /tmp/ble-stream.out '"gesture":"doubleTap"'
if ! grep -q '"type":"summary"' /tmp/ble-stream.out; then fail ble-stream-no-gaps "no summary"
elif grep '"type":"summary"' /tmp/ble-stream.out | grep -q '"gaps":[1-9]'; then fail ble-stream-no-gaps "$(grep summary /tmp/ble-stream.out)"
else echo "PASS ble-stream-no-gaps"; fi
sleep 1   # the peripheral advertises again once the central is gone
check ble-gatttool-primary timeout 30 gatttool -i hci1 -b "${bleaddr#ble:}" --primary
expect ble-gatttool-finds-service /tmp/ble-gatttool-primary.out "uuid: 0000fdd2-0000-1000-8000-00805f9b34fb"
sleep 1
check ble-gatttool-read timeout 30 gatttool -i hci1 -b "${bleaddr#ble:}" --char-read -a 0x0003
expect ble-gatttool-device-information /tmp/ble-gatttool-read.out "Characteristic value/descriptor: 01 02 40 20 01 00 00 00 0f 00 00 00 0f 28 00 3c 03"
# ------------------------------------------------------- BLE wearable reconnect ------
# A stream over BLE that loses its link and must come back: first the simulator drops the link (drop-link: the
# device is back at once), then it is killed (SIGKILL) and started again on hci0. Each time: samples resume, the gap
# is marked (linkLost, reconnected with gapSeconds) and the summary counts 1 reconnect. INFO: the time from the
# device being back (drop-link sent; the new simulator's address printed) to the first sample of the new link, as
# the guest sees the stream's output (polled every 50 ms); reported, not gating (issue 20 asks for 2 s; the release
# build gave 0.19-0.61 s, a debug build once 1.74 s).
# wait_for FILE PATTERN COUNT SECONDS: waits until PATTERN matches at least COUNT lines of FILE.
wait_for() {
  i=0
  while [ "$(grep -c "$2" "$1" 2>/dev/null)" -lt "$3" ] && [ $i -lt $(($4 * 20)) ]; do sleep 0.05; i=$((i + 1)); done
  [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ]
}
# samples_after_reconnect FILE: the sample lines after the reconnected line.
samples_after_reconnect() { sed -n '/"event":"reconnected"/,$p' "$1" | grep -c '"type":"sample"'; }
# ble_reconnect NAME CUT: a stream (accelerometer, 20 ms), CUT run once 10 samples came, then 10 samples after the
# reconnect and Ctrl-C (the summary is written at the stop).
ble_reconnect() {
  name=$1 cut=$2 out=/tmp/$1.out
  tuneup wearable stream --device "$bleaddr" --sensor accelerometer --period 20ms --gesture none --format json \
    >$out 2>/tmp/$name.err &
  stream=$!
  if ! wait_for $out '"type":"sample"' 10 30; then fail $name "no samples: $(tail -2 /tmp/$name.err | tr '\n' ' ')"; kill $stream; wait $stream; return; fi
  $cut
  i=0
  while [ "$(samples_after_reconnect $out)" = 0 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  if [ "$(samples_after_reconnect $out)" = 0 ]; then
    fail $name "no sample after the cut in 20 s: $(grep '"type":"event"' $out | tail -2 | tr '\n' ' ') $(tail -2 /tmp/$name.err | tr '\n' ' ')"
  else
    echo "INFO $name: device back -> first new sample $(since $back) s ($(grep -o '"gapSeconds":[0-9.]*' $out))"
    echo "PASS $name"
  fi
  i=0
  while [ "$(samples_after_reconnect $out)" -lt 10 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  kill -INT $stream; wait $stream
  expect $name-link-lost $out '"event":"linkLost"'
  expect $name-gap-marked $out '"event":"reconnected","gapSeconds":[0-9.]*'
  expect $name-summary-1-reconnect $out '"reconnects":1,.*"type":"summary"'
}
cut_drop() { back=$(now); echo drop-link >&3; }
cut_restart() {
  kill -9 $blesim; wait $blesim 2>/dev/null
  sleep 0.3   # down for a moment
  rm -f /tmp/ble-sim2.out   # first_line must wait for this simulator's address
  tuneup sim wearable --ble hci0 --seed 3 --verbose </tmp/ble-ctl >/tmp/ble-sim2.out 2>/tmp/ble-sim2.err &
  blesim=$!
  [ -n "$(first_line /tmp/ble-sim2.out 30)" ] || fail ble-reconnect-sim-restarted "no address ($(tail -2 /tmp/ble-sim2.err | tr '\n' ' '))"
  back=$(now)
  grep -o "ended [0-9]* LE link.*" /tmp/ble-sim2.err | sed 's/^/INFO ble restart: the new simulator /'
}
t=$(now)
ble_reconnect ble-reconnect-drop-link cut_drop
ble_reconnect ble-reconnect-restart cut_restart
echo "INFO ble reconnect steps: $(since $t) s"
echo quit >&3; exec 3>&-
wait $blesim
if [ $failed != $failed_before ]; then
  echo "--- ble simulator stderr"; tail -20 /tmp/ble-sim.err
  for f in ble-search ble-info ble-stream ble-gatttool-primary ble-gatttool-read ble-reconnect-drop-link ble-reconnect-restart; do echo "--- $f"; tail -5 /tmp/$f.out; done
  for f in ble-reconnect-drop-link ble-reconnect-restart ble-sim2; do [ -e /tmp/$f.err ] && { echo "--- $f stderr"; tail -10 /tmp/$f.err; }; done
  echo "--- dmesg"; dmesg | tail -20
fi
exit 0
