-- HKWirelessHD (Tuneup's speaker protocol, versions 1-5) for Wireshark and tshark 4.0 and later:
-- docs/speaker-protocol.md, docs/wireshark.md.
--
--   * control frames ("TS"): pcapng LINKTYPE_USER2 (Tuneup's captures; reassembled per interface and direction), and
--     TCP port 45455 plus a heuristic, reassembled across segments;
--   * audio datagrams ("TA"): LINKTYPE_USER3, UDP port 45456 and a heuristic;
--   * clock datagrams ("TC", version 4): LINKTYPE_USER4, UDP port 45455 and a heuristic;
--   * discovery ("TD") and the relay ("TR"): UDP port 45454.
-- A wrong CRC-32 is an expert warning; a frame cut short an expert note, never a Lua error.

-- The helpers the dissectors share: tuneup-common.lua beside this file, loaded once.
local common = tuneup_dissector_common
    or dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "") .. "tuneup-common.lua")

local hkwhd = Proto("hkwhd", "HKWirelessHD")

local requests = {
    [0x01] = "hello", [0x02] = "getDeviceInfo", [0x03] = "getStatus", [0x04] = "setVolume", [0x05] = "setMute",
    [0x06] = "setBalance", [0x07] = "setRole", [0x08] = "setChannelType", [0x09] = "setName", [0x0A] = "joinGroup",
    [0x0B] = "leaveGroup", [0x0C] = "joinSession", [0x0D] = "leaveSession", [0x0E] = "play", [0x0F] = "pause",
    [0x10] = "resume", [0x11] = "stop", [0x12] = "clockSync", [0x13] = "setClockMap",
}
local events = {
    [0x40] = "deviceStateUpdated", [0x41] = "errorOccurred", [0x42] = "playbackEnded", [0x43] = "volumeChanged",
    [0x44] = "playbackStateChanged", [0x45] = "playbackTime", [0x46] = "resendRequest", [0x47] = "playbackPaused",
}
local type_names = {}
for k, v in pairs(requests) do
    type_names[k] = v
    type_names[k + 0x80] = v .. " reply"
end
for k, v in pairs(events) do type_names[k] = v end
type_names[0x7E] = "accepted"
type_names[0x7F] = "failed"
type_names[0x81] = "hello reply"
type_names[0x82] = "device info"
type_names[0x83] = "status"
type_names[0x92] = "clock sync reply"
for k = 0x84, 0x93 do if k ~= 0x92 and requests[k - 0x80] then type_names[k] = "done (" .. requests[k - 0x80] .. ")" end end

local reasons = {
    [1] = "appeared", [2] = "disappeared", [3] = "session-changed", [4] = "name-changed", [5] = "group-changed",
    [6] = "balance-changed", [7] = "role-changed", [8] = "channel-type-changed", [9] = "wifi-signal-changed",
    [10] = "playing-changed", [11] = "master-changed",
}
local errors = {
    [1] = "version-mismatch", [2] = "hello-required", [3] = "malformed-request", [4] = "unsupported-request",
    [5] = "invalid-value", [6] = "not-in-session", [7] = "unknown-stream", [8] = "invalid-state",
    [9] = "playback-interrupted", [10] = "audio-underrun", [11] = "unsupported-format",
    [12] = "clock-not-synchronized", [13] = "internal-error",
}
local player_states = { [0] = "initialized", [1] = "playing", [2] = "preparing", [3] = "paused", [4] = "stopped" }
local sample_formats = { [1] = "s16le", [2] = "s24le" }
local sources = { [0] = "local file", [1] = "HTTP stream" }
local clock_types = { [1] = "request", [2] = "reply" }
local discovery_types = { [1] = "query", [2] = "answer" }

