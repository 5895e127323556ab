-- LightX (Avnera SDHM host interface) for Wireshark and tshark 4.0 and later: docs/protocol.md, docs/wireshark.md.
--
-- Decodes every packet by name with its arguments, on:
--   * pcapng LINKTYPE_USER0 (Tuneup's captures of byte streams: TCP, serial, pty, RFCOMM), SPP frames reassembled
--     across packets per interface and direction;
--   * TCP (port 4100, `tuneup.lightx.tcp_port`, and a heuristic on `ff 5a 00 00`), reassembled across segments;
--   * pcapng LINKTYPE_USER1 (one USB HID feature report per packet, report id first);
--   * usbmon captures (LINKTYPE_USB_LINUX_MMAPPED): SET_REPORT / GET_REPORT of feature reports 0xF0 and 0xF1 on the
--     control endpoint (a heuristic for devices whose descriptors were not captured, and the HID class otherwise).
-- A bad SPP checksum is an expert warning; a frame cut short is an expert note, never a Lua error.

-- The helpers the dissectors share: tuneup-common.lua beside this file, loaded once.
local common = tuneup_dissector_common
    or dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "") .. "tuneup-common.lua")

local lightx = Proto("lightx", "LightX")
-- HID reports that complete no message (a header whose buffer follows, a host's buffer before its header).
local lightx_hid_proto = Proto("lightx_hid", "LightX HID report")

local modules = {
    [0x00] = "None", [0x01] = "Memory", [0x02] = "Register", [0x03] = "DSP", [0x04] = "SPIM", [0x05] = "File",
    [0x06] = "Flash", [0x07] = "TWIM", [0x08] = "USB", [0x09] = "JTAG", [0x0A] = "Log", [0x0B] = "UART",
    [0x0C] = "SPIS", [0x0D] = "TWIS", [0x0E] = "Audio", [0x0F] = "Bluetooth", [0x10] = "ANC", [0x11] = "DVM",
    [0x12] = "NVM", [0x14] = "HostMessageHandler", [0x40] = "Application", [0x42] = "Localhost",
    [0x43] = "AV35xx Application",
}
local opcodes = { [0] = "None", [1] = "Read", [2] = "Write", [3] = "Set", [4] = "Get", [5] = "Request" }
local statuses = {
    [0] = "Ok", [1] = "Fail", [2] = "Pending", [3] = "NotFound", [4] = "NotSupported", [5] = "ExceededLimits",
    [6] = "NotReady", [7] = "CommFailure",
}
-- The type bits (0xC0 of byte 3) as the byte's value (docs/capture.md).
local types = { [0x00] = "Result", [0x40] = "Nonblocking", [0x80] = "Blocking", [0xC0] = "Type 0xC0" }
-- Command.knownNames (Sources/LightX/Command.swift) and the factory commands of Sources/LightX/Factory.swift.
local commands = {
    [0x01] = "ConfigProductName", [0x02] = "ConfigManufacturerName", [0x03] = "ConfigModelNumber",
    [0x04] = "ConfigSerialNumber", [0x05] = "ConfigHardwareVersion", [0x06] = "ConfigFirmwareVersion",
    [0x11] = "ConfigBTDisplayName", [0x1A] = "ConfigSDHMProductName", [0x1B] = "ConfigSDHMManufacturerName",
    [0x1C] = "ConfigSDHMModelNumber", [0x1D] = "ConfigSDHMSerialNumber", [0x1E] = "ConfigSDHMBootVersion",
    [0x1F] = "ConfigSDHMHardwareVersion",
    [0x20] = "BootImageType", [0x22] = "BootAuthStatus", [0x23] = "BootAuthChallenge", [0x24] = "BootAuthResponse",
    [0x25] = "BootJumpToBootloader", [0x26] = "BootEraseImageSector", [0x27] = "BootWriteImage",
    [0x28] = "BootReadImage", [0x29] = "BootCommitImage", [0x2A] = "BootJumpToApplication", [0x2C] = "BootVerifyCRC",
    [0x2D] = "BootEraseRsrc1Sector", [0x2E] = "BootWriteRsrc1", [0x2F] = "BootReadRsrc1",
    [0x30] = "BootEraseRsrc2Sector", [0x31] = "BootWriteRsrc2", [0x32] = "BootReadRsrc2",
    [0x3A] = "BootReadVersionFile", [0x3B] = "BootCapabilities (Tuneup extension)",
    [0x68] = "FactoryHardwareID (Tuneup extension)", [0x69] = "FactoryLock (Tuneup extension)",
    [0x6A] = "FactoryUnlock (Tuneup extension)", [0x6B] = "FactoryMeasurement (Tuneup extension)",
    [0x71] = "DiagAncStartCalibration", [0x72] = "DiagAncStoreCalibrationData", [0x75] = "DiagBDAddr",
    [0x7F] = "AppShutdown", [0x80] = "App_0x80", [0x81] = "AppAudioEQPreset", [0x82] = "AppMicEQ",
    [0x83] = "AppSysState", [0x84] = "AppIsHeadsetOn", [0x85] = "AppANCEnable", [0x86] = "AppANCAwarenessPreset",
    [0x87] = "AppFirmwareVersion", [0x88] = "AppANCLevel", [0x89] = "AppAwarenessRawLeft",
    [0x8A] = "AppAwarenessRawRight", [0x8B] = "AppAwarenessRawSteps", [0x8C] = "AppSpatialPreset",
    [0x8E] = "AppGraphicEQSetting", [0x90] = "AppGraphicEQLimits", [0x91] = "AppGraphicEQDefaultPreset",
    [0x92] = "AppGraphicEQCurrentPreset", [0x93] = "AppGraphicEQFactoryPresetReset",
    [0x94] = "AppGraphicEQPresetBandSettings", [0x95] = "AppGraphicEQBand", [0x96] = "AppGraphicEQPersistPreset",
    [0x97] = "AppGraphicEQBandFreq", [0x98] = "AppGraphicEQFactoryResetPreset", [0x99] = "App_0x99",
    [0x9A] = "AppGraphicEQPresetName (Tuneup extension)",
    [0xA0] = "AppSensorStatus", [0xA1] = "AppTapThresholdHigh", [0xA2] = "AppTapThresholdLow",
    [0xA3] = "AppTapPulseWindow", [0xA4] = "AppTapTimeout", [0xA5] = "AppTapDebounce", [0xA6] = "AppTapIdleDebounce",
    [0xA7] = "AppTapCommit", [0xB0] = "AppBatteryLevel", [0xB1] = "App_0xB1",
    [0xB2] = "App_0xB2 (start auto-calibration)", [0xB3] = "App_0xB3 (calibration status)", [0xB4] = "App_0xB4",
    [0xB5] = "AppSmartButtonFeatureIndex", [0xB6] = "AppOnEarDetectionWithAutoOff", [0xB7] = "AppVoicePromptEnable",
    [0xC0] = "AppPushHeartrateSensorData", [0xC5] = "AppPushANCEnable", [0xC6] = "AppPushANCAwarenessPreset",
    [0xC7] = "AppPush9AxisRawData", [0xC8] = "AppPushTapDetect", [0xF0] = "AppPushBatteryLevel (Tuneup extension)",
}
local kinds = { [0] = "request", [1] = "reply", [2] = "push" }
local eq_presets = { [0] = "Music", [1] = "Gaming", [2] = "Movie", [3] = "Conference" }
local awareness = { [0] = "None", [1] = "Low", [2] = "Medium", [3] = "High" }
local measurements = {
    [1] = "battery-level", [2] = "mic-sensitivity-left", [3] = "mic-sensitivity-right", [4] = "anc-attenuation",
}
local calibration_states = { [0] = "nothing", [1] = "measured (not stored)", [2] = "stored" }
local image_types = { [0] = "bootloader", [1] = "application" }
local report_ids = { [0xF0] = "header (0xF0)", [0xF1] = "buffer (0xF1)" }
local hid_flags = { [0] = "no packet / host request", [1] = "packet header follows" }

-- Field names: docs/capture.md §3 (shared with the project's decoder, `tuneup capture show`); the `lightx.arg.*`
-- names beyond that table decode the remaining arguments for display.
local f = {
    -- SPP transport
    spp_magic = ProtoField.bytes("lightx.magic", "Magic"),
    length = ProtoField.uint16("lightx.length", "Frame length", base.DEC),
    checksum = ProtoField.uint8("lightx.checksum", "Checksum", base.HEX),
    checksum_status = ProtoField.uint8("lightx.checksum.status", "Checksum status", base.DEC,
        { [0] = "Bad", [1] = "Good" }),
    -- HID reports
    report_id = ProtoField.uint8("lightx.report_id", "Report id", base.HEX, report_ids),
    report_flag = ProtoField.uint8("lightx.report_flag", "Report flag", base.HEX, hid_flags),
    nothing_ready = ProtoField.bool("lightx.nothing_ready", "Nothing ready"),
    get_report = ProtoField.uint8("lightx.get_report", "GET_REPORT of report", base.HEX, report_ids),
    -- Header
    kind = ProtoField.string("lightx.kind", "Kind"),
    source = ProtoField.uint8("lightx.source", "Source", base.HEX, modules),
    destination = ProtoField.uint8("lightx.destination", "Destination", base.HEX, modules),
    opcode = ProtoField.uint8("lightx.opcode", "Opcode", base.HEX, opcodes, 0x3F),
    high_priority = ProtoField.bool("lightx.high_priority", "High priority", 8, nil, 0x40),
    has_buffer = ProtoField.bool("lightx.has_buffer", "Buffer present", 8, nil, 0x80),
    status = ProtoField.uint8("lightx.status", "Status", base.HEX, statuses, 0x3F),
    type = ProtoField.uint8("lightx.type", "Type", base.HEX, types),
    address = ProtoField.uint24("lightx.address", "Address", base.HEX),
    command = ProtoField.uint8("lightx.command", "Command", base.HEX, commands),
    param1 = ProtoField.uint32("lightx.param1", "Param1 (buffer length)", base.DEC),
    buffer_length = ProtoField.uint16("lightx.buffer_length", "Buffer length", base.DEC),
    buffer = ProtoField.bytes("lightx.buffer", "Buffer"),
    default_buffer = ProtoField.bool("lightx.arg.default_buffer", "Default buffer (256 zero bytes)"),
    -- Arguments of docs/capture.md §3
    sector = ProtoField.uint32("lightx.arg.sector", "Sector", base.DEC),
    sectors = ProtoField.uint32("lightx.arg.sectors", "Sectors", base.DEC),
    crc = ProtoField.uint32("lightx.arg.crc", "CRC-32/JAMCRC", base.HEX),
    resource_base = ProtoField.uint32("lightx.arg.base", "Resource base", base.HEX),
    response = ProtoField.bytes("lightx.arg.response", "Authentication response"),
    challenge = ProtoField.bytes("lightx.arg.challenge", "Authentication challenge"),
    image = ProtoField.uint8("lightx.arg.image_type", "Image type", base.DEC, image_types),
    authenticated = ProtoField.uint8("lightx.arg.authenticated", "Authenticated", base.DEC, { [0] = "no", [1] = "yes" }),
    caps_flags = ProtoField.uint32("lightx.arg.flags", "Capability flags", base.HEX),
    caps_queue = ProtoField.uint32("lightx.arg.queue_depth", "Queue depth", base.DEC),
    text = ProtoField.string("lightx.arg.text", "Text"),
    refusal = ProtoField.string("lightx.arg.reason", "Refusal reason"),
    -- Further arguments (display)
    value = ProtoField.uint32("lightx.arg.value", "Value", base.DEC),
    enabled = ProtoField.bool("lightx.arg.enabled", "Enabled"),
    eq_preset = ProtoField.uint32("lightx.arg.eq_preset", "Audio EQ preset", base.DEC, eq_presets),
    awareness = ProtoField.uint32("lightx.arg.awareness", "Awareness preset", base.DEC, awareness),
    level = ProtoField.float("lightx.arg.level", "ANC level"),
    steps = ProtoField.int32("lightx.arg.steps", "Steps", base.DEC),
    percent = ProtoField.uint32("lightx.arg.percent", "Battery level (%)", base.DEC),
    name = ProtoField.string("lightx.arg.name", "Preset name"),
    string = ProtoField.string("lightx.arg.string", "String written"),
    version = ProtoField.string("lightx.arg.version", "Firmware version"),
    preset = ProtoField.uint32("lightx.arg.preset", "Graphic EQ preset", base.DEC),
    band = ProtoField.uint32("lightx.arg.band", "Band", base.DEC),
    band_count = ProtoField.uint32("lightx.arg.band_count", "Band count", base.DEC),
    gain = ProtoField.int32("lightx.arg.gain", "Gain (dB)", base.DEC),
    frequency = ProtoField.uint32("lightx.arg.frequency", "Frequency (Hz)", base.DEC),
    presets = ProtoField.uint32("lightx.arg.presets", "Presets", base.DEC),
    min_gain = ProtoField.int32("lightx.arg.min_gain", "Minimum gain (dB)", base.DEC),
    max_gain = ProtoField.int32("lightx.arg.max_gain", "Maximum gain (dB)", base.DEC),
    data = ProtoField.bytes("lightx.arg.data", "Flash data"),
    data_length = ProtoField.uint32("lightx.arg.data_length", "Flash data length", base.DEC),
    caps_addressed = ProtoField.bool("lightx.arg.addressed_erase", "Addressed erase", 32, nil, 0x1),
    caps_secure = ProtoField.bool("lightx.arg.secure_boot", "Secure boot", 32, nil, 0x2),
    caps_key_hash = ProtoField.bytes("lightx.arg.key_hash", "Key hash (SHA-256)"),
    caps_floor = ProtoField.string("lightx.arg.rollback_floor", "Rollback floor"),
    hardware_id = ProtoField.string("lightx.arg.hardware_id", "Hardware id"),
    bdaddr = ProtoField.string("lightx.arg.bdaddr", "Bluetooth address"),
    calibration_state = ProtoField.uint32("lightx.arg.calibration_state", "Calibration state", base.DEC,
        calibration_states),
    calibration_gain = ProtoField.int16("lightx.arg.calibration_gain", "Microphone gain (0.01 dB)", base.DEC),
    locked = ProtoField.bool("lightx.arg.locked", "Locked"),
    factory_key = ProtoField.bytes("lightx.arg.factory_key", "Factory key"),
    measurement = ProtoField.uint32("lightx.arg.measurement", "Measurement", base.DEC, measurements),
    measured = ProtoField.int32("lightx.arg.measured", "Measured value (hundredths)", base.DEC),
    reassembled_in = ProtoField.framenum("lightx.starts_in", "Frame starts in", base.NONE),
    garbage = ProtoField.bytes("lightx.skipped", "Bytes outside any frame"),
}
local short_names = {}
-- The Info column's names: the field's name after "lightx.arg." where the table's key differs.
local info_names = { image = "image_type", caps_queue = "queue_depth", caps_flags = "flags", refusal = "reason",
    resource_base = "base", eq_preset = "eq_preset", calibration_state = "calibration_state" }
for k, v in pairs(f) do short_names[v] = info_names[k] or k end

local ef = common.experts("lightx", {
    bad_checksum = { "Bad SPP checksum", "CHECKSUM", "WARN" },
    bad_length = { "SPP length outside 19...275", "PROTOCOL", "WARN" },
    truncated = { "LightX frame cut short", "PROTOCOL", "NOTE" },
    partial = { "SPP frame continues in a later packet", "REASSEMBLE", "CHAT" },
    garbage = { "Bytes outside any SPP frame skipped", "PROTOCOL", "WARN" },
    argument = { "Argument does not fit the command's layout", "PROTOCOL", "WARN" },
    status = { "The device refused the request", "RESPONSE_CODE", "NOTE" },
    hid = { "Unexpected HID report", "PROTOCOL", "WARN" },
})
common.register(lightx, f, ef)

lightx.prefs.tcp_port = Pref.uint("TCP port", 4100, "TCP port of LightX over SPP framing (0: heuristic only)")

local set_ends = common.set_ends

-- Arguments ----------------------------------------------------------------------------------------------------

local function u32(t, o) return t(o, 4):le_uint() end

-- The arguments of the packet being dissected, for the Info column ("sector=5", "text=TS-1").
local notes = {}
local function note(field, value)
    local name = short_names[field]
    if name ~= nil and #notes < 4 then notes[#notes + 1] = string.format("%s=%s", name, tostring(value)) end
end

-- Adds a NUL-terminated string (all of `t` when there is no NUL), as ArgumentReader.cString reads it.
local function add_cstring(tree, field, t)
    local n = t:len()
    local k = 0
    while k < n and t(k, 1):uint() ~= 0 do k = k + 1 end
    local s = k > 0 and t(0, k):raw() or ""
    local item = tree:add(field, t(0, n), s)
    note(field, s)
    return s, item
end

local function need(tree, t, n, what)
    if t:len() < n then
        tree:add_proto_expert_info(ef.argument, string.format("%s needs %d bytes, got %d", what, n, t:len()))
        return false
    end
    return true
end

local function add_u32(tree, field, t, o)
    tree:add_le(field, t(o, 4))
    local v = u32(t, o)
    note(field, field == f.crc and string.format("0x%08x", v) or v)
    return v
end

-- How the value of each setting travels (the same layout in a write's argument and in a read's reply).
local value_layouts = {
    [0x81] = function(tree, t) if need(tree, t, 4, "audio EQ preset") then add_u32(tree, f.eq_preset, t, 0) end end,
    [0x86] = function(tree, t) if need(tree, t, 4, "awareness preset") then add_u32(tree, f.awareness, t, 0) end end,
    [0xC6] = function(tree, t) if need(tree, t, 4, "awareness preset") then add_u32(tree, f.awareness, t, 0) end end,
    [0x88] = function(tree, t) if need(tree, t, 4, "ANC level") then tree:add_le(f.level, t(0, 4)) end end,
    [0x8B] = function(tree, t) if need(tree, t, 4, "ambient steps") then tree:add_le(f.steps, t(0, 4)) end end,
    [0xB0] = function(tree, t) if need(tree, t, 4, "battery level") then add_u32(tree, f.percent, t, 0) end end,
    [0xF0] = function(tree, t) if need(tree, t, 4, "battery level") then add_u32(tree, f.percent, t, 0) end end,
    [0x87] = function(tree, t)
        if need(tree, t, 3, "firmware version") then
            tree:add(f.version, t(0, math.min(4, t:len())),
                string.format("%d.%d.%d", t(0, 1):uint(), t(1, 1):uint(), t(2, 1):uint()))
        end
    end,
    [0x90] = function(tree, t)
        if need(tree, t, 16, "graphic EQ limits") then
            add_u32(tree, f.band_count, t, 0); add_u32(tree, f.presets, t, 4)
            tree:add_le(f.min_gain, t(8, 4)); tree:add_le(f.max_gain, t(12, 4))
        end
    end,
    [0x94] = function(tree, t)
        if need(tree, t, 8, "graphic EQ preset bands") then
            add_u32(tree, f.preset, t, 0)
            local count = add_u32(tree, f.band_count, t, 4)
            if count <= 62 and need(tree, t, 8 + 4 * count, "graphic EQ preset bands") then
                for k = 0, count - 1 do tree:add_le(f.gain, t(8 + 4 * k, 4)) end
            end
        end
    end,
    [0x95] = function(tree, t)
        if need(tree, t, 12, "graphic EQ band") then
            add_u32(tree, f.preset, t, 0); add_u32(tree, f.band, t, 4); tree:add_le(f.gain, t(8, 4))
        end
    end,
    [0x97] = function(tree, t)
        if need(tree, t, 4, "graphic EQ band frequencies") then
            local count = add_u32(tree, f.band_count, t, 0)
            if count <= 62 and need(tree, t, 4 + 4 * count, "graphic EQ band frequencies") then
                for k = 0, count - 1 do add_u32(tree, f.frequency, t, 4 + 4 * k) end
            end
        end
    end,
    [0x75] = function(tree, t)
        if need(tree, t, 6, "Bluetooth address") then
            local b = {}
            for k = 5, 0, -1 do b[#b + 1] = string.format("%02X", t(k, 1):uint()) end
            tree:add(f.bdaddr, t(0, 6), table.concat(b, ":"))
            note(f.bdaddr, table.concat(b, ":"))
        end
    end,
    [0x72] = function(tree, t)
        if need(tree, t, 8, "ANC calibration") then
            for k = 0, 3 do tree:add_le(f.calibration_gain, t(2 * k, 2)) end
        end
    end,
}
for _, c in ipairs({ 0x85, 0xB5, 0xB6, 0xB7, 0xC5 }) do
    value_layouts[c] = function(tree, t)
        if need(tree, t, 4, "boolean") then tree:add(f.enabled, t(0, 4), u32(t, 0) ~= 0); note(f.enabled, u32(t, 0) ~= 0) end
    end
end
for _, c in ipairs({ 0x83, 0x84, 0x89, 0x8A }) do
    value_layouts[c] = function(tree, t) if need(tree, t, 4, "value") then add_u32(tree, f.value, t, 0) end end
end
for _, c in ipairs({ 0x91, 0x92, 0x96, 0x98 }) do
    value_layouts[c] = function(tree, t) if need(tree, t, 4, "preset") then add_u32(tree, f.preset, t, 0) end end
end
value_layouts[0x93] = value_layouts[0x83]
for _, c in ipairs({ 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x11, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F }) do
    value_layouts[c] = function(tree, t) add_cstring(tree, f.text, t) end
end
value_layouts[0x69] = function(tree, t)
    if need(tree, t, 4, "lock") then tree:add(f.locked, t(0, 4), u32(t, 0) ~= 0); note(f.locked, u32(t, 0) ~= 0) end
end

local function is_default_buffer(t)
    if t:len() ~= 256 then return false end
    local raw = t:raw()
    return raw == string.rep("\0", 256)
end

local function flash_command(c) return c == 0x27 or c == 0x2E or c == 0x31 end
local function flash_read(c) return c == 0x28 or c == 0x2F or c == 0x32 end
local function erase_command(c) return c == 0x26 or c == 0x2D or c == 0x30 end

-- What the buffer of a request (kind 0) carries.
local function request_arguments(tree, cmd, op, t)
    if op == 1 then -- Read
        if cmd == 0x94 or cmd == 0x95 or cmd == 0x97 then value_layouts[cmd](tree, t) return end
        if cmd == 0x9A then if need(tree, t, 4, "preset") then add_u32(tree, f.preset, t, 0) end return end
        if cmd == 0x6B then if need(tree, t, 4, "measurement id") then add_u32(tree, f.measurement, t, 0) end return end
        if flash_read(cmd) then tree:add(f.data_length, t(0, t:len()), t:len()) return end
        if is_default_buffer(t) then tree:add(f.default_buffer, t(0, 256), true) end
        return
    end
    if op ~= 2 then return end
    if is_default_buffer(t) then tree:add(f.default_buffer, t(0, 256), true) return end
    if erase_command(cmd) then if need(tree, t, 4, "sector") then add_u32(tree, f.sector, t, 0) end return end
    if flash_command(cmd) then
        tree:add(f.data, t(0, t:len())); tree:add(f.data_length, t(0, t:len()), t:len()) return
    end
    if cmd == 0x2C then
        if need(tree, t, 8, "verify-CRC argument") then
            add_u32(tree, f.sectors, t, 0); add_u32(tree, f.crc, t, 4)
            if t:len() >= 12 then add_u32(tree, f.resource_base, t, 8) end
        end
        return
    end
    if cmd == 0x29 then if need(tree, t, 4, "sectors") then add_u32(tree, f.sectors, t, 0) end return end
    if cmd == 0x24 then if need(tree, t, 16, "response") then tree:add(f.response, t(0, 16)) end return end
    if cmd >= 0x01 and cmd <= 0x1F then add_cstring(tree, f.string, t) return end
    if cmd == 0x6A then tree:add(f.factory_key, t(0, t:len())) return end
    if cmd == 0x71 then if need(tree, t, 4, "value") then add_u32(tree, f.value, t, 0) end return end
    if cmd == 0x72 then if need(tree, t, 4, "value") then add_u32(tree, f.value, t, 0) end return end
    local layout = value_layouts[cmd]
    if layout then layout(tree, t) end
end

-- What the buffer of a reply (kind 1) or push (kind 2) carries.
local function reply_arguments(tree, cmd, op, status, t)
    if status ~= 0 then
        if t:len() > 0 and cmd < 0xC0 then add_cstring(tree, f.refusal, t) end
        return
    end
    -- docs/capture.md §3's arguments, whatever the opcode.
    if cmd == 0x20 then if need(tree, t, 1, "image type") then tree:add(f.image, t(0, 1)); note(f.image, t(0, 1):uint()) end return end
    if cmd == 0x22 then if need(tree, t, 1, "authentication status") then tree:add(f.authenticated, t(0, 1)); note(f.authenticated, t(0, 1):uint()) end return end
    if cmd == 0x23 then if need(tree, t, 16, "challenge") then tree:add(f.challenge, t(0, 16)) end return end
    if cmd == 0x3A or (cmd >= 0x01 and cmd <= 0x1F) then add_cstring(tree, f.text, t) return end
    if cmd == 0x3B and op ~= 1 then
        if need(tree, t, 8, "capabilities") then add_u32(tree, f.caps_flags, t, 0); add_u32(tree, f.caps_queue, t, 4) end
        return
    end
    if op ~= 1 and cmd < 0xC0 then return end -- a write's acknowledgement carries nothing of its own
    if cmd == 0x9A then add_cstring(tree, f.name, t) return end
    if flash_read(cmd) then tree:add(f.data, t(0, t:len())); tree:add(f.data_length, t(0, t:len()), t:len()) return end
    if cmd == 0x3B then
        if need(tree, t, 8, "capabilities") then
            local flags = u32(t, 0)
            local fi = tree:add_le(f.caps_flags, t(0, 4))
            fi:add_le(f.caps_addressed, t(0, 4)); fi:add_le(f.caps_secure, t(0, 4))
            add_u32(tree, f.caps_queue, t, 4)
            if bit32.band(flags, 2) ~= 0 and need(tree, t, 48, "secure-boot capabilities") then
                tree:add(f.caps_key_hash, t(8, 32))
                tree:add(f.caps_floor, t(40, 8), string.format("%d.%d.%d+%d", t(40, 1):uint(), t(41, 1):uint(),
                    t(42, 2):le_uint(), t(44, 4):le_uint()))
            end
        end
        return
    end
    if cmd == 0x68 then
        if need(tree, t, 8, "hardware id") then
            local b = {}
            for k = 7, 0, -1 do b[#b + 1] = string.format("%02x", t(k, 1):uint()) end
            tree:add(f.hardware_id, t(0, 8), table.concat(b))
            note(f.hardware_id, table.concat(b))
        end
        return
    end
    if cmd == 0x6B then
        if need(tree, t, 4, "measurement value") then tree:add_le(f.measured, t(0, 4)); note(f.measured, t(0, 4):le_int()) end
        return
    end
    if cmd == 0x71 then
        if need(tree, t, 4, "calibration status") then
            local state = add_u32(tree, f.calibration_state, t, 0)
            if state ~= 0 and need(tree, t, 12, "calibration status") then
                for k = 0, 3 do tree:add_le(f.calibration_gain, t(4 + 2 * k, 2)) end
            end
        end
        return
    end
    local layout = value_layouts[cmd]
    if layout then layout(tree, t) end
end

-- One packet -----------------------------------------------------------------------------------------------------

-- Whether a message came from the host (docs/capture.md §1); nil when the capture says no direction (plain TCP).
local from_host_by_direction = common.from_host

-- `t`: a tvb range holding the 12-byte header and the buffer. `from_host`: true, false, or nil to infer from the
-- modules (a device's replies come from the application on byte streams). `extra(tree)` adds the transport's fields
-- first. Returns a one-line summary.
local function dissect_packet(t, pinfo, tree, from_host)
    local n = t:len()
    if n < 12 then
        tree:add_proto_expert_info(ef.truncated, string.format("a LightX header needs 12 bytes, got %d", n))
        return "truncated header"
    end
    local src = t(0, 1):uint()
    local ob, sb = t(2, 1):uint(), t(3, 1):uint()
    local cmd = t(7, 1):uint()
    local op = bit32.band(ob, 0x3F)
    local status = bit32.band(sb, 0x3F)
    local param1 = t(8, 4):le_uint()
    if from_host == nil then from_host = not (src == 0x40 or src == 0x43) end
    local kind = from_host and "request" or (cmd >= 0xC0 and "push" or "reply")
    tree:add(f.kind, kind):set_generated()
    tree:add(f.source, t(0, 1)); tree:add(f.destination, t(1, 1))
    tree:add(f.opcode, t(2, 1)); tree:add(f.high_priority, t(2, 1)); tree:add(f.has_buffer, t(2, 1))
    local si = tree:add(f.status, t(3, 1))
    tree:add(f.type, t(3, 1), bit32.band(sb, 0xC0))
    tree:add_le(f.address, t(4, 3))
    tree:add(f.command, t(7, 1))
    tree:add_le(f.param1, t(8, 4))
    local name = commands[cmd] or string.format("unknown 0x%02X", cmd)
    local summary = string.format("%s %s %s", kind, opcodes[op] or string.format("op 0x%02X", op), name)
    local address = bit32.band(t(4, 4):le_uint(), 0xFFFFFF)
    if address ~= 0 then summary = summary .. string.format(" addr 0x%x", address) end
    if status ~= 0 then
        summary = summary .. " " .. (statuses[status] or string.format("status 0x%02X", status))
        si:add_proto_expert_info(ef.status, "Status " .. (statuses[status] or tostring(status)))
    end
    local blen = n - 12
    notes = {}
    if blen > 0 then
        summary = summary .. string.format(" [%d B]", blen)
        local bt = t(12, blen)
        local bi = tree:add(f.buffer, bt)
        if kind == "request" then request_arguments(bi, cmd, op, bt) else reply_arguments(bi, cmd, op, status, bt) end
    elseif kind == "reply" and status == 0 and ((cmd >= 0x01 and cmd <= 0x1F) or cmd == 0x3A) then
        -- A config string's reply without a buffer (a write's acknowledgement): the empty text (docs/capture.md).
        tree:add(f.text, ""):set_generated()
    end
    if #notes > 0 then summary = summary .. " " .. table.concat(notes, " ") end
    return summary
end

-- SPP frames -----------------------------------------------------------------------------------------------------

local MAGIC = "\255\90\0\0"

local function spp_sum(s, first, last)
    local sum = 0
    for k = first, last do sum = sum + s:byte(k) end
    return sum % 256
end

-- Judges stream bytes as SPPStreamDecoder does (common.scan): events { kind = "frame" | "bad_checksum" |
-- "bad_length" | "garbage", start = 0-based offset, len = bytes }; a bad length skips the magic's first byte.
local function spp_step(s, i, n)
    local rem = n - i
    local want = math.min(4, rem)
    if s:sub(i + 1, i + want) ~= MAGIC:sub(1, want) then
        -- Hunt for the next 0xFF (a possible frame start).
        local nxt = s:find("\255", i + 2, true)
        return "hunt", nxt and nxt - 1
    elseif rem < 6 then
        return "wait"
    end
    local len = s:byte(i + 5) * 256 + s:byte(i + 6)
    if len < 19 or len > 275 then return "reject", { kind = "bad_length", len = 6, length = len } end
    if rem < len then return "wait" end
    -- docs/capture.md: a bad checksum's frame is decoded all the same, then the reader goes on after the frame.
    if spp_sum(s, i + 1, i + len) ~= 0 then return "frame", { kind = "bad_checksum", len = len } end
    return "frame", { kind = "frame", len = len }
end
local function spp_scan(s) return common.scan(s, spp_step, "garbage") end

-- Dissects one whole SPP frame `t` (a tvb range of exactly the frame's length). Returns the summary.
local function dissect_spp_frame(t, pinfo, tree, bad, from_host)
    local len = t:len()
    local ft = tree:add(lightx, t, "LightX SPP frame")
    ft:add(f.spp_magic, t(0, 4))
    ft:add(f.length, t(4, 2))
    ft:add(f.buffer_length, t(4, 2), len - 19):set_generated()
    local ci = ft:add(f.checksum, t(len - 1, 1))
    ft:add(f.checksum_status, t(len - 1, 1), bad and 0 or 1):set_generated()
    if bad then
        local s = t:raw()
        local expected = (256 - spp_sum(s, 1, len - 1)) % 256
        ci:add_proto_expert_info(ef.bad_checksum, string.format("Bad SPP checksum: expected %02x, got %02x",
            expected, t(len - 1, 1):uint()))
    end
    local summary = dissect_packet(t(6, len - 7), pinfo, ft, from_host)
    if bad then summary = summary .. " [bad checksum]" end
    ft:append_text(": " .. summary)
    return summary, ft
end

local function set_info(pinfo, summaries) common.set_info(pinfo, "LightX", summaries) end

-- Shows one scanned event `t` (a tvb range); returns a frame's summary. `detailed`: the experts say the length (TCP's
-- keep the experts' own text).
local function show_event(e, t, pinfo, tree, from_host, detailed)
    if e.kind == "frame" or e.kind == "bad_checksum" then
        local s, ft = dissect_spp_frame(t, pinfo, tree, e.kind == "bad_checksum", from_host)
        if e.reassembled then ft:add(f.reassembled_in, e.first_frame):set_generated() end
        return s
    elseif e.kind == "bad_length" then
        common.add_expert(tree:add(lightx, t, "LightX: SPP header with a bad length"), ef.bad_length,
            detailed and string.format("SPP length %d outside 19...275", e.length) or nil)
    else
        common.add_expert(tree:add(f.garbage, t), ef.garbage,
            detailed and string.format("%d bytes outside any SPP frame skipped", e.len) or nil)
    end
end

-- Displays the events of one packet (common.show_stream).
local function show_events(tvb, pinfo, tree, result)
    local from_host = from_host_by_direction(pinfo)
    local summaries = common.show_stream(tvb, tree, result, {
        reassembled = "Reassembled SPP frame",
        event = function(e, range)
            local t = range:tvb()
            return show_event(e, t(0, t:len()), pinfo, tree, from_host, true)
        end,
        proto = lightx,
        partial = "LightX: start of an SPP frame (%d bytes), continued in a later packet",
        expert = ef.partial,
        continues = "[SPP frame continues]",
    })
    set_info(pinfo, summaries)
end

-- Byte streams in Tuneup's captures (LINKTYPE_USER0): per interface and direction. A rejected candidate's skipped
-- bytes entirely in held bytes are shown as they were, reassembled.
local spp_streams = common.reassembler(spp_scan)

local function dissect_stream(tvb, pinfo, tree)
    pinfo.cols.protocol = "LightX"
    local result = spp_streams.result(pinfo, tvb, common.stream_key(pinfo))
    set_ends(pinfo)
    show_events(tvb, pinfo, tree, result)
    return tvb:len()
end

-- LINKTYPE_USER0: a LightX byte stream.
local lightx_stream = Proto("lightx_stream", "LightX byte stream")
lightx_stream.dissector = dissect_stream
DissectorTable.get("wtap_encap"):add(wtap.USER0, lightx_stream)
-- RFCOMM (btmon's btsnoop captures of `bt:` links): Decode As on the channel; the frames are reassembled the same way.
local rfcomm = DissectorTable.get("btrfcomm.dlci")
if rfcomm ~= nil then rfcomm:add_for_decode_as(lightx_stream) end

-- TCP: desegmented by TCP itself.
local function dissect_tcp(tvb, pinfo, tree)
    pinfo.cols.protocol = "LightX"
    local n = tvb:len()
    local s = tvb:raw(0, n)
    local events, tail = spp_scan(s)
    local summaries = {}
    for _, e in ipairs(events) do
        summaries[#summaries + 1] = show_event(e, tvb(e.start, e.len), pinfo, tree, nil, false)
    end
    set_info(pinfo, summaries)
    local rem = n - tail
    local more = rem >= 6 and s:sub(tail + 1, tail + 4) == MAGIC and s:byte(tail + 5) * 256 + s:byte(tail + 6) - rem
        or nil
    common.desegment(tvb, pinfo, tree, tail, more, lightx, "LightX: frame cut short by the capture", ef.truncated)
    return n
end

local lightx_tcp = Proto("lightx_tcp", "LightX over TCP")
lightx_tcp.dissector = dissect_tcp

local function heuristic_tcp(tvb, pinfo, tree)
    if tvb:len() < 6 then return false end
    if tvb:raw(0, 4) ~= MAGIC then return false end
    local len = tvb(4, 2):uint()
    if len < 19 or len > 275 then return false end
    pinfo.conversation = lightx_tcp
    lightx_tcp.dissector(tvb, pinfo, tree)
    return true
end
lightx_tcp:register_heuristic("tcp", heuristic_tcp)

local registered_port = 0
function lightx.prefs_changed()
    local tcp = DissectorTable.get("tcp.port")
    if registered_port ~= 0 then tcp:remove(registered_port, lightx_tcp) end
    registered_port = lightx.prefs.tcp_port
    if registered_port ~= 0 then tcp:add(registered_port, lightx_tcp) end
end
DissectorTable.get("tcp.port"):add(4100, lightx_tcp)
registered_port = 4100

-- USB HID feature reports --------------------------------------------------------------------------------------

-- Per device: the buffer of a host's report 0xF1 waiting for its 0xF0, and the header of a device's report 0xF0
-- waiting for its 0xF1 (docs/protocol.md §2.3, docs/capture.md §2).
local hid_state = {}
local hid_results = {}

local function hid_init()
    hid_state = {}
    hid_results = {}
end

local function announced_buffer(header)
    local ob = header:byte(3)
    if bit32.band(ob, 0x80) == 0 then return 0 end
    local p1 = header:byte(9) + header:byte(10) * 256 + header:byte(11) * 65536 + header:byte(12) * 16777216
    return p1
end

-- Decides (first pass) what a report completes. `from_host`: true (SET_REPORT), false (a GET_REPORT's answer) or
-- nil (unknown: a header with flag 1 or all zero is the device's, other headers the host's; a buffer completes a
-- device header waiting for it, else waits for a host header).
local function hid_feed(pinfo, t, key, from_host)
    local st = hid_state[key]
    if st == nil then st = {}; hid_state[key] = st end
    local n = t:len()
    local id = t(0, 1):uint()
    local r = { id = id }
    if id == 0xF0 then
        if n < 14 then r.short = true return r end
        local flag = t(1, 1):uint()
        local header = t:raw(2, 12)
        local announced = announced_buffer(header)
        if from_host == nil then from_host = not (flag == 1 or header == string.rep("\0", 12)) end
        r.from_host = from_host
        r.flag = flag
        if not from_host then
            if flag ~= 1 then r.nothing = true return r end
            if announced > 0 and announced <= 256 then
                st.device = { header = header, announced = announced, frame = pinfo.number, flag = flag }
                r.awaiting = true
                return r
            end
            r.packet = header
        else
            local packet = header
            if announced > 0 and announced <= 256 then
                if st.host_buffer ~= nil then
                    packet = header .. st.host_buffer:sub(1, announced)
                    r.buffer_frame = st.host_buffer_frame
                else
                    r.missing_buffer = true
                end
            end
            st.host_buffer = nil
            r.packet = packet
        end
    elseif id == 0xF1 then
        local data = n > 1 and t:raw(1, n - 1) or ""
        if from_host ~= true and st.device ~= nil then
            r.from_host = false
            r.flag = st.device.flag
            r.packet = st.device.header .. data:sub(1, st.device.announced)
            r.header_frame = st.device.frame
            if #data < st.device.announced then r.short_buffer = st.device.announced end
            st.device = nil
        elseif from_host ~= false then
            r.from_host = true
            st.host_buffer = data
            st.host_buffer_frame = pinfo.number
            r.buffer_only = true
        else
            r.unexpected = true
        end
    else
        r.unknown = true
    end
    return r
end

local function hid_show(t, pinfo, tree, r)
    local n = t:len()
    if r.unknown then
        local rt = tree:add(lightx_hid_proto, t, "LightX HID feature report")
        rt:add(f.report_id, t(0, 1))
        rt:add_proto_expert_info(ef.hid, string.format("report 0x%02X is not a LightX report", r.id))
        return "unknown report"
    end
    if r.short then
        local rt = tree:add(lightx_hid_proto, t, "LightX HID feature report")
        rt:add(f.report_id, t(0, 1))
        rt:add_proto_expert_info(ef.truncated, string.format("report 0xF0 is 14 bytes, got %d", n))
        return "short report 0xF0"
    end
    if r.nothing or r.awaiting or r.buffer_only or r.unexpected then
        -- A report that completes no message: shown, without the message's fields.
        local rt = tree:add(lightx_hid_proto, t, "LightX HID feature report")
        rt:add(f.report_id, t(0, 1))
        if r.nothing then
            rt:add(f.nothing_ready, t(1, 13), true)
            return "nothing ready"
        end
        if r.awaiting then
            local h = t:raw(2, 12)
            local cmd = h:byte(8)
            rt:add(t(2, 12), string.format("Header of a device packet: %s, %d buffer bytes follow in report 0xF1",
                commands[cmd] or string.format("command 0x%02X", cmd), announced_buffer(h)))
            return string.format("header of %s [buffer follows]", commands[cmd] or string.format("0x%02X", cmd))
        end
        if r.buffer_only then
            rt:add(t(1, n - 1), string.format("Buffer of the host's next packet (%d bytes with padding)", n - 1))
            return "buffer for the next header"
        end
        rt:add_proto_expert_info(ef.hid, "report 0xF1 without an announced buffer")
        return "unexpected report 0xF1"
    end
    local rt = tree:add(lightx, t, "LightX over USB HID")
    rt:add(f.report_id, t(0, 1))
    if r.id == 0xF0 then rt:add(f.report_flag, t(1, 1)) else rt:add(f.report_flag, r.flag):set_generated() end
    local pt
    if #r.packet > 12 or r.id ~= 0xF0 then
        local tv = ByteArray.new(r.packet, true):tvb("LightX packet")
        pt = tv(0, tv:len())
    else
        pt = t(2, 12)
    end
    local buffer_length = announced_buffer(r.packet)
    rt:add(f.buffer_length, buffer_length):set_generated()
    if r.header_frame then rt:add(f.reassembled_in, r.header_frame):set_generated() end
    if r.missing_buffer then rt:add_proto_expert_info(ef.hid, "no report 0xF1 came before this header") end
    if r.short_buffer then
        rt:add_proto_expert_info(ef.truncated, string.format("report 0xF1 is shorter than the %d announced bytes", r.short_buffer))
    end
    local s = dissect_packet(pt, pinfo, rt, r.from_host)
    rt:append_text(": " .. s)
    return s
end

local function hid_dissect_report(t, pinfo, tree, key, from_host)
    local r = hid_results[pinfo.number]
    if r == nil then
        r = hid_feed(pinfo, t, key, from_host)
        hid_results[pinfo.number] = r
    end
    pinfo.cols.protocol = "LightX"
    pinfo.cols.info = hid_show(t, pinfo, tree, r)
end

-- LINKTYPE_USER1: one feature report per packet (a 1-byte packet is a GET_REPORT naming its report).
local lightx_hid = lightx_hid_proto
function lightx_hid.dissector(tvb, pinfo, tree)
    if tvb:len() == 0 then return 0 end
    if tvb:len() == 1 then
        pinfo.cols.protocol = "LightX"
        local rt = tree:add(lightx_hid, tvb(), "LightX GET_REPORT")
        rt:add(f.get_report, tvb(0, 1))
        pinfo.cols.info = string.format("GET_REPORT 0x%02X", tvb(0, 1):uint())
        return 1
    end
    set_ends(pinfo)
    hid_dissect_report(tvb(0, tvb:len()), pinfo, tree, "if " .. common.interface_key(),
        from_host_by_direction(pinfo))
    return tvb:len()
end
DissectorTable.get("wtap_encap"):add(wtap.USER1, lightx_hid)

-- usbmon: the control transfers of feature reports 0xF0 / 0xF1.
local usb_urb_id = Field.new("usb.urb_id")
local usb_urb_type = Field.new("usb.urb_type")
local usb_bm_request_type = Field.new("usb.bmRequestType")
local usb_bus = Field.new("usb.bus_id")
local usb_device = Field.new("usb.device_address")
local urbs = {}

local function usb_key()
    local bus, dev = usb_bus(), usb_device()
    return string.format("usb %s.%s", bus and tostring(bus()) or "?", dev and tostring(dev()) or "?")
end

-- Submissions carry [bRequest, wValue, wIndex, wLength, data]; completions carry the data.
local function usb_control(tvb, pinfo, tree)
    local urb_type = usb_urb_type()
    local urb_id = usb_urb_id()
    if urb_type == nil or urb_id == nil then return false end
    local ut = urb_type()
    local submit = ut == "S" or ut == 0x53
    local id = tostring(urb_id())
    local key = usb_key()
    local r = hid_results[pinfo.number]
    if r == nil then
        if submit then
            local bm = usb_bm_request_type()
            if bm == nil or tvb:len() < 7 then hid_results[pinfo.number] = { not_lightx = true } return false end
            local request = tvb(0, 1):uint()
            local value = tvb(1, 2):le_uint()
            local report = bit32.band(value, 0xFF)
            if bit32.rshift(value, 8) ~= 3 or (report ~= 0xF0 and report ~= 0xF1) then
                hid_results[pinfo.number] = { not_lightx = true } return false
            end
            if bm() == 0x21 and request == 0x09 and tvb:len() > 7 then
                r = hid_feed(pinfo, tvb(7, tvb:len() - 7), key, true)
                r.from = 7
            elseif bm() == 0xA1 and request == 0x01 then
                urbs[id] = report
                r = { get_report = report }
            else
                hid_results[pinfo.number] = { not_lightx = true } return false
            end
        else
            local report = urbs[id]
            urbs[id] = nil
            if report == nil or tvb:len() == 0 then hid_results[pinfo.number] = { not_lightx = true } return false end
            r = hid_feed(pinfo, tvb(0, tvb:len()), key, false)
            r.from = 0
        end
        hid_results[pinfo.number] = r
    end
    if r.not_lightx then return false end
    pinfo.cols.protocol = "LightX"
    if r.get_report then
        local rt = tree:add(lightx_hid, tvb(), "LightX GET_REPORT")
        rt:add(f.get_report, tvb(1, 1), r.get_report)
        pinfo.cols.info = string.format("GET_REPORT 0x%02X", r.get_report)
        return true
    end
    pinfo.cols.info = hid_show(tvb(r.from, tvb:len() - r.from), pinfo, tree, r)
    return true
end

local lightx_usb = Proto("lightx_usb", "LightX over USB HID")
lightx_usb:register_heuristic("usb.control", usb_control)
-- Captures with the device's descriptors know the interface is HID (class 3): the class's table entry runs first.
local usb_hid_original = DissectorTable.get("usb.control"):get_dissector(3)
function lightx_usb.dissector(tvb, pinfo, tree)
    if usb_control(tvb, pinfo, tree) then return tvb:len() end
    if usb_hid_original ~= nil then return usb_hid_original:call(tvb, pinfo, tree) end
    return 0
end
DissectorTable.get("usb.control"):add(3, lightx_usb)

function lightx.init()
    spp_streams.reset()
    hid_init()
    urbs = {}
end
