#!/bin/sh
# Host check of the usbmon scenario (e2e.sh runs it after the guest with the artifacts' directory): check.py.
exec python3 "$(dirname "$0")/check.py" "$@"