-- Field names: docs/capture.md §3 (shared with the project's decoder); the `hkwhd.p.*` payload fields beyond it
-- decode each message's payload for display.
local f = {
    magic = ProtoField.string("hkwhd.magic", "Magic"),
    version = ProtoField.uint8("hkwhd.version", "Version", base.DEC),
    type = ProtoField.uint8("hkwhd.type", "Type", base.HEX, type_names),
    request_id = ProtoField.uint32("hkwhd.request_id", "Request id", base.DEC),
    payload_length = ProtoField.uint16("hkwhd.payload_length", "Payload length", base.DEC),
    payload = ProtoField.bytes("hkwhd.payload", "Payload"),
    crc = ProtoField.uint32("hkwhd.crc", "CRC-32", base.HEX),
    crc_status = ProtoField.uint8("hkwhd.crc.status", "CRC status", base.DEC, { [0] = "Bad", [1] = "Good" }),
    -- Datagrams' version byte and CRC (hkwhd.version and hkwhd.crc are the control frame's, docs/capture.md §3).
    dgram_version = ProtoField.uint8("hkwhd.datagram.version", "Version", base.DEC),
    dgram_crc = ProtoField.uint32("hkwhd.datagram.crc", "CRC-32", base.HEX),
    -- payload fields
    min_version = ProtoField.uint8("hkwhd.p.min_version", "Lowest version", base.DEC),
    max_version = ProtoField.uint8("hkwhd.p.max_version", "Highest version", base.DEC),
    chosen_version = ProtoField.uint8("hkwhd.p.chosen_version", "Chosen version", base.DEC),
    name = ProtoField.string("hkwhd.p.name", "Name"),
    device_id = ProtoField.uint64("hkwhd.p.device_id", "Device id", base.HEX),
    group_id = ProtoField.uint64("hkwhd.p.group_id", "Group id", base.HEX),
    port = ProtoField.uint16("hkwhd.p.port", "Control port", base.DEC),
    audio_port = ProtoField.uint16("hkwhd.p.audio_port", "Audio port", base.DEC),
    model = ProtoField.string("hkwhd.p.model", "Model"),
    firmware = ProtoField.string("hkwhd.p.firmware", "Firmware version"),
    mac = ProtoField.ether("hkwhd.p.mac", "MAC address"),
    volume = ProtoField.uint8("hkwhd.p.volume", "Volume", base.DEC),
    active = ProtoField.bool("hkwhd.p.active", "Active (in session)"),
    wifi = ProtoField.int8("hkwhd.p.wifi_dbm", "Wi-Fi signal (dBm)", base.DEC),
    role = ProtoField.uint8("hkwhd.p.role", "Role", base.DEC),
    balance = ProtoField.int8("hkwhd.p.balance", "Balance", base.DEC),
    playing = ProtoField.bool("hkwhd.p.playing", "Playing"),
    channel_type = ProtoField.uint8("hkwhd.p.channel_type", "Channel type", base.DEC, { [1] = "stereo" }),
    master = ProtoField.bool("hkwhd.p.master", "Master"),
    group_name = ProtoField.string("hkwhd.p.group_name", "Group name"),
    ip = ProtoField.string("hkwhd.p.ip", "IP address"),
    muted = ProtoField.bool("hkwhd.p.muted", "Muted"),
    player_state = ProtoField.uint8("hkwhd.p.player_state", "Player state", base.DEC, player_states),
    stream = ProtoField.uint32("hkwhd.p.stream", "Stream id", base.DEC),
    rendered = ProtoField.uint64("hkwhd.p.rendered_frames", "Rendered frames", base.DEC),
    lost = ProtoField.uint32("hkwhd.p.lost_packets", "Lost packets", base.DEC),
    late = ProtoField.uint32("hkwhd.p.late_packets", "Late packets", base.DEC),
    rate = ProtoField.uint32("hkwhd.p.sample_rate", "Sample rate (Hz)", base.DEC),
    channels = ProtoField.uint8("hkwhd.p.channels", "Channels", base.DEC),
    sample_format = ProtoField.uint8("hkwhd.p.sample_format", "Sample format", base.DEC, sample_formats),
    source = ProtoField.uint8("hkwhd.p.source", "Source", base.DEC, sources),
    title = ProtoField.string("hkwhd.p.title", "Title"),
    t1 = ProtoField.uint64("hkwhd.p.t1", "t1 (controller send, ns)", base.DEC),
    t2 = ProtoField.uint64("hkwhd.p.t2", "t2 (speaker receive, ns)", base.DEC),
    t3 = ProtoField.uint64("hkwhd.p.t3", "t3 (speaker send, ns)", base.DEC),
    controller_ref = ProtoField.uint64("hkwhd.p.controller_reference", "Controller reference (ns)", base.DEC),
    speaker_ref = ProtoField.uint64("hkwhd.p.speaker_reference", "Speaker reference (ns)", base.DEC),
    rate_ppb = ProtoField.int32("hkwhd.p.rate_ppb", "Rate (ppb)", base.DEC),
    request_type = ProtoField.uint8("hkwhd.p.request_type", "Request type", base.HEX, type_names),
    error = ProtoField.uint16("hkwhd.p.error", "Error", base.DEC, errors),
    message = ProtoField.string("hkwhd.p.message", "Message"),
    reason = ProtoField.uint8("hkwhd.p.reason", "Reason", base.DEC, reasons),
    elapsed = ProtoField.uint32("hkwhd.p.elapsed_ms", "Elapsed (ms)", base.DEC),
    count = ProtoField.uint8("hkwhd.p.count", "Count", base.DEC),
    sequence = ProtoField.uint32("hkwhd.p.sequence", "Sequence", base.DEC),
    first_unplayed = ProtoField.uint64("hkwhd.p.first_unplayed", "First frame not played", base.DEC),
    -- audio
    audio_flags = ProtoField.uint8("hkwhd.audio.flags", "Flags", base.HEX),
    audio_end = ProtoField.bool("hkwhd.audio.end_of_stream", "End of stream", 8, nil, 0x01),
    audio_flac = ProtoField.bool("hkwhd.audio.flac", "FLAC", 8, nil, 0x02),
    audio_stream = ProtoField.uint32("hkwhd.audio.stream", "Stream id", base.DEC),
    audio_sequence = ProtoField.uint32("hkwhd.audio.sequence", "Sequence", base.DEC),
    audio_first = ProtoField.uint64("hkwhd.audio.first_frame", "First frame", base.DEC),
    audio_time = ProtoField.uint64("hkwhd.audio.presentation_time", "Presentation time (ns)", base.DEC),
    audio_rate = ProtoField.uint32("hkwhd.audio.sample_rate", "Sample rate (Hz)", base.DEC),
    audio_channels = ProtoField.uint8("hkwhd.audio.channels", "Channels", base.DEC),
    audio_format = ProtoField.uint8("hkwhd.audio.sample_format", "Sample format", base.DEC, sample_formats),
    audio_frames = ProtoField.uint16("hkwhd.audio.frame_count", "Frame count", base.DEC),
    audio_samples = ProtoField.bytes("hkwhd.audio.samples", "Samples"),
    -- clock
    clock_type = ProtoField.uint8("hkwhd.clock.type", "Clock type", base.DEC, clock_types),
    clock_t1 = ProtoField.uint64("hkwhd.clock.t1", "t1 (controller send, ns)", base.DEC),
    clock_t2 = ProtoField.uint64("hkwhd.clock.t2", "t2 (speaker receive, ns)", base.DEC),
    clock_t3 = ProtoField.uint64("hkwhd.clock.t3", "t3 (speaker send, ns)", base.DEC),
    -- discovery
    discovery_type = ProtoField.uint8("hkwhd.discovery.type", "Discovery type", base.DEC, discovery_types),
    query_id = ProtoField.uint32("hkwhd.discovery.query_id", "Query id", base.HEX),
    relay_port = ProtoField.uint16("hkwhd.discovery.sender_port", "Query sender's port", base.DEC),
    relay_address = ProtoField.string("hkwhd.discovery.sender_address", "Query sender's address"),
    starts_in = ProtoField.framenum("hkwhd.starts_in", "Frame starts in", base.NONE),
    skipped = ProtoField.bytes("hkwhd.skipped", "Bytes outside any frame"),
}
local ef = common.experts("hkwhd", {
    bad_crc = { "Bad CRC-32", "CHECKSUM", "WARN" },
    truncated = { "HKWirelessHD message cut short", "PROTOCOL", "NOTE" },
    payload = { "Payload does not fit its type's layout", "PROTOCOL", "WARN" },
    too_large = { "Control frame length above 4096", "PROTOCOL", "WARN" },
    partial = { "Control frame continues in a later packet", "REASSEMBLE", "CHAT" },
    skipped = { "Bytes outside any control frame skipped", "PROTOCOL", "WARN" },
    failed = { "The speaker refused a request", "RESPONSE_CODE", "NOTE" },
})
common.register(hkwhd, f, ef)

