#!/usr/bin/env python3
"""Host side of the usbmon scenario: decodes what the guest captured with tshark and tools/wireshark/lightx.lua.

usage: check.py ARTIFACTS_DIR [--tshark PATH]

For each USB flash (usb-libusb.pcap, usb-hidraw.pcap: usbmon, LINKTYPE_USB_LINUX_MMAPPED):
  - the file is a pcap of link type 220;
  - the feature-report control transfers (SET_REPORT 0x21/0x09 and GET_REPORT 0xA1/0x01, wValue 0x03F0/0x03F1) are
    counted from the kernel's own headers (parsed here, not by tshark), and every one of them, submission and
    completion, is a packet tshark gives to the LightX dissector;
  - no packet is malformed and the LightX dissector raises no warning; its packets are counted by kind and command;
  - the write requests (BootWriteImage 0x27) are the image's 256-byte blocks that are not all 0xFF (plus the flash's
    `resent`), every one acknowledged Ok, and they carry the JSON result's `bytesWritten`;
  - per direction, the LightX packets equal those decoded from Tuneup's own capture of the same flash (--capture):
    the replies exactly, the requests too except those Tuneup tried to send while the headset re-enumerated (never
    on the bus: at most one per reconnect, named in an INFO line).
For the RFCOMM flash (bt.btsnoop from btmon, both controllers): the same on hci1's (Tuneup's side) RFCOMM payloads,
handed to the LightX stream dissector by Decode As (-d btrfcomm.dlci==N,lightx_stream) when lightx.lua offers itself
for it, else by rfcomm-lightx.lua.
Prints PASS/FAIL/INFO lines; exit 0 when nothing failed.
"""
import collections
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
LUA = os.path.join(ROOT, "tools", "wireshark", "lightx.lua")
RFCOMM_LUA = os.path.join(HERE, "rfcomm-lightx.lua")
IMAGE = os.path.join(ROOT, "firmware-images", "app-1.5.0.img")
WRITE, ERASE = 0x27, 0x26
failed = False


def report(ok, name, detail=""):
    global failed
    failed |= not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""))


def info(text):
    print(f"INFO {text}")


