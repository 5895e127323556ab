#!/usr/bin/env python3
"""Bad-input sweep: runs `tuneup` with wrong arguments, addresses, files, environments and devices, and checks that
each is handled well: the documented exit code, exactly one `tuneup:` line on stderr (the last one) for a failure,
no trap or backtrace, and an answer within the time limit. Prints one line per failure and `N passed, N failed`.

    tools/bad-input-sweep.py [PATH-TO-TUNEUP]      (default: .build/debug/tuneup)
"""
import atexit
import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNEUP = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/tuneup")
IMAGES = os.path.join(ROOT, "firmware-images")
LIMIT = 20.0  # seconds a bad input may take to be refused (a device that never answers: timeout x retries)

cases = []  # (name, args, expected exit code, options)


def case(args, code, **options):
    cases.append((" ".join(args), args, code, options))


# --- Arguments: 64, one line, nothing sent --------------------------------------------------------------------
for args in [
    ["bogus"], ["help", "bogus"], ["probe", "--bogus"], ["probe", "extra"], ["anc", "level", "1.5"],
    ["anc", "level", "-0.5"], ["anc", "level", "abc"], ["anc", "level", "nan"], ["anc", "dim"], ["ambient", "preset", "loud"],
    ["ambient", "set"], ["ambient", "set", "--left", "-1"], ["ambient", "set", "--left", "x"],
    ["ambient", "set", "--both", "1", "--left", "1"], ["ambient", "set", "--right", "99999999999999999999"],
    ["eq", "audio", "disco"], ["eq", "preset", "jazz"], ["eq", "set", "--", "1", "2", "3"],
    ["eq", "set", "--band", "0", "--gain", "40"], ["eq", "set", "--band", "99", "--gain", "1"],
    ["eq", "set", "--band", "0"], ["eq", "set", "--gains", "1,2,x"], ["eq", "get", "--preset", "nosuch"],
    ["settings", "set", "voice-prompt", "maybe"], ["settings", "set", "loudness", "on"], ["settings", "set"],
    ["probe", "--timeout", "-1"], ["probe", "--timeout", "0"], ["probe", "--timeout", "x"], ["probe", "--timeout", "1e9"],
    ["probe", "--retries", "-1"], ["probe", "--retries", "99"], ["probe", "--format", "xml"],
    ["probe", "--poll-interval", "50"], ["probe", "--poll-interval", "-5ms"], ["probe", "--poll-interval", "1h"],
    ["probe", "--usb-backend", "usbfs"], ["probe", "-d", "hidraw:dev/hidraw0"], ["probe", "-d", "hidraw:"],
    ["flash"], ["flash", "a", "b"], ["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--window", "0"],
    ["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--window", "-3"], ["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--wait", "0"],
    ["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--region", "boot"],
    ["monitor", "--count", "0"], ["monitor", "--duration", "-1"], ["bootloader", "dance"], ["bootloader", "enter", "--wait", "-1"],
    ["firmware", "read"], ["firmware", "read", "-o", "x", "--region", "boot"], ["firmware", "read", "-o", "x", "--length", "0"],
    ["firmware", "read", "-o", "x", "--length", "3MiB"], ["firmware", "read", "-o", "x", "--length", "4K"],
    ["image", "sign"], ["image", "inspect"], ["image", "build-sim-app", "--manifest", "factory", "--size", "x", "-o", "p.bin"],
    ["image", "build-sim-app", "--manifest", "factory", "--size", "99MiB", "-o", "p.bin"],
    ["sim", "headset", "--count", "0"], ["sim", "headset", "--count", "100000"], ["sim", "headset", "--profile", "grumpy"],
    ["sim", "headset", "--faults", "cut@x"], ["sim", "headset", "--listen", "udp:1"], ["sim", "headset", "--time-scale", "-1"],
    ["devices", "--format", "yaml"],
]:
    case(args, 64)

# --- Traceability, quarantine and SPC: refused at parse time (64, one line) -------------------------------------
RECIPE = os.path.join(ROOT, "recipes", "sim-headset.yaml")
for extra in [["--meta", "bad key=1"], ["--meta", "novalue"], ["--meta", "k=1", "--meta", "k=2"], ["--work-order", "a\nb"],
              ["--lot", ""], ["--operator", ""], ["--fixture", "x" * 300]]:
    case(["station", "run", "--recipe", RECIPE, "-d", "tcp:127.0.0.1:9"] + extra, 64)
for args in [["records", "spc", "--window", "1"], ["records", "attachment", "x", "y"], ["records", "release", "u", "--reason", "a\nb"]]:
    case(args, 64)

