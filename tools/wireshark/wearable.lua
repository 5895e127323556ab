-- Bose Wearable (the GATT service 0xFDD2 as Tuneup implements it) for Wireshark and tshark 4.0 and later:
-- docs/wearable.md, docs/wireshark.md.
--
--   * Tuneup's GATT framing over byte streams (`57 | length u16 BE | opcode | parameters`, docs/wearable.md §6):
--     pcapng LINKTYPE_USER5, reassembled per interface and direction;
--   * real ATT (docs/wearable.md §9, little-endian): pcapng LINKTYPE_USER6, one ATT PDU per packet.
-- Characteristic values are decoded by what their handle holds: handles learnt from the capture's discovery (Tuneup's
-- discover response, ATT Read By Type of characteristic declarations), else the simulated wearable's layout.

-- The helpers the dissectors share: tuneup-common.lua beside this file, loaded once.
local common = tuneup_dissector_common
    or dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "") .. "tuneup-common.lua")

local wearable = Proto("wearable", "Bose Wearable")

local opcodes = {
    [0x01] = "Error Response", [0x02] = "Exchange MTU Request", [0x03] = "Exchange MTU Response",
    [0x04] = "Find Information Request", [0x05] = "Find Information Response",
    [0x06] = "Find By Type Value Request", [0x07] = "Find By Type Value Response",
    [0x08] = "Read By Type Request", [0x09] = "Read By Type Response", [0x0A] = "Read Request",
    [0x0B] = "Read Response", [0x0C] = "Read Blob Request", [0x0D] = "Read Blob Response",
    [0x10] = "Read By Group Type Request", [0x11] = "Read By Group Type Response", [0x12] = "Write Request",
    [0x13] = "Write Response", [0x1B] = "Handle Value Notification", [0x1D] = "Handle Value Indication",
    [0x1E] = "Handle Value Confirmation", [0x52] = "Write Command",
}
-- Tuneup's framing reuses 0x10 / 0x11 for its one-round-trip discovery.
local framed_opcodes = {}
for k, v in pairs(opcodes) do framed_opcodes[k] = v end
framed_opcodes[0x10] = "Discover Request (Tuneup)"
framed_opcodes[0x11] = "Discover Response (Tuneup)"

local att_errors = {
    [0x01] = "invalid handle", [0x02] = "read not permitted", [0x03] = "write not permitted",
    [0x04] = "invalid PDU", [0x05] = "insufficient authentication", [0x06] = "request not supported",
    [0x07] = "invalid offset", [0x0A] = "attribute not found", [0x0B] = "attribute not long",
    [0x0D] = "invalid attribute value length", [0x0E] = "unlikely error", [0x13] = "value not allowed",
    [0x80] = "period not available", [0x81] = "too many sensors", [0x82] = "payload budget exceeded",
    [0x83] = "sensor not available", [0x84] = "gesture not available", [0x85] = "mixed periods",
}
local sensors = {
    [0] = "accelerometer", [1] = "gyroscope", [2] = "rotation", [3] = "gameRotation", [4] = "orientation",
    [5] = "magnetometer", [6] = "uncalibratedMagnetometer",
}
local sample_lengths = { [0] = 7, [1] = 7, [2] = 10, [3] = 8, [4] = 7, [5] = 7, [6] = 12 }
local gestures = { [0x80] = "singleTap", [0x81] = "doubleTap", [0x82] = "headNod", [0x83] = "headShake" }
local accuracies = { [0] = "unreliable", [1] = "low", [2] = "medium", [3] = "high" }

-- The characteristics by UUID (docs/wearable.md §1) and the simulated wearable's value handles (§6).
local characteristic_uuids = {
    ["7b61ad83041c4333a0abefb2ab7bdd43"] = "wearableDeviceInformation",
    ["855cb3e798ff42a680fc40b32a2221c1"] = "sensorInformation",
    ["5af38af6000e404b9b4607f77580890b"] = "sensorConfiguration",
    ["56a72ab849884cc8a752fbd1d54a953d"] = "sensorData",
    ["a0384f52f95a4bcdb8987b9ceec92dad"] = "gestureInformation",
    ["21e550aff780477b93341f983296f1d7"] = "gestureConfiguration",
    ["9014dd4e79ba4802a275894d3b85ac74"] = "gestureData",
}
local default_handles = {
    [0x0003] = "wearableDeviceInformation", [0x0005] = "sensorInformation", [0x0007] = "sensorConfiguration",
    [0x0008] = "CCCD", [0x000A] = "sensorData", [0x000B] = "CCCD", [0x000D] = "gestureInformation",
    [0x000F] = "gestureConfiguration", [0x0010] = "CCCD", [0x0012] = "gestureData", [0x0013] = "CCCD",
}