def tshark(args, tshark_path, env=None):
    cmd = [tshark_path, "-X", f"lua_script:{LUA}"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


FIELDS = ["frame.number", "_ws.col.Protocol", "lightx.kind", "lightx.command", "lightx.address", "lightx.param1",
          "lightx.status", "lightx.buffer_length", "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
          "frame.protocols"]


def rows(path, tshark_path, extra=(), env=None):
    """One dict per packet, every field a list of its occurrences."""
    args = list(extra) + ["-r", path, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
                          "-E", "aggregator=|"]
    for f in FIELDS:
        args += ["-e", f]
    result = []
    for line in tshark(args, tshark_path, env).splitlines():
        cols = line.split("\t") + [""] * len(FIELDS)
        result.append({f: (c.split("|") if c else []) for f, c in zip(FIELDS, cols)})
    return result


def num(v):
    return int(v, 0) if v not in (None, "") else None


def messages(packets):
    """The LightX packets decoded, in order: (kind, command, address, param1, status, buffer length, frame)."""
    out = []
    for p in packets:
        for i, kind in enumerate(p["lightx.kind"]):
            at = lambda f: num(p[f][i]) if i < len(p[f]) else None  # noqa: E731
            out.append((kind, at("lightx.command"), at("lightx.address"), at("lightx.param1"), at("lightx.status"),
                        at("lightx.buffer_length"), int(p["frame.number"][0])))
    return out


def key(m):
    return m[:6]


def by_command(msgs):
    c = collections.Counter((m[0], m[1]) for m in msgs)
    return ", ".join(f"{k} 0x{cmd:02X} {n}" for (k, cmd), n in sorted(c.items()))


def image_blocks():
    """(size, blocks to write, their bytes): 256-byte blocks of the image padded with 0xFF, all-0xFF ones skipped."""
    data = open(IMAGE, "rb").read()
    padded = data + b"\xff" * (-len(data) % 256)
    blocks = [padded[i:i + 256] for i in range(0, len(padded), 256)]
    written = [b for b in blocks if b != b"\xff" * 256]
    return len(data), len(written), 256 * len(written), -(-len(data) // 4096)


def result_of(path):
    if os.path.exists(path):
        for line in open(path):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") == "result":
                return e
    return None


def problems(packets):
    """'frame: what' for malformed packets and for warnings (or worse) in packets LightX dissected."""
    bad = []
    for p in packets:
        if p["_ws.malformed"]:
            bad.append(f"frame {p['frame.number'][0]}: malformed")
        if "lightx" in ":".join(p["frame.protocols"]) or p["_ws.col.Protocol"] == ["LightX"]:
            for sev, msg in zip(p["_ws.expert.severity"], p["_ws.expert.message"]):
                if num(sev) >= 0x600000:
                    bad.append(f"frame {p['frame.number'][0]}: {msg}")
    return bad


def usbmon_reports(path):
    """Feature-report transfers in a usbmon pcap, from the kernel's 64-byte headers: {frame: (S|C, SET|GET, id)}."""
    d = open(path, "rb").read()
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", d, 0)
    off, frame, pending, out = 24, 0, {}, {}
    while off + 16 <= len(d):
        _, _, cap, _ = struct.unpack_from("<IIII", d, off)
        rec = d[off + 16:off + 16 + cap]
        off += 16 + cap
        frame += 1
        urb, kind, xfer, _, _, _, flag_setup = struct.unpack_from("<QBBBBHb", rec, 0)
        status = struct.unpack_from("<i", rec, 28)[0]
        if chr(kind) == "S" and xfer == 2 and flag_setup == 0:
            bm, req, value = struct.unpack_from("<BBH", rec, 40)
            if (bm, req) in ((0x21, 0x09), (0xA1, 0x01)) and value in (0x3F0, 0x3F1):
                t = ("SET" if req == 0x09 else "GET", value & 0xFF)
                pending[urb] = t
                out[frame] = ("S",) + t
        elif chr(kind) != "S" and urb in pending:
            out[frame] = ("C",) + pending.pop(urb) + (status,)
    return magic, link, out


def compare_directions(name, got, own, reconnects):
    """The capture's LightX packets against Tuneup's own, per direction (the two see a request and a reply that
    cross in flight in either order)."""
    for kind, kinds in (("request", "requests"), ("reply", "replies"), ("push", "pushes")):
        a = [key(m) for m in got if m[0] == kind]
        b = [m for m in own if m[0] == kind]
        if a == [key(m) for m in b]:
            report(True, f"{name}-{kinds}-equal-own-capture", f"{len(a)} {kinds}, the same in the same order")
            continue
        # Tuneup's capture may hold requests that never reached the bus (sent while the device re-enumerated).
        i, extra = 0, []
        for m in b:
            if i < len(a) and a[i] == key(m):
                i += 1
            else:
                extra.append(m)
        if kind == "request" and i == len(a) and len(extra) <= reconnects:
            report(True, f"{name}-{kinds}-equal-own-capture",
                   f"{len(a)} {kinds} in the same order; {len(extra)} more in Tuneup's own capture")
            # Which of identical requests (polls) were the lost ones: those no reply followed before the next one.
            lost = [m for j, m in enumerate(own) if m[0] == "request" and key(m) in {key(e) for e in extra}
                    and not any(n[0] == "reply" and n[1] == m[1] for n in
                                own[j + 1:next((k for k in range(j + 1, len(own)) if key(own[k]) == key(m)),
                                               len(own))])]
            info(f"{name}: requests in Tuneup's capture that never reached the bus ({reconnects} reconnects: sent "
                 f"while the headset re-enumerated): " + "; ".join(f"own frame {m[6]} command 0x{m[1]:02X}"
                                                                   for m in lost))
        else:
            first = next((j for j, (x, y) in enumerate(zip(a, b)) if x != key(y)), min(len(a), len(b)))
            report(False, f"{name}-{kinds}-equal-own-capture",
                   f"{len(a)} vs {len(b)} in Tuneup's own; {kind} {first + 1} differs: "
                   f"{a[first] if first < len(a) else None} vs {key(b[first]) if first < len(b) else None}")


def check_flash(name, msgs, res, image):
    size, blocks, block_bytes, sectors = image
    writes = [m for m in msgs if m[0] == "request" and m[1] == WRITE]
    acks = [m for m in msgs if m[0] == "reply" and m[1] == WRITE and m[4] == 0]
    erases = [m for m in msgs if m[0] == "request" and m[1] == ERASE]
    if res is None:
        report(False, f"{name}-result", "no JSON result from the flash")
        return
    resent = res.get("resent", 0)
    report(len(writes) == blocks + resent, f"{name}-write-requests",
           f"{len(writes)} BootWriteImage requests: the image ({size} bytes) has {blocks} blocks to write, "
           f"the flash resent {resent}")
    report(len(acks) == blocks, f"{name}-writes-acknowledged", f"{len(acks)} Ok replies to BootWriteImage")
    carried = sum(m[5] or 0 for m in writes)
    report(res.get("bytesWritten") == block_bytes and carried == block_bytes + 256 * resent, f"{name}-bytes-written",
           f"the write requests carry {carried} bytes, the result's bytesWritten is {res.get('bytesWritten')}, "
           f"the image's blocks {block_bytes}")
    info(f"{name}: {len(erases)} erase requests ({sectors} sectors), {res.get('reconnects')} reconnects, "
         f"{res.get('seconds', 0):.2f} s")


def check_usb(d, name, flash, tshark_path, image):
    path = os.path.join(d, f"{name}.pcap")
    if not os.path.exists(path):
        report(False, f"{name}-capture", "not returned by the guest")
        return
    magic, link, transfers = usbmon_reports(path)
    report(magic == 0xA1B2C3D4 and link == 220, f"{name}-linktype-220", f"pcap, link type {link}")
    packets = rows(path, tshark_path)
    c = collections.Counter(t[1:3] for t in transfers.values() if t[0] == "S")
    failed_transfers = [f for f, t in transfers.items() if t[0] == "C" and t[3] != 0]
    info(f"{name}: {len(packets)} usbmon events; feature-report transfers: "
         + ", ".join(f"{k} 0x{r:02X} {n}" for (k, r), n in sorted(c.items()))
         + f"; {len(failed_transfers)} completed with an error")
    # The events that carry report bytes or a request for them: every submission, and GET_REPORT's successful
    # completion (a SET_REPORT's completion carries only its status; so does a GET_REPORT that failed, e.g. -EPROTO
    # while the headset leaves the bus to re-enumerate: no report came).
    carrying = [f for f, t in transfers.items() if t[0] == "S" or (t[1] == "GET" and t[3] == 0)]
    unclaimed = [f for f in carrying if packets[f - 1]["_ws.col.Protocol"] != ["LightX"]]
    report(bool(carrying) and not unclaimed, f"{name}-every-report-decoded",
           f"{len(carrying)} submissions and GET_REPORT completions, {len(unclaimed)} not dissected as LightX"
           + (f" (frames {unclaimed[:5]})" if unclaimed else ""))
    bad = problems(packets)
    report(not bad, f"{name}-no-malformed", "; ".join(bad[:5]) if bad else "0 malformed, 0 LightX warnings")
    msgs = messages(packets)
    info(f"{name}: {len(msgs)} LightX packets: {by_command(msgs)}")
    res = result_of(os.path.join(d, f"{flash}.json"))
    check_flash(name, msgs, res, image)
    own = os.path.join(d, f"{flash}.pcapng")
    if os.path.exists(own):
        compare_directions(name, msgs, messages(rows(own, tshark_path)), (res or {}).get("reconnects", 0))
    else:
        report(False, f"{name}-own-capture", "not returned by the guest")


def check_bt(d, tshark_path, image):
    path = os.path.join(d, "bt.btsnoop")
    if not os.path.exists(path):
        report(False, "bt-capture", "not returned by the guest")
        return
    # Tuneup's side only (hci1): hci0's records carry the same frames the other way.
    hci1 = os.path.join(d, "bt-hci1.pcapng")
    tshark(["-r", path, "-Y", "hci_mon.adapter_id == 1", "-w", hci1], tshark_path)
    dl = tshark(["-r", hci1, "-Y", "btrfcomm.len > 0", "-T", "fields", "-e", "btrfcomm.dlci"], tshark_path)
    dlcis = sorted({int(x, 0) for x in dl.split()} - {0})
    info(f"bt: hci1's RFCOMM data on DLCI {', '.join(map(str, dlcis))} ({len(dl.split())} frames)")
    # Decode As when lightx.lua offers its stream dissector for btrfcomm.dlci; else rfcomm-lightx.lua does it.
    decode_as = [a for d in dlcis for a in ("-d", f"btrfcomm.dlci=={d},lightx_stream")]
    try:
        packets, how = rows(hci1, tshark_path, decode_as), " ".join(decode_as)
    except RuntimeError:
        env = dict(os.environ, LIGHTX_RFCOMM_DLCI=",".join(map(str, dlcis)))
        packets = rows(hci1, tshark_path, ["-X", f"lua_script:{RFCOMM_LUA}"], env)
        how = "rfcomm-lightx.lua (tshark 4.0 refuses Decode As: lightx.lua does not offer itself for btrfcomm.dlci)"
    msgs = messages(packets)
    info(f"bt: {len(msgs)} LightX packets through {how}: {by_command(msgs)}")
    bad = problems(packets)
    report(bool(msgs) and not bad, "bt-no-malformed",
           "; ".join(bad[:5]) if bad else f"{len(packets)} HCI records, 0 malformed, 0 LightX warnings")
    res = result_of(os.path.join(d, "bt-flash.json"))
    check_flash("bt", msgs, res, image)
    own = os.path.join(d, "bt-flash.pcapng")
    if os.path.exists(own):
        compare_directions("bt", msgs, messages(rows(own, tshark_path)), (res or {}).get("reconnects", 0))
    else:
        report(False, "bt-own-capture", "not returned by the guest")


def main():
    args = sys.argv[1:]
    tshark_path = "/usr/bin/tshark"
    if "--tshark" in args:
        i = args.index("--tshark")
        tshark_path = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: check.py ARTIFACTS_DIR [--tshark PATH]", file=sys.stderr)
        return 64
    if not os.path.exists(tshark_path):
        report(False, "tshark", f"{tshark_path} not found (Debian: apt-get install tshark)")
        return 1
    info(subprocess.run([tshark_path, "-v"], capture_output=True, text=True).stdout.splitlines()[0])
    image = image_blocks()
    for name, flash in (("usb-libusb", "usb-flash-libusb"), ("usb-hidraw", "usb-flash-hidraw")):
        try:
            check_usb(args[0], name, flash, tshark_path, image)
        except (RuntimeError, OSError, struct.error) as e:
            report(False, name, str(e))
    try:
        check_bt(args[0], tshark_path, image)
    except (RuntimeError, OSError) as e:
        report(False, "bt", str(e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