# --- Labels: a malformed printer address or label kind, or no destination, refused at parse time (64, one line) ----
for extra in [["--label-printer", "lpt1"], ["--label-printer", "tcp:"], ["--label-printer", "tcp:host:70000"],
              ["--label-code", "qr", "--labels", "/tmp"], ["--label-code", "datamatrix"]]:
    case(["station", "run", "--recipe", RECIPE, "-d", "tcp:127.0.0.1:9"] + extra, 64)
for args in [["records", "label", "u", "--product", "P"], ["records", "label", "u", "--product", "", "--labels", "/tmp"],
             ["records", "label", "u", "--product", "P", "--label-printer", "9100"]]:
    case(args, 64)

# --- IPC-CFX (--cfx): a malformed broker URL or spool option, refused at parse time (64, one line) ----------------
for extra in [["--cfx", "mes.local/cfx"], ["--cfx", "amqp://mes.local"], ["--cfx", "amqps://mes.local/cfx"],
              ["--cfx", "amqp://mes.local:0/cfx"], ["--cfx", "amqp://:5672/cfx"], ["--cfx", "amqp://mes.local/a b"],
              ["--cfx-spool", "/tmp/x"], ["--cfx", "amqp://mes.local/cfx", "--cfx-wait", "-1"]]:
    case(["station", "run", "--recipe", RECIPE, "-d", "tcp:127.0.0.1:9"] + extra, 64)

# --- Addresses -------------------------------------------------------------------------------------------------
for address, code in [
    ("bogus:thing", 64), ("tcp:localhost", 64), ("tcp:127.0.0.1:99999", 64), ("tcp:127.0.0.1:1", 69),
    ("tcp:no-such-host.invalid:4100", 69), ("serial:/nonexistent/tty", 69), ("serial:/dev/null", 69), ("usb:zz:1", 64),
    ("usb:1209:0001", 69), ("usb:1-2.3", 69), ("bt:00:11", 64), ("bt:AA:BB:CC:DD:EE:FF", 69), ("bt:AA:BB:CC:DD:EE:FF:99", 64),
    ("sim:/tmp", 74), ("sim:/nonexistent/dir/x.json", 74), ("", 64),
]:
    for command in (["probe"], ["battery"], ["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], ["bootloader", "status"],
                    ["firmware", "read", "-o", "read.bin"]):
        case(command + ["--device", address], code)

# --- Images and keys: refused before touching the device ------------------------------------------------------
for name in ["broken-bad-hash.img", "broken-bad-signature.img", "broken-other-key.img", "broken-other-model.img",
             "broken-too-large.img", "broken-truncated.img", "raw-app-1.5.0-no-region.bin", "app-1.3.0.img"]:
    case(["flash", os.path.join(IMAGES, name), "--key", os.path.join(IMAGES, "dev-public.pem")], 65)
case(["flash", os.path.join(IMAGES, "broken-unsigned.img"), "--key", os.path.join(IMAGES, "dev-public.pem")], 65)
case(["flash", "/nonexistent.img"], 74)
case(["flash", "/etc"], 74)
case(["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--key", "/nonexistent.pem"], 74)
case(["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--key", os.path.join(IMAGES, "README.md")], 65)
case(["flash", os.path.join(IMAGES, "app-1.5.0.img"), "--progress-file", "/nonexistent/p.jsonl"], 74)
case(["image", "verify", os.path.join(IMAGES, "broken-bad-hash.img")], 65)
case(["image", "verify", "/nonexistent.img"], 74)
case(["image", "inspect", "/dev/null"], 65)
case(["image", "sign", "/nonexistent.bin", "-o", "x.img", "--key", os.path.join(IMAGES, "test-only-dev-private.pem"), "--version", "1.0.0"], 74)
case(["image", "sign", os.path.join(IMAGES, "README.md"), "-o", "x.img", "--key", os.path.join(IMAGES, "dev-public.pem"), "--version", "1.0.0"], 65)
case(["image", "sign", os.path.join(IMAGES, "README.md"), "-o", "x.img", "--key", os.path.join(IMAGES, "test-only-dev-private.pem"), "--version", "x.y"], 64)
case(["image", "build-sim-app", "--manifest", "/nonexistent.json", "--size", "8KiB", "-o", "p.bin"], 74)
case(["image", "build-sim-app", "--manifest", os.path.join(IMAGES, "README.md"), "--size", "8KiB", "-o", "p.bin"], 65)
case(["image", "keygen", "-o", "/nonexistent/k.pem", "--public-out", "/nonexistent/p.pem"], 74)
case(["firmware", "read", "-o", "/nonexistent/dir/read.bin"], 74)
case(["sim", "headset", "--secure-boot", "/nonexistent.pem"], 74)
case(["sim", "headset", "--state", "/nonexistent/dir/s.json"], 74)

# --- Output that cannot be written ----------------------------------------------------------------------------
for command in (["probe"], ["probe", "--format", "json"], ["battery"], ["anc"], ["eq", "get"], ["settings"],
                ["bootloader", "status"], ["image", "inspect", os.path.join(IMAGES, "app-1.5.0.img")], ["--help"]):
    case(command, 74 if command != ["--help"] else 0, stdout="/dev/full")
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img"), "--progress-file", "/dev/full"], 74)
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img"), "--format", "json"], 74, stdout="/dev/full")
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], 74, stderr="/dev/full")