-- Field names: docs/capture.md §3 (shared with the project's decoder); `wearable.v.*` decode the values.
local f = {
    magic = ProtoField.uint8("wearable.magic", "Frame start", base.HEX),
    length = ProtoField.uint16("wearable.length", "Length", base.DEC),
    opcode = ProtoField.uint8("wearable.opcode", "Opcode", base.HEX, framed_opcodes),
    handle = ProtoField.uint16("wearable.handle", "Handle", base.HEX),
    value_length = ProtoField.uint16("wearable.value_length", "Value length", base.DEC),
    value = ProtoField.bytes("wearable.value", "Value"),
    error = ProtoField.uint8("wearable.error", "ATT error", base.HEX, att_errors),
    request_opcode = ProtoField.uint8("wearable.request_opcode", "Request opcode", base.HEX, opcodes),
    mtu = ProtoField.uint16("wearable.mtu", "MTU", base.DEC),
    reason = ProtoField.string("wearable.reason", "Reason"),
    characteristic = ProtoField.string("wearable.characteristic", "Characteristic"),
    start = ProtoField.uint16("wearable.start_handle", "Start handle", base.HEX),
    ["end"] = ProtoField.uint16("wearable.end_handle", "End handle", base.HEX),
    uuid16 = ProtoField.uint16("wearable.uuid16", "UUID", base.HEX),
    uuid = ProtoField.bytes("wearable.uuid", "UUID (128-bit)"),
    offset = ProtoField.uint16("wearable.offset", "Offset", base.DEC),
    cccd_handle = ProtoField.uint16("wearable.cccd_handle", "CCCD handle", base.HEX),
    attribute_handle = ProtoField.uint16("wearable.attribute_handle", "Attribute handle", base.HEX),
    properties = ProtoField.uint8("wearable.properties", "Properties", base.HEX),
    entry_length = ProtoField.uint8("wearable.entry_length", "Entry length", base.DEC),
    notifications = ProtoField.bool("wearable.notifications", "Notifications on"),
    -- values
    major = ProtoField.uint8("wearable.v.major", "Major", base.DEC),
    minor = ProtoField.uint8("wearable.v.minor", "Minor", base.DEC),
    product = ProtoField.uint16("wearable.v.product_id", "Product id", base.HEX),
    variant = ProtoField.uint8("wearable.v.variant", "Variant", base.DEC),
    sensors_mask = ProtoField.uint32("wearable.v.available_sensors", "Available sensors", base.HEX),
    gestures_mask = ProtoField.uint32("wearable.v.available_gestures", "Available gestures", base.HEX),
    transmission = ProtoField.uint8("wearable.v.transmission_period", "Transmission period (ms)", base.DEC),
    max_payload = ProtoField.uint16("wearable.v.max_payload", "Max payload per transmission period", base.DEC),
    max_active = ProtoField.uint8("wearable.v.max_active_sensors", "Max active sensors", base.DEC),
    status = ProtoField.uint16("wearable.v.device_status", "Device status", base.HEX),
    sensor = ProtoField.uint8("wearable.v.sensor", "Sensor", base.DEC, sensors),
    min_scaled = ProtoField.int16("wearable.v.min_scaled", "Min scaled", base.DEC),
    max_scaled = ProtoField.int16("wearable.v.max_scaled", "Max scaled", base.DEC),
    min_raw = ProtoField.int16("wearable.v.min_raw", "Min raw", base.DEC),
    max_raw = ProtoField.int16("wearable.v.max_raw", "Max raw", base.DEC),
    periods = ProtoField.uint16("wearable.v.available_periods", "Available periods", base.HEX),
    sample_length = ProtoField.uint8("wearable.v.sample_length", "Sample length", base.DEC),
    period = ProtoField.uint16("wearable.v.period_ms", "Period (ms, 0 = off)", base.DEC),
    timestamp = ProtoField.uint16("wearable.v.timestamp", "Timestamp (ms)", base.DEC),
    x = ProtoField.int16("wearable.v.x", "x", base.DEC),
    y = ProtoField.int16("wearable.v.y", "y", base.DEC),
    z = ProtoField.int16("wearable.v.z", "z", base.DEC),
    w = ProtoField.int16("wearable.v.w", "w", base.DEC),
    accuracy = ProtoField.uint8("wearable.v.accuracy", "Accuracy", base.DEC, accuracies),
    estimated_accuracy = ProtoField.int16("wearable.v.estimated_accuracy", "Estimated accuracy", base.DEC),
    bias = ProtoField.int16("wearable.v.bias", "Bias", base.DEC),
    gesture = ProtoField.uint8("wearable.v.gesture", "Gesture", base.HEX, gestures),
    gesture_payload = ProtoField.uint16("wearable.v.gesture_payload_length", "Gesture payload length", base.DEC),
    gesture_enabled = ProtoField.uint8("wearable.v.gesture_enabled", "Enabled", base.DEC),
    record = ProtoField.bytes("wearable.v.record", "Record"),
    starts_in = ProtoField.framenum("wearable.starts_in", "Frame starts in", base.NONE),
    skipped = ProtoField.bytes("wearable.skipped", "Bytes outside any frame"),
}
local ef = common.experts("wearable", {
    truncated = { "Wearable PDU cut short", "PROTOCOL", "NOTE" },
    value = { "Value does not fit its characteristic's layout", "PROTOCOL", "WARN" },
    bad_length = { "Frame length 0 or above 600", "PROTOCOL", "WARN" },
    skipped = { "Bytes outside any frame skipped", "PROTOCOL", "WARN" },
    partial = { "Frame continues in a later packet", "REASSEMBLE", "CHAT" },
    refused = { "The device refused a request", "RESPONSE_CODE", "NOTE" },
})
common.register(wearable, f, ef)

-- Per capture: value handle -> characteristic name, and the sample lengths SensorInformation gave.
local handles = {}
local lengths = {}
-- Per interface: the handle of the last read request (ATT's read response names none).
local last_read = {}

local function characteristic(handle)
    return handles[handle] or default_handles[handle]
end

-- Values ---------------------------------------------------------------------------------------------------------

local function short(tree, t, n, what)
    if t:len() < n then
        tree:add_proto_expert_info(ef.value, string.format("%s needs %d bytes, got %d", what, n, t:len()))
        return true
    end
    return false
end

-- Calls `add(o)` for each whole `size`-byte entry of `t`; bytes after the last entry are an expert warning when
-- `warn` says so.
local function entries(tree, t, size, warn, add)
    local n = t:len()
    local o = 0
    while o + size <= n do
        add(o)
        o = o + size
    end
    if warn and o < n then
        tree:add_proto_expert_info(ef.value, string.format("%d bytes after the last %d-byte entry", n - o, size))
    end
end

local value_decoders = {}
value_decoders.wearableDeviceInformation = function(tree, t)
    if short(tree, t, 19, "DeviceInformation") then return end
    tree:add(f.major, t(0, 1)); tree:add(f.minor, t(1, 1)); tree:add(f.product, t(2, 2)); tree:add(f.variant, t(4, 1))
    tree:add(f.sensors_mask, t(5, 4)); tree:add(f.gestures_mask, t(9, 4)); tree:add(f.transmission, t(13, 1))
    tree:add(f.max_payload, t(14, 2)); tree:add(f.max_active, t(16, 1)); tree:add(f.status, t(17, 2))
end
value_decoders.sensorInformation = function(tree, t)
    entries(tree, t, 12, true, function(o)
        local e = tree:add(t(o, 12), "Sensor " .. (sensors[t(o, 1):uint()] or tostring(t(o, 1):uint())))
        e:add(f.sensor, t(o, 1)); e:add(f.min_scaled, t(o + 1, 2)); e:add(f.max_scaled, t(o + 3, 2))
        e:add(f.min_raw, t(o + 5, 2)); e:add(f.max_raw, t(o + 7, 2)); e:add(f.periods, t(o + 9, 2))
        e:add(f.sample_length, t(o + 11, 1))
        lengths[t(o, 1):uint()] = t(o + 11, 1):uint()
    end)
end
value_decoders.sensorConfiguration = function(tree, t)
    entries(tree, t, 3, true, function(o)
        local e = tree:add(t(o, 3), string.format("%s at %d ms", sensors[t(o, 1):uint()] or tostring(t(o, 1):uint()),
            t(o + 1, 2):uint()))
        e:add(f.sensor, t(o, 1)); e:add(f.period, t(o + 1, 2))
    end)
end
value_decoders.sensorData = function(tree, t)
    local n = t:len()
    local o = 0
    while o < n do
        local id = t(o, 1):uint()
        local len = lengths[id] or sample_lengths[id]
        if len == nil then
            tree:add_proto_expert_info(ef.value, string.format("record at offset %d: unknown sensor id %d", o, id))
            return
        end
        if o + 3 + len > n then
            tree:add_proto_expert_info(ef.value, string.format("record at offset %d is cut short", o))
            return
        end
        local e = tree:add(f.record, t(o, 3 + len))
        e:set_text(string.format("%s at %d ms", sensors[id], t(o + 1, 2):uint()))
        e:add(f.sensor, t(o, 1)); e:add(f.timestamp, t(o + 1, 2))
        local s = o + 3
        if id == 2 or id == 3 then
            e:add(f.x, t(s, 2)); e:add(f.y, t(s + 2, 2)); e:add(f.z, t(s + 4, 2)); e:add(f.w, t(s + 6, 2))
            if id == 2 and len >= 10 then e:add(f.estimated_accuracy, t(s + 8, 2)) end
        elseif id == 6 then
            e:add(f.x, t(s, 2)); e:add(f.y, t(s + 2, 2)); e:add(f.z, t(s + 4, 2))
            e:add(f.bias, t(s + 6, 2)); e:add(f.bias, t(s + 8, 2)); e:add(f.bias, t(s + 10, 2))
        elseif len >= 7 then
            e:add(f.x, t(s, 2)); e:add(f.y, t(s + 2, 2)); e:add(f.z, t(s + 4, 2)); e:add(f.accuracy, t(s + 6, 1))
        end
        o = o + 3 + len
    end
end
value_decoders.gestureInformation = function(tree, t)
    entries(tree, t, 3, false, function(o) tree:add(f.gesture, t(o, 1)); tree:add(f.gesture_payload, t(o + 1, 2)) end)
end
value_decoders.gestureConfiguration = function(tree, t)
    entries(tree, t, 2, false, function(o) tree:add(f.gesture, t(o, 1)); tree:add(f.gesture_enabled, t(o + 1, 1)) end)
end
value_decoders.gestureData = function(tree, t)
    if short(tree, t, 3, "GestureData") then return end
    tree:add(f.gesture, t(0, 1)); tree:add(f.timestamp, t(1, 2))
end
value_decoders.CCCD = function(tree, t)
    if short(tree, t, 2, "notification descriptor") then return end
    tree:add(f.notifications, t(0, 2), t(0, 1):uint() == 1)
end

-- `t` may be nil: an empty value (a zero-length range at the end of a buffer cannot be made).
local function add_value(tree, t, handle, with_length)
    local n = t and t:len() or 0
    if with_length then tree:add(f.value_length, n):set_generated() end
    if n == 0 then return end
    local vi = tree:add(f.value, t)
    local name = handle and characteristic(handle)
    if name then
        vi:add(f.characteristic, name):set_generated()
        local decoder = value_decoders[name]
        if decoder then decoder(vi, t) end
    end
end

-- PDUs -------------------------------------------------------------------------------------------------------------

local function uuid_hex(t, o, le)
    local b = {}
    if le then for k = 15, 0, -1 do b[#b + 1] = string.format("%02x", t(o + k, 1):uint()) end
    else for k = 0, 15 do b[#b + 1] = string.format("%02x", t(o + k, 1):uint()) end end
    return table.concat(b)
end

-- `p`: the parameters after the opcode; `le`: ATT's little-endian (true) or Tuneup's framing (false). Returns a
-- summary.
local function dissect_pdu(op, p, tree, le, key)
    local n = p and p:len() or 0
    local function rest(o) if o < n then return p(o, n - o) end return nil end
    local function u16(o) if le then return p(o, 2):le_uint() end return p(o, 2):uint() end
    local function add16(field, o)
        if le then tree:add_le(field, p(o, 2)) else tree:add(field, p(o, 2)) end
        return u16(o)
    end
    local function need(k)
        if n < k then
            tree:add_proto_expert_info(ef.truncated, string.format("%s needs %d parameter bytes, got %d",
                opcodes[op] or "PDU", k, n))
            return false
        end
        return true
    end
    local name = (le and opcodes[op] or framed_opcodes[op]) or string.format("opcode 0x%02X", op)
    if op == 0x01 then
        if not need(4) then return name end
        tree:add(f.request_opcode, p(0, 1))
        local h = add16(f.handle, 1)
        tree:add(f.error, p(3, 1))
        local code = p(3, 1):uint()
        if not le and n > 4 then tree:add(f.reason, p(4, n - 4), p(4, n - 4):string(ENC_UTF_8)) end
        tree:add_proto_expert_info(ef.refused, string.format("0x%02X on handle 0x%04X: %s", p(0, 1):uint(), h,
            att_errors[code] or "error"))
        return string.format("%s 0x%02X (%s), handle 0x%04X", name, code, att_errors[code] or "?", h)
    elseif op == 0x02 or op == 0x03 then
        if not need(2) then return name end
        return string.format("%s %d", name, add16(f.mtu, 0))
    elseif op == 0x0A or (op == 0x0C) then
        if not need(2) then return name end
        -- A read blob request's handle is shown as an attribute handle (docs/capture.md names read, write,
        -- notification and error handles).
        local h = add16(op == 0x0A and f.handle or f.attribute_handle, 0)
        last_read[key] = h
        if op == 0x0C and need(4) then add16(f.offset, 2) end
        local c = characteristic(h)
        if c then tree:add(f.characteristic, c):set_generated() end
        return string.format("%s 0x%04X%s", name, h, c and (" (" .. c .. ")") or "")
    elseif op == 0x0B or op == 0x0D then
        local h, v
        if le then
            h = last_read[key]
            v = p
        else
            if not need(2) then return name end
            h = add16(f.handle, 0)
            v = rest(2)
        end
        if op == 0x0B then add_value(tree, v, h, true) else add_value(tree, v, nil, false) end
        return string.format("%s%s", name, h and string.format(" 0x%04X", h) or "")
    elseif op == 0x12 or op == 0x52 or op == 0x1B or op == 0x1D then
        if not need(2) then return name end
        local h = add16((op == 0x12 or op == 0x1B) and f.handle or f.attribute_handle, 0)
        add_value(tree, rest(2), h, op ~= 0x52 and op ~= 0x1D)
        local c = characteristic(h)
        return string.format("%s 0x%04X%s", name, h, c and (" (" .. c .. ")") or "")
    elseif op == 0x13 then
        if not le and need(2) then return string.format("%s 0x%04X", name, add16(f.handle, 0)) end
        return name
    elseif op == 0x10 and not le then
        return name
    elseif op == 0x11 and not le then
        if not need(6) then return name end
        tree:add(f.uuid16, p(0, 2)); tree:add(f.start, p(2, 2)); tree:add(f["end"], p(4, 2))
        local o = 6
        while o + 21 <= n do
            local h = p(o, 2):uint()
            local uuid = uuid_hex(p, o + 5, false)
            local c = characteristic_uuids[uuid]
            local e = tree:add(p(o, 21), string.format("Characteristic %s at 0x%04X", c or uuid, h))
            e:add(f.attribute_handle, p(o, 2)); e:add(f.cccd_handle, p(o + 2, 2)); e:add(f.properties, p(o + 4, 1))
            e:add(f.uuid, p(o + 5, 16))
            if c then
                handles[h] = c
                local cccd = p(o + 2, 2):uint()
                if cccd ~= 0 then handles[cccd] = "CCCD" end
            end
            o = o + 21
        end
        return name
    elseif op == 0x04 or op == 0x08 or op == 0x10 then
        if not need(4) then return name end
        add16(f.start, 0); add16(f["end"], 2)
        if n == 6 then add16(f.uuid16, 4) elseif n == 20 then tree:add(f.uuid, p(4, 16)) end
        return string.format("%s 0x%04X-0x%04X", name, u16(0), u16(2))
    elseif op == 0x09 and le then
        if not need(1) then return name end
        tree:add(f.entry_length, p(0, 1))
        local len = p(0, 1):uint()
        local o = 1
        while len > 0 and o + len <= n do
            local e = tree:add(p(o, len), "Attribute")
            e:add_le(f.attribute_handle, p(o, 2))
            if len == 21 then
                -- characteristic declaration: properties, value handle, 128-bit UUID
                e:add(f.properties, p(o + 2, 1))
                local vh = p(o + 3, 2):le_uint()
                e:add_le(f.start, p(o + 3, 2))
                e:add(f.uuid, p(o + 5, 16))
                local c = characteristic_uuids[uuid_hex(p, o + 5, true)]
                if c then handles[vh] = c; e:set_text(string.format("Characteristic %s, value 0x%04X", c, vh)) end
            end
            o = o + len
        end
        return name
    elseif op == 0x05 and le then
        return name
    elseif op == 0x11 and le then
        if not need(1) then return name end
        tree:add(f.entry_length, p(0, 1))
        return name
    end
    return name
end

-- Tuneup's framing ---------------------------------------------------------------------------------------------

-- Scans stream bytes as GATTStreamDecoder does: bytes before a 57 are skipped; a length of 0 or above 600 is noise
-- (the 57 is skipped).
local function frame_step(s, i, n)
    if s:byte(i + 1) ~= 0x57 then
        local nxt = s:find("W", i + 2, true)
        return "hunt", nxt and nxt - 1
    elseif n - i < 3 then
        return "wait"
    end
    local len = s:byte(i + 2) * 256 + s:byte(i + 3)
    if len == 0 or len > 600 then return "noise" end
    if n - i < 3 + len then return "wait" end
    return "frame", { kind = "frame", len = 3 + len }
end
local function scan(s) return common.scan(s, frame_step, "skipped") end

local function dissect_frame(t, pinfo, tree, key)
    local n = t:len()
    local ft = tree:add(wearable, t, "Bose Wearable GATT frame")
    ft:add(f.magic, t(0, 1)); ft:add(f.length, t(1, 2)); ft:add(f.opcode, t(3, 1))
    local op = t(3, 1):uint()
    local s = dissect_pdu(op, n > 4 and t(4, n - 4) or nil, ft, false, key)
    ft:append_text(": " .. s)
    return s, ft
end

local set_ends = common.set_ends
local interface_key = common.interface_key

-- Tuneup's framing in its captures (LINKTYPE_USER5): per interface and direction.
local frame_streams = common.reassembler(scan)

function wearable.init()
    frame_streams.reset()
    handles = {}
    lengths = {}
    last_read = {}
end

local wearable_stream = Proto("wearable_stream", "Bose Wearable GATT framing")
function wearable_stream.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "Wearable"
    set_ends(pinfo)
    local result = frame_streams.result(pinfo, tvb, common.stream_key(pinfo))
    local summaries = common.show_stream(tvb, tree, result, {
        reassembled = "Reassembled GATT frame",
        event = function(e, t)
            if e.kind == "frame" then
                local s, ft = dissect_frame(t, pinfo, tree, interface_key())
                if e.reassembled then ft:add(f.starts_in, e.first_frame):set_generated() end
                return s
            end
            tree:add(f.skipped, t):add_proto_expert_info(ef.skipped)
        end,
        proto = wearable,
        partial = "Bose Wearable: start of a frame (%d bytes), continued in a later packet",
        expert = ef.partial,
        continues = "[frame continues]",
    })
    pinfo.cols.info = table.concat(summaries, "; ")
    return tvb:len()
end
DissectorTable.get("wtap_encap"):add(wtap.USER5, wearable_stream)

-- Real ATT: one PDU per packet.
local wearable_att = Proto("wearable_att", "Bose Wearable ATT")
function wearable_att.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "Wearable"
    set_ends(pinfo)
    local n = tvb:len()
    local at = tree:add(wearable, tvb(), "Bose Wearable ATT PDU")
    if n == 0 then
        at:add_proto_expert_info(ef.truncated, "an empty ATT PDU")
        return 0
    end
    at:add(f.opcode, tvb(0, 1))
    local s = dissect_pdu(tvb(0, 1):uint(), n > 1 and tvb(1, n - 1) or nil, at, true, interface_key())
    at:append_text(": " .. s)
    pinfo.cols.info = s
    return n
end
DissectorTable.get("wtap_encap"):add(wtap.USER6, wearable_att)

-- Real Bluetooth captures (btmon's btsnoop, an HCI capture): Wireshark's own ATT dissector knows each handle's UUID
-- from the discovery it saw and hands a value to the `bluetooth.uuid` table; there the characteristics' values are
-- decoded as above.
local uuid_table = DissectorTable.get("bluetooth.uuid")
if uuid_table ~= nil then
    for uuid, name in pairs(characteristic_uuids) do
        local p = Proto("wearable_" .. name:lower(), "Bose Wearable " .. name)
        function p.dissector(tvb, pinfo, tree)
            local n = tvb:len()
            if n == 0 then return 0 end
            local vi = tree:add(wearable, tvb(), "Bose Wearable " .. name)
            vi:add(f.characteristic, name):set_generated()
            value_decoders[name](vi, tvb(0, n))
            return n
        end
        -- Wireshark keys 128-bit UUIDs in their written form, with dashes.
        uuid_table:add(string.format("%s-%s-%s-%s-%s", uuid:sub(1, 8), uuid:sub(9, 12), uuid:sub(13, 16), uuid:sub(17, 20),
            uuid:sub(21, 32)), p)
    end
end
