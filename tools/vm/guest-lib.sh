# Shell functions for every scenario's run.sh in the guest (busybox sh): e2e.sh puts this file at
# /lib/tuneup-vm.sh; a scenario reads it with `. /lib/tuneup-vm.sh`.

# Waits up to $2 seconds for a first line in file $1 and prints it.
first_line() {
  i=0
  while [ ! -s "$1" ] && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  head -1 "$1"
}

# artifact NAME FILE: returns FILE to the host through the console (the rig has no disk or network): gzip'd and
# base64'd between "TUNEUP-ARTIFACT-BEGIN NAME" and "TUNEUP-ARTIFACT-END NAME" lines. e2e.sh writes it back to
# $TUNEUP_VM_CACHE/artifacts/SCENARIO/NAME after the run.
artifact() {
  echo "TUNEUP-ARTIFACT-BEGIN $1"
  gzip -c "$2" | base64
  echo "TUNEUP-ARTIFACT-END $1"
}

# The start of a scenario that runs tuneup: `fail NAME TEXT` prints a FAIL line and sets $failed (0 until then);
# `now` is the uptime in seconds and `since T` the seconds since `now` gave T; HOME and XDG_STATE_HOME for tuneup.
fail() { echo "FAIL $1: $2"; failed=1; }
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
scenario_start() {
  failed=0
  export HOME=/root XDG_STATE_HOME=/tmp/state
  mkdir -p $HOME $XDG_STATE_HOME
}

# hidraw_node: the simulated headset's node (/dev/hidrawN), found in sysfs by its ids (application or bootloader).
hidraw_node() {
  for h in /sys/class/hidraw/hidraw*; do
    grep -qs "HID_ID=0003:00001209:0000000[12]" $h/device/uevent && { echo /dev/${h##*/}; return; }
  done
}

# usb_sim_start: `tuneup sim headset --usb-gadget` in the background (its pid in $usbsim, its output in
# /tmp/usb-sim.out and .err, its state in /tmp/usb-sim.json); PASS usb-sim-gadget when it prints its usb: address.
# Then waits up to 10 s for enumeration: usbhid binds the gadget's interface 0 and the kernel makes its hidraw node
# (devtmpfs: no udevd).
usb_sim_start() {
  tuneup sim headset --usb-gadget --battery-drain 0 --state /tmp/usb-sim.json </dev/null >/tmp/usb-sim.out 2>/tmp/usb-sim.err &
  usbsim=$!
  addr=$(first_line /tmp/usb-sim.out 30)
  case $addr in
    usb:1209:0001:*) echo "PASS usb-sim-gadget"; echo "INFO simulated headset presented as $addr" ;;
    *) fail usb-sim-gadget "no address ($(cat /tmp/usb-sim.err | tr '\n' ' '))" ;;
  esac
  i=0
  while [ -z "$(hidraw_node)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}

# bt_start DBUS_CONFIG: btvirt's two controllers (hci0 up and discoverable, hci1 up; pid $btvirt) and an SDP server
# for the simulator's SPP record: bluetoothd --compat (pid $btd) on a private D-Bus with DBUS_CONFIG (pid $dbus).
bt_start() {
  btvirt -l2 >/tmp/btvirt.log 2>&1 &
  btvirt=$!
  i=0
  while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  hciconfig hci0 up piscan && hciconfig hci1 up || fail bt-controllers "$(cat /tmp/btvirt.log)"
  mkdir -p /run/dbus /var/lib/bluetooth
  echo 0123456789abcdef0123456789abcdef >/etc/machine-id
  dbus-daemon --config-file=$1 --nofork --nopidfile >/tmp/dbus.log 2>&1 &
  dbus=$!
  i=0
  while [ ! -S /run/dbus/system_bus_socket ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  bluetoothd -n -C >/tmp/bluetoothd.log 2>&1 &
  btd=$!
  i=0
  while [ ! -S /run/sdp ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  sleep 1
  hciconfig hci0 piscan   # bluetoothd turns page scan off; the headset must be connectable
}

# bt_sim_start: `tuneup sim headset --rfcomm 3` on hci0 in the background (pid $btsim, output /tmp/bt-sim.out and
# .err); PASS bt-sim-rfcomm when it prints its address, in $baddr. tuneup then talks from hci1 (TUNEUP_BT_ADAPTER).
bt_sim_start() {
  tuneup sim headset --rfcomm 3 --adapter hci0 --battery-drain 0 --state /tmp/bt-sim.json </dev/null >/tmp/bt-sim.out 2>/tmp/bt-sim.err &
  btsim=$!
  baddr=$(first_line /tmp/bt-sim.out 30)
  case $baddr in
    bt:*:3) echo "PASS bt-sim-rfcomm"; echo "INFO simulated headset on $baddr" ;;
    *) fail bt-sim-rfcomm "no address ($(cat /tmp/bt-sim.err | tr '\n' ' '))" ;;
  esac
  export TUNEUP_BT_ADAPTER=hci1
}