# --- speaker receive: bad options (64), a device that does not exist, an address not this host's (69), a state file
# in no directory (74): one line each, before anything plays ------------------------------------------------------
for args in [["--latency-ms", "2000"], ["--latency-ms", "x"], ["--listen", "udp:1"], ["--alsa-device", ""], ["--name", ""]]:
    case(["speaker", "receive"] + args, 64)
RECEIVE = ["speaker", "receive", "--listen", "tcp:127.0.0.1:0", "--audio-port", "0", "--discovery-port", "0"]
case(RECEIVE + ["--alsa-device", "hw:99"], 69)
case(RECEIVE + ["--alsa-device", "no-such-device"], 69)
case(["speaker", "receive", "--alsa-device", "file:'/dev/null',raw", "--listen", "tcp:192.0.2.1:0", "--audio-port", "0", "--discovery-port", "0"], 69)
case(RECEIVE + ["--alsa-device", "file:'/dev/null',raw", "--state", "/nonexistent/dir/s.json"], 74)

# --- speaker play - (standard input): a bad --raw, --raw without -, --from on a pipe: one line, 64, before reading --
for args in [["-", "--raw", "s16le:48000"], ["-", "--raw", "u8:48000:2"], ["-", "--raw", "s16le:1000:2"],
             ["-", "--raw", "s16le:48000:9"], ["-", "--raw", "s16le:x:2"], ["-", "--raw", ""],
             ["song.wav", "--raw", "s16le:48000:2"], ["-", "--from", "3"]]:
    case(["speaker", "play"] + args, 64)

# --- A library an audio command opens when it needs it (dlopen: libsndfile, libcurl) is broken: one line naming
# the Debian package, 74, before anything plays; other commands never open it --------------------------------------
BROKEN_LIBS = tempfile.mkdtemp(prefix="tuneup-sweep-libs-")
atexit.register(shutil.rmtree, BROKEN_LIBS, True)


def broken(library):
    """An LD_LIBRARY_PATH on which `library` is found first, as a directory (dlopen refuses it)."""
    directory = os.path.join(BROKEN_LIBS, library)
    os.makedirs(os.path.join(directory, library))
    return {"LD_LIBRARY_PATH": directory}


case(["speaker", "play", os.path.join(IMAGES, "app-1.5.0.img"), "--speaker", "127.0.0.1:9"], 74, env=broken("libsndfile.so.1"))
case(["speaker", "play", "http://127.0.0.1:9/a.mp3", "--speaker", "127.0.0.1:9"], 74, env=broken("libcurl.so.4"))
case(["--version"], 0, env={"LD_LIBRARY_PATH": os.path.join(BROKEN_LIBS, "libsndfile.so.1")})

# --- Environment ----------------------------------------------------------------------------------------------
case(["devices"], 64, env={"TUNEUP_USB_IDS": "0a12"})
case(["probe", "--device", "usb:1209:0001"], 64, env={"TUNEUP_USB_IDS": "1209:0001/zz"})
case(["probe"], 64, env={"TUNEUP_DEVICE": "bogus:thing"})
case(["probe"], 69, env={"TUNEUP_DEVICE": "tcp:127.0.0.1:1"})
case(["devices"], 69)  # this machine has no USB subsystem

# --- State files ----------------------------------------------------------------------------------------------
case(["probe"], 74, state_json="not json")
case(["probe"], 74, state_json='{"version": 999, "devices": []}')
case(["probe"], 74, state_json='{"version": 2, "devices": [{"anc": "loud"}]}')
case(["probe"], 74, truncate_flash=1000)