-- CRC-32/ISO-HDLC (zlib's) ------------------------------------------------------------------------------------

local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit32.band(c, 1) ~= 0 then c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1)) else c = bit32.rshift(c, 1) end
    end
    crc_table[i] = c
end
local function crc32(s, first, last)
    local c = 0xFFFFFFFF
    for k = first, last do
        c = bit32.bxor(crc_table[bit32.band(bit32.bxor(c, s:byte(k)), 0xFF)], bit32.rshift(c, 8))
    end
    return bit32.bxor(c, 0xFFFFFFFF)
end

-- Payload reader: adds big-endian fields in order; a field that does not fit adds an expert warning and stops.
local function reader(t, tree)
    local r = { o = 0, ok = true }
    function r.fixed(field, n)
        if not r.ok then return nil end
        if t:len() - r.o < n then
            tree:add_proto_expert_info(ef.payload, string.format("%d more bytes needed at offset %d", n - (t:len() - r.o), r.o))
            r.ok = false
            return nil
        end
        local range = t(r.o, n)
        tree:add(field, range)
        r.o = r.o + n
        return range
    end
    function r.bool(field)
        local range = r.fixed(field, 1)
        return range
    end
    function r.text(field)
        if not r.ok then return nil end
        if t:len() - r.o < 1 then r.fixed(field, 1) return nil end
        local n = t(r.o, 1):uint()
        if t:len() - r.o - 1 < n then
            tree:add_proto_expert_info(ef.payload, string.format("text of %d bytes at offset %d is cut short", n, r.o))
            r.ok = false
            return nil
        end
        local s = n > 0 and t(r.o + 1, n):string(ENC_UTF_8) or ""
        tree:add(field, t(r.o, n + 1), s)
        r.o = r.o + 1 + n
        return s
    end
    function r.finish()
        if r.ok and r.o < t:len() then
            tree:add_proto_expert_info(ef.payload, string.format("%d bytes after the last field", t:len() - r.o))
        end
    end
    return r
