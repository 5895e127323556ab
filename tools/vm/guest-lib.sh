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
