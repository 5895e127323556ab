# Shell functions for every scenario's run.sh in the guest (busybox sh): e2e.sh puts this file at
# /lib/tuneup-vm.sh; a scenario reads it with `. /lib/tuneup-vm.sh`.

# Waits up to $2 seconds for a first line in file $1 and prints it.
first_line() {
  i=0
  while [ ! -s "$1" ] && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  head -1 "$1"
}