end

local payloads = {
    [0x01] = function(r) r.fixed(f.min_version, 1); r.fixed(f.max_version, 1); r.text(f.name) end,
    [0x81] = function(r)
        r.fixed(f.chosen_version, 1); r.fixed(f.device_id, 8); r.fixed(f.audio_port, 2); r.text(f.model)
        r.text(f.firmware)
    end,
    [0x82] = function(r)
        r.fixed(f.device_id, 8); r.fixed(f.group_id, 8); r.fixed(f.port, 2); r.fixed(f.mac, 6); r.fixed(f.volume, 1)
        r.bool(f.active); r.fixed(f.wifi, 1); r.fixed(f.role, 1); r.fixed(f.balance, 1); r.bool(f.playing)
        r.fixed(f.channel_type, 1); r.bool(f.master); r.text(f.name); r.text(f.group_name); r.text(f.model)
        r.text(f.ip); r.text(f.firmware)
    end,
    [0x83] = function(r)
        r.fixed(f.player_state, 1); r.fixed(f.stream, 4); r.fixed(f.rendered, 8); r.fixed(f.lost, 4)
        r.fixed(f.late, 4); r.bool(f.muted)
    end,
    [0x04] = function(r) r.fixed(f.volume, 1) end,
    [0x05] = function(r) r.bool(f.muted) end,
    [0x06] = function(r) r.fixed(f.balance, 1) end,
    [0x07] = function(r) r.fixed(f.role, 1) end,
    [0x08] = function(r) r.fixed(f.channel_type, 1) end,
    [0x09] = function(r) r.text(f.name) end,
    [0x0A] = function(r) r.fixed(f.group_id, 8); r.text(f.group_name) end,
    [0x0E] = function(r)
        r.fixed(f.stream, 4); r.fixed(f.rate, 4); r.fixed(f.channels, 1); r.fixed(f.sample_format, 1)
        r.fixed(f.source, 1); r.text(f.title)
    end,
    [0x0F] = function(r) r.fixed(f.stream, 4) end,
    [0x10] = function(r) r.fixed(f.stream, 4) end,
    [0x11] = function(r) r.fixed(f.stream, 4) end,
    [0x12] = function(r) r.fixed(f.t1, 8) end,
    [0x92] = function(r) r.fixed(f.t1, 8); r.fixed(f.t2, 8); r.fixed(f.t3, 8) end,
    [0x13] = function(r) r.fixed(f.controller_ref, 8); r.fixed(f.speaker_ref, 8); r.fixed(f.rate_ppb, 4) end,
    [0x7E] = function(r) r.fixed(f.request_type, 1) end,
    [0x7F] = function(r) r.fixed(f.request_type, 1); r.fixed(f.error, 2); r.text(f.message) end,
    [0x40] = function(r) r.fixed(f.device_id, 8); r.fixed(f.reason, 1) end,
    [0x41] = function(r) r.fixed(f.device_id, 8); r.fixed(f.error, 2); r.text(f.message) end,
    [0x42] = function(r) r.fixed(f.stream, 4) end,
    [0x43] = function(r) r.fixed(f.device_id, 8); r.fixed(f.volume, 1); r.bool(f.muted) end,
    [0x44] = function(r) r.fixed(f.stream, 4); r.fixed(f.player_state, 1) end,
    [0x45] = function(r) r.fixed(f.stream, 4); r.fixed(f.elapsed, 4) end,
    [0x46] = function(r, t)
        r.fixed(f.stream, 4)
        local c = r.fixed(f.count, 1)
        if c then for _ = 1, c:uint() do r.fixed(f.sequence, 4) end end
    end,
    [0x47] = function(r) r.fixed(f.stream, 4); r.fixed(f.first_unplayed, 8) end,
}

