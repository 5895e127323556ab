# A real kernel's view of a flash (runs in the guest under busybox sh): the guest's USB traffic recorded with usbmon
# (usbmon-pcap, LINKTYPE_USB_LINUX_MMAPPED) while `tuneup flash` updates the simulated headset over USB (the FunctionFS
# gadget on dummy_hcd), once through libusb and once through hidraw (usbhid sends the reports); and the RFCOMM flash's
# HCI traffic recorded with btmon (btsnoop). Each flash also writes Tuneup's own capture (--capture) and its JSON
# result. Everything returns to the host as artifacts (guest-lib.sh), where check.sh decodes it with tshark and
# tools/wireshark/lightx.lua.
. /lib/tuneup-vm.sh  # scenario_start, fail, now, since, first_line, artifact, usb_sim_start, hidraw_node, bt_start, bt_sim_start
scenario_start

if [ -c /dev/usbmon0 ]; then echo "PASS usbmon-device"; else fail usbmon-device "no /dev/usbmon0: $(ls /dev | grep usbmon | tr '\n' ' ')"; fi

# capture_start NAME: usbmon-pcap records every bus (/dev/usbmon0) to /tmp/NAME.pcap, from before the flash.
capture_start() {
  usbmon-pcap /dev/usbmon0 /tmp/$1.pcap >/tmp/$1.mon.out 2>/tmp/$1.mon.err &
  mon=$!
  case $(first_line /tmp/$1.mon.out 10) in
    "usbmon-pcap: capturing"*) ;;
    *) fail $1-capture-start "$(cat /tmp/$1.mon.err | tr '\n' ' ')" ;;
  esac
}
# capture_stop NAME: SIGTERM; the reader drains the ring, syncs and exits 0.
capture_stop() {
  kill -TERM $mon; wait $mon
  rc=$?
  if [ $rc = 0 ]; then echo "PASS $1-capture-stopped"; else fail $1-capture-stopped "exit $rc: $(cat /tmp/$1.mon.err | tr '\n' ' ')"; fi
  echo "INFO $1: $(tail -1 /tmp/$1.mon.err), $(wc -c </tmp/$1.pcap) bytes"
  grep -q " 0 dropped" /tmp/$1.mon.err && echo "PASS $1-nothing-dropped" || fail $1-nothing-dropped "$(tail -1 /tmp/$1.mon.err)"
}
# flash NAME ARGS...: `tuneup flash ARGS... --format json --capture /tmp/NAME.pcapng`, its result in /tmp/NAME.json.
flash() {
  name=$1; shift
  t=$(now)
  if timeout 300 tuneup flash "$@" --format json --capture /tmp/$name.pcapng >/tmp/$name.json 2>/tmp/$name.err; then
    echo "PASS $name"
  else
    fail $name "exit $?: $(tail -2 /tmp/$name.json /tmp/$name.err | tr '\n' ' ')"
  fi
  echo "INFO $name: $(since $t) s: $(grep '"type":"result"' /tmp/$name.json | grep -o '"bytesWritten":[0-9]*\|"resent":[0-9]*\|"reconnects":[0-9]*' | tr '\n' ' ')"
}

# ---------------------------------------------------------------- USB ------
# The capture starts before the gadget exists: it holds the enumeration (descriptors) too, and every re-enumeration.
capture_start usb-libusb
usb_sim_start
echo "INFO headset enumerated: hidraw node $(hidraw_node)"

# 1.4.2 -> 1.5.0 through libusb (usbhid detached while it talks: libusb's control transfers on usbfs).
flash usb-flash-libusb /images/app-1.5.0.img --device usb:1209:0001 --key /images/dev-public.pem --usb-backend libusb --wait 60
capture_stop usb-libusb

# The same image again through hidraw (usbhid stays bound: the kernel's HID driver sends the SET_REPORT/GET_REPORT).
i=0
while [ -z "$(hidraw_node)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
capture_start usb-hidraw
flash usb-flash-hidraw /images/app-1.5.0.img --device usb:1209:0001 --no-resume --force --usb-backend hidraw --wait 60
capture_stop usb-hidraw
kill $usbsim; wait $usbsim
[ $failed = 0 ] || { echo "--- usb simulator stderr"; tail -20 /tmp/usb-sim.err; }

# ---------------------------------------------------------- RFCOMM ------
# btvirt's hci0 (the simulated headset) and hci1 (tuneup), bluetoothd as the SDP server as in tools/vm/tuneup; btmon
# records both controllers (HCI through the kernel's monitor channel) as btsnoop.
bt_start /etc/tuneup-dbus-system.conf
btmon -w /tmp/bt.btsnoop >/tmp/btmon.out 2>&1 &
btmon=$!
bt_sim_start
flash bt-flash /images/app-1.5.0.img --device "$baddr" --key /images/dev-public.pem --wait 60
kill $btsim; wait $btsim
kill -INT $btmon; wait $btmon
if [ -s /tmp/bt.btsnoop ]; then echo "PASS btmon-capture"; echo "INFO btmon: $(wc -c </tmp/bt.btsnoop) bytes"; else
  fail btmon-capture "$(cat /tmp/btmon.out | tail -3 | tr '\n' ' ')"; fi
kill $btd $dbus $btvirt; wait $btd $dbus $btvirt 2>/dev/null
[ $failed = 0 ] || { echo "--- bluetooth simulator stderr"; tail -20 /tmp/bt-sim.err; }

# ------------------------------------------------------- artifacts ------
# Every background program has ended: nothing else writes to the console while the files go out.
for f in usb-libusb.pcap usb-flash-libusb.pcapng usb-flash-libusb.json usb-hidraw.pcap usb-flash-hidraw.pcapng \
         usb-flash-hidraw.json bt.btsnoop bt-flash.pcapng bt-flash.json; do
  [ -e /tmp/$f ] && artifact $f /tmp/$f
done
exit 0
