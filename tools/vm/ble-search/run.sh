# The BLE search of the tuneup scenario alone, repeated (runs in the guest under busybox sh): a measure of how often
# `tuneup wearable search` on hci1 finds the simulated wearable advertising on btvirt's hci0. Each round starts
# `tuneup sim wearable --ble hci0` (advertising through the kernel's management interface, as in the tuneup
# scenario), then searches once from hci1 (--duration 3s), then quits the simulator. With trace=1, btmon records
# both controllers during each round and a missed round's HCI events are printed.
# usage (host): TUNEUP_VM_BLE_SEARCHES=20 tools/vm/e2e.sh tools/vm/ble-search [--add ...]
# Prints INFO per round, then PASS ble-search-repeat (every round found it) or FAIL with the count.
. /etc/ble-search.conf
export HOME=/root XDG_STATE_HOME=/tmp/state
mkdir -p $HOME $XDG_STATE_HOME
. /lib/tuneup-vm.sh  # first_line
btvirt -l2 >/tmp/btvirt.log 2>&1 &
i=0
while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
for a in 0 1; do
  { timeout 10 btmgmt --index $a le on && timeout 10 btmgmt --index $a power on; } >/tmp/btmgmt-$a.out 2>&1 \
    || echo "INFO btmgmt hci$a: $(tail -1 /tmp/btmgmt-$a.out)"
  hciconfig hci$a | grep -q "UP RUNNING" || { echo "FAIL ble-adapter-hci$a-up: $(hciconfig hci$a | tr '\n' ' ')"; exit 0; }
done
export TUNEUP_BT_ADAPTER=hci1
found=0
round=0
trap '' PIPE
while [ $round -lt "$searches" ]; do
  round=$((round + 1))
  rm -f /tmp/sim.out /tmp/ctl; mkfifo /tmp/ctl
  tuneup sim wearable --ble hci0 --seed 3 </tmp/ctl >/tmp/sim.out 2>/tmp/sim.err &
  sim=$!
  exec 3>/tmp/ctl   # the simulator serves until 'quit' (or the end of its stdin)
  addr=$(first_line /tmp/sim.out 30)
  case $addr in ble:*) ;; *) echo "FAIL ble-sim-peripheral: no address ($(tr '\n' ' ' </tmp/sim.err))"; kill $sim; exit 0 ;; esac
  if [ "$trace" = 1 ]; then btmon >/tmp/btmon.txt 2>&1 & mon=$!; sleep 0.5; fi
  timeout 20 tuneup wearable search --duration 3s --verbose >/tmp/search.out 2>&1
  rc=$?
  [ "$trace" = 1 ] && { sleep 0.2; kill $mon; wait $mon 2>/dev/null; }
  if [ $rc = 0 ] && grep -q "$addr  wearable 3" /tmp/search.out; then
    found=$((found + 1))
    echo "INFO round $round: found ($(grep -o 'reported [0-9]* advertisements' /tmp/search.out))"
  else
    echo "INFO round $round: missed (exit $rc: $(tail -3 /tmp/search.out | tr '\n' ' '))"
    if [ "$trace" = 1 ]; then
      echo "--- round $round: btmon (LE events and management discovery)"
      grep -E "^[<>@] |Advertising Report|Event type|Address:|Discovering|Device Found|Scan Enable|Scan Param" /tmp/btmon.txt | tail -120
    fi
  fi
  echo quit >&3; exec 3>&-
  wait $sim
done
echo "INFO ble-search-repeat: found in $found of $searches searches"
if [ $found = "$searches" ]; then echo "PASS ble-search-repeat"; else echo "FAIL ble-search-repeat: missed in $((searches - found)) of $searches searches"; fi