-- Control frames -----------------------------------------------------------------------------------------------

local function type_name(ty) return type_names[ty] or string.format("type 0x%02X", ty) end

-- One whole control frame `t` (a tvb range). Returns the summary and the frame's tree item.
local function dissect_control_frame(t, pinfo, tree, bad)
    local n = t:len()
    local ft = tree:add(hkwhd, t, "HKWirelessHD control frame")
    ft:add(f.magic, t(0, 2))
    ft:add(f.version, t(2, 1))
    ft:add(f.type, t(3, 1))
    ft:add(f.request_id, t(4, 4))
    ft:add(f.payload_length, t(8, 2))
    local ty = t(3, 1):uint()
    local plen = n - 14
    if plen > 0 then
        local pt = t(10, plen)
        local pi = ft:add(f.payload, pt)
        local layout = payloads[ty]
        if layout then
            local r = reader(pt, pi)
            layout(r, pt)
            r.finish()
        end
    end
    local ci = ft:add(f.crc, t(n - 4, 4))
    ft:add(f.crc_status, t(n - 4, 4), bad and 0 or 1):set_generated()
    if bad then
        local s = t:raw()
        ci:add_proto_expert_info(ef.bad_crc, string.format("Bad CRC-32: expected %08x, got %08x",
            crc32(s, 1, n - 4), t(n - 4, 4):uint()))
    end
    local summary = string.format("%s id %d", type_name(ty), t(4, 4):uint())
    if ty == 0x7F and plen >= 3 then
        local code = t(11, 2):uint()
        summary = summary .. " (" .. (errors[code] or tostring(code)) .. ")"
        ft:add_proto_expert_info(ef.failed, "failed: " .. (errors[code] or tostring(code)))
    end
    if bad then summary = summary .. " [bad CRC]" end
    ft:append_text(": " .. summary)
    return summary, ft