# --- Devices in the wrong state, or that stop answering -------------------------------------------------------
case(["anc", "on"], 65, before=[["bootloader", "enter"]])
case(["eq", "get"], 65, before=[["bootloader", "enter"]])
case(["battery"], 69, sim=["--profile", "silent"], extra=["--timeout", "0.3", "--retries", "1"])
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], 69, sim=["--profile", "silent"], extra=["--timeout", "0.3", "--retries", "1", "--wait", "2"])
case(["probe"], 69, sim=["--profile", "stops-after:5"], extra=["--timeout", "0.3", "--retries", "1"])
# A link that drops every 3000 bytes: the update keeps its progress across reconnects and completes.
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], 0, sim=["--faults", "link:disconnect=3000", "--time-scale", "0"])
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], 69, sim=["--faults", "link:disconnect=200", "--time-scale", "0"], extra=["--wait", "5"])
case(["flash", os.path.join(IMAGES, "broken-unsigned.img")], 65, sim=["--secure-boot", os.path.join(IMAGES, "dev-public.pem")])
case(["flash", os.path.join(IMAGES, "broken-other-key.img")], 65, sim=["--secure-boot", os.path.join(IMAGES, "dev-public.pem")])
case(["flash", os.path.join(IMAGES, "app-1.3.0.img"), "--allow-downgrade"], 65, sim=["--secure-boot", os.path.join(IMAGES, "dev-public.pem")])
case(["flash", os.path.join(IMAGES, "app-1.4.3-small.img")], 69, sim=["--profile", "silent"])
case(["bootloader", "status"], 69, sim=["--profile", "silent"])
case(["flash", os.path.join(IMAGES, "raw-app-1.5.0-no-region.bin"), "--region", "app"], 65,
     sim=["--secure-boot", os.path.join(IMAGES, "dev-public.pem")])


def run(args, state, cwd, env_extra=None, stdout=None, stderr=None, timeout=LIMIT):
    env = dict(os.environ, XDG_STATE_HOME=state)
    env.pop("TUNEUP_DEVICE", None)
    env.pop("TUNEUP_USB_IDS", None)
    env.update(env_extra or {})
    out = open(stdout, "wb") if stdout else subprocess.PIPE
    err = open(stderr, "wb") if stderr else subprocess.PIPE
    start = time.monotonic()
    p = subprocess.Popen([TUNEUP] + args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env)
    try:
        o, e = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        o, e = p.communicate()
        return None, o or b"", e or b"", time.monotonic() - start
    return p.returncode, o or b"", e or b"", time.monotonic() - start


def start_sim(args, state):
    env = dict(os.environ, XDG_STATE_HOME=state)
    p = subprocess.Popen([TUNEUP, "sim", "headset", "--listen", "tcp:127.0.0.1:0", "--state", os.path.join(state, "tcp.json")] + args,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    return p, p.stdout.readline().decode().strip()


def check(name, args, code, options):
    state = tempfile.mkdtemp(prefix="tuneup-sweep-")
    try:
        sim = None
        if "state_json" in options or "truncate_flash" in options:
            run(["probe"], state, state)
            path = os.path.join(state, "tuneup", "sim-headset.json")
            if "state_json" in options:
                with open(path, "w") as f:
                    f.write(options["state_json"])
            if "truncate_flash" in options:
                os.truncate(path + ".flash", options["truncate_flash"])
        for before in options.get("before", []):
            run(before, state, state)
        if "sim" in options:
            sim, address = start_sim(options["sim"], state)
            args = args + ["--device", address] + options.get("extra", [])
        status, out, err, seconds = run(args, state, state, options.get("env"), options.get("stdout"), options.get("stderr"))
        if sim:
            sim.send_signal(signal.SIGTERM)
            sim.wait(timeout=20)
        problems = []
        text = err.decode(errors="replace")
        lines = [l for l in text.splitlines() if l.strip()]
        if status is None:
            problems.append(f"no answer within {LIMIT:.0f} s")
        elif status != code:
            problems.append(f"exit {status}, expected {code}")
        if "Fatal error" in text or "Stack dump" in text or "Backtrac" in text or (status or 0) >= 128:
            problems.append("trapped")
        if code != 0 and options.get("stderr") is None:
            ours = [l for l in lines if l.startswith("tuneup:")]
            if len(ours) != 1 or not lines or not lines[-1].startswith("tuneup:"):
                problems.append(f"{len(ours)} 'tuneup:' lines, stderr: {text.strip()[-300:]!r}")
        return problems
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main():
    if not os.access(TUNEUP, os.X_OK):
        sys.exit(f"no tuneup at {TUNEUP}: build it first (swift build)")
    # Every case has its own state directory (and simulator), so they run four at a time: many of them spend their
    # time waiting for a device that does not answer, not computing. Results are printed in the cases' order.
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = pool.map(lambda c: (c[0], check(c[0], c[1], c[2], c[3])), cases)
        for name, problems in results:
            if problems:
                failed += 1
                print(f"FAIL tuneup {name}: {'; '.join(problems)}", flush=True)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