end

-- Scans stream bytes as ControlDeframer does: hunts "TS", waits for the header, refuses a length above 4096 (one
-- byte skipped), waits for the frame; a wrong CRC is decoded and flagged, the reader goes on after the frame.
local function control_step(s, i, n)
    local rem = n - i
    if s:byte(i + 1) ~= 0x54 or (rem >= 2 and s:byte(i + 2) ~= 0x53) then
        local nxt = s:find("T", i + 2, true)
        return "hunt", nxt and nxt - 1
    elseif rem < 10 then
        return "wait"
    end
    local len = s:byte(i + 9) * 256 + s:byte(i + 10)
    if len > 4096 then return "reject", { kind = "too_large", len = 10, length = len } end
    if rem < 14 + len then return "wait" end
    local stored = ((s:byte(i + 11 + len) * 256 + s:byte(i + 12 + len)) * 256 + s:byte(i + 13 + len)) * 256
        + s:byte(i + 14 + len)
    local bad = crc32(s, i + 1, i + 10 + len) ~= stored
    return "frame", { kind = bad and "bad" or "frame", len = 14 + len }
end
local function control_scan(s) return common.scan(s, control_step, "skipped") end

local function set_info(pinfo, summaries) common.set_info(pinfo, "HKWHD", summaries) end
local set_ends = common.set_ends

-- Control frames in Tuneup's captures (LINKTYPE_USER2): per interface and direction.
local control_streams = common.reassembler(control_scan)

function hkwhd.init()
    control_streams.reset()
end

-- Shows one scanned event `t` (a tvb range); returns a frame's summary. `detailed`: the too-large expert says the
-- length (TCP's keeps the expert's own text).
local function show_event(e, t, pinfo, tree, detailed)
    if e.kind == "frame" or e.kind == "bad" then
        local s, ft = dissect_control_frame(t, pinfo, tree, e.kind == "bad")
        if e.reassembled then ft:add(f.starts_in, e.first_frame):set_generated() end
        return s
    elseif e.kind == "too_large" then
        common.add_expert(tree:add(hkwhd, t, "HKWirelessHD: control header with a length above 4096"), ef.too_large,
            detailed and string.format("length %d above 4096", e.length) or nil)
    else
        tree:add(f.skipped, t):add_proto_expert_info(ef.skipped)
    end
end

local function show(tvb, pinfo, tree, result)
    local summaries = common.show_stream(tvb, tree, result, {
        reassembled = "Reassembled control frame",
        event = function(e, t) return show_event(e, t, pinfo, tree, true) end,
        proto = hkwhd,
        partial = "HKWirelessHD: start of a control frame (%d bytes), continued in a later packet",
        expert = ef.partial,
        continues = "[control frame continues]",
    })
    set_info(pinfo, summaries)
end

local hkwhd_control = Proto("hkwhd_control", "HKWirelessHD control stream")
function hkwhd_control.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "HKWHD"
    set_ends(pinfo)
    show(tvb, pinfo, tree, control_streams.result(pinfo, tvb, common.stream_key(pinfo)))
    return tvb:len()
end
DissectorTable.get("wtap_encap"):add(wtap.USER2, hkwhd_control)

-- TCP: desegmented by TCP.
local hkwhd_tcp = Proto("hkwhd_tcp", "HKWirelessHD control over TCP")
function hkwhd_tcp.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "HKWHD"
    local n = tvb:len()
    local s = tvb:raw(0, n)
    local evs, tail = control_scan(s)
    local summaries = {}
    for _, e in ipairs(evs) do summaries[#summaries + 1] = show_event(e, tvb(e.start, e.len), pinfo, tree, false) end
    set_info(pinfo, summaries)
    local more = n - tail >= 10 and 14 + s:byte(tail + 9) * 256 + s:byte(tail + 10) - (n - tail) or nil
    common.desegment(tvb, pinfo, tree, tail, more, hkwhd, "HKWirelessHD: frame cut short by the capture", ef.truncated)
    return n
end
DissectorTable.get("tcp.port"):add(45455, hkwhd_tcp)
hkwhd_tcp:register_heuristic("tcp", function(tvb, pinfo, tree)
    if tvb:len() < 10 then return false end
    if tvb(0, 2):uint() ~= 0x5453 then return false end
    local v = tvb(2, 1):uint()
    if v < 1 or v > 5 or tvb(8, 2):uint() > 4096 or type_names[tvb(3, 1):uint()] == nil then return false end
    pinfo.conversation = hkwhd_tcp
    hkwhd_tcp.dissector(tvb, pinfo, tree)
    return true
end)

-- Audio datagrams ------------------------------------------------------------------------------------------------

local function check_crc(t, tree, n)
    local s = t:raw(0, n)
    local stored = t(n - 4, 4):uint()
    local bad = crc32(s, 1, n - 4) ~= stored
    local ci = tree:add(f.dgram_crc, t(n - 4, 4))
    tree:add(f.crc_status, t(n - 4, 4), bad and 0 or 1):set_generated()
    if bad then
        ci:add_proto_expert_info(ef.bad_crc, string.format("Bad CRC-32: expected %08x, got %08x", crc32(s, 1, n - 4), stored))
    end
    return bad
end

-- The item of an audio or clock datagram (`name`), or nil when it is shorter than `min` bytes (`need` says how long
-- it should be: an expert note, and the Info column says it is cut short).
local function datagram(tvb, pinfo, tree, name, min, need)
    local n = tvb:len()
    pinfo.cols.protocol = "HKWHD"
    set_ends(pinfo)
    local item = tree:add(hkwhd, tvb(), "HKWirelessHD " .. name .. " datagram")
    if n < min then
        item:add_proto_expert_info(ef.truncated, string.format("%s, got %d", need, n))
        pinfo.cols.info = name .. " datagram cut short"
        return nil
    end
    return item
end

-- A datagram's summary (its CRC `bad` or not): on its item and in the Info column.
local function datagram_info(item, pinfo, info, bad)
    if bad then info = info .. " [bad CRC]" end
    item:append_text(": " .. info)
    pinfo.cols.info = info
end

local function dissect_audio(tvb, pinfo, tree)
    local n = tvb:len()
    local at = datagram(tvb, pinfo, tree, "audio", 40, "an audio datagram is at least 40 bytes")
    if at == nil then return n end
    at:add(f.magic, tvb(0, 2)); at:add(f.dgram_version, tvb(2, 1))
    local fi = at:add(f.audio_flags, tvb(3, 1))
    fi:add(f.audio_end, tvb(3, 1)); fi:add(f.audio_flac, tvb(3, 1))
    at:add(f.audio_stream, tvb(4, 4)); at:add(f.audio_sequence, tvb(8, 4)); at:add(f.audio_first, tvb(12, 8))
    at:add(f.audio_time, tvb(20, 8)); at:add(f.audio_rate, tvb(28, 4)); at:add(f.audio_channels, tvb(32, 1))
    at:add(f.audio_format, tvb(33, 1)); at:add(f.audio_frames, tvb(34, 2))
    if n > 40 then at:add(f.audio_samples, tvb(36, n - 40)) end
    local bad = check_crc(tvb, at, n)
    local flags = tvb(3, 1):uint()
    local info = string.format("audio stream %d seq %d frames %d%s%s", tvb(4, 4):uint(), tvb(8, 4):uint(),
        tvb(34, 2):uint(), bit32.band(flags, 2) ~= 0 and " FLAC" or "", bit32.band(flags, 1) ~= 0 and " end" or "")
    datagram_info(at, pinfo, info, bad)
    return n
end

local function dissect_clock(tvb, pinfo, tree)
    local n = tvb:len()
    local ct = datagram(tvb, pinfo, tree, "clock", 32, "a clock datagram is 32 bytes")
    if ct == nil then return n end
    ct:add(f.magic, tvb(0, 2)); ct:add(f.dgram_version, tvb(2, 1)); ct:add(f.clock_type, tvb(3, 1))
    ct:add(f.clock_t1, tvb(4, 8)); ct:add(f.clock_t2, tvb(12, 8)); ct:add(f.clock_t3, tvb(20, 8))
    local bad = check_crc(tvb, ct, 32)
    if n > 32 then ct:add_proto_expert_info(ef.payload, string.format("%d bytes after the CRC", n - 32)) end
    local info = "clock " .. (clock_types[tvb(3, 1):uint()] or "type ?") .. " t1 " .. tostring(tvb(4, 8):uint64())
    datagram_info(ct, pinfo, info, bad)
    return n
end

local function dissect_discovery(tvb, pinfo, tree)
    local n = tvb:len()
    pinfo.cols.protocol = "HKWHD"
    local dt = tree:add(hkwhd, tvb(), "HKWirelessHD discovery")
    if n < 8 then
        dt:add_proto_expert_info(ef.truncated, "a discovery datagram is at least 8 bytes")
        return n
    end
    dt:add(f.magic, tvb(0, 2)); dt:add(f.dgram_version, tvb(2, 1))
    if tvb(0, 2):string() == "TR" then
        local r = reader(tvb(3, n - 7), dt)
        r.fixed(f.query_id, 4); r.fixed(f.relay_port, 2); r.text(f.relay_address); r.finish()
        check_crc(tvb, dt, n)
        pinfo.cols.info = "discovery relay"
        return n
    end
    dt:add(f.discovery_type, tvb(3, 1)); dt:add(f.query_id, tvb(4, 4))
    if tvb(3, 1):uint() == 2 and n > 12 then
        local r = reader(tvb(8, n - 12), dt)
        r.fixed(f.device_id, 8); r.fixed(f.port, 2); r.fixed(f.audio_port, 2); r.fixed(f.min_version, 1)
        r.fixed(f.max_version, 1); r.text(f.name); r.text(f.model); r.finish()
    end
    if n >= 12 then check_crc(tvb, dt, n) end
    pinfo.cols.info = "discovery " .. (discovery_types[tvb(3, 1):uint()] or "?")
    return n
end

local hkwhd_audio = Proto("hkwhd_audio", "HKWirelessHD audio")
hkwhd_audio.dissector = dissect_audio
local hkwhd_clock = Proto("hkwhd_clock", "HKWirelessHD clock")
hkwhd_clock.dissector = dissect_clock
local hkwhd_discovery = Proto("hkwhd_discovery", "HKWirelessHD discovery")
hkwhd_discovery.dissector = dissect_discovery
DissectorTable.get("wtap_encap"):add(wtap.USER3, hkwhd_audio)
DissectorTable.get("wtap_encap"):add(wtap.USER4, hkwhd_clock)
local udp = DissectorTable.get("udp.port")
udp:add(45456, hkwhd_audio)
udp:add(45455, hkwhd_clock)
udp:add(45454, hkwhd_discovery)
hkwhd_audio:register_heuristic("udp", function(tvb, pinfo, tree)
    if tvb:len() < 4 then return false end
    local magic = tvb(0, 2):uint()
    local v = tvb(2, 1):uint()
    if magic == 0x5441 and tvb:len() >= 40 and (v == 1 or v == 3) then dissect_audio(tvb, pinfo, tree) return true end
    if magic == 0x5443 and tvb:len() == 32 and v == 4 then dissect_clock(tvb, pinfo, tree) return true end
    if (magic == 0x5444 or magic == 0x5452) and tvb:len() >= 12 and v >= 1 and v <= 5 then
        dissect_discovery(tvb, pinfo, tree)
        return true
    end
    return false
end)
