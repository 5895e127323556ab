-- The helpers Tuneup's dissectors share (lightx.lua, hkwirelesshd.lua, wearable.lua): docs/wireshark.md.
--
-- Each dissector loads this file from its own folder (`dofile`) unless the global `tuneup_dissector_common` says it
-- ran already. Wireshark, which loads every *.lua of a plugin folder, may also run it on its own: then it only sets
-- that global, registers nothing, and the dissectors use the same table (it runs once either way).
if tuneup_dissector_common ~= nil then return tuneup_dissector_common end

local M = {}

-- A protocol's fields and expert items, from the tables that name them.
function M.register(proto, fields, experts)
    local fl = {}
    for _, v in pairs(fields) do fl[#fl + 1] = v end
    proto.fields = fl
    local el = {}
    for _, v in pairs(experts) do el[#el + 1] = v end
    proto.experts = el
end

-- Expert items `prefix.expert.KEY` from { KEY = { text, group, severity } } (names of expert.group and
-- expert.severity).
function M.experts(prefix, specs)
    local ef = {}
    for key, spec in pairs(specs) do
        ef[key] = ProtoExpert.new(prefix .. ".expert." .. key, spec[1], expert.group[spec[2]], expert.severity[spec[3]])
    end
    return ef
end

-- Adds expert `ef` to `item`, with `text` when there is one (nil: the expert's own text; Wireshark refuses a nil).
function M.add_expert(item, ef, text)
    if text == nil then return item:add_proto_expert_info(ef) end
    return item:add_proto_expert_info(ef, text)
end

-- Direction ------------------------------------------------------------------------------------------------------

local interface_description = Field.new("frame.interface_description")
local interface_id = Field.new("frame.interface_id")

-- Whether a packet came from the host: outbound on a host-side interface or inbound on a device-side one
-- (docs/capture.md §1: the role ends `if_description`). nil when the capture says no direction (plain TCP).
function M.from_host(pinfo)
    if pinfo.p2p_dir ~= 0 and pinfo.p2p_dir ~= 1 then return nil end
    local d = interface_description()
    local device = d ~= nil and tostring(d()):sub(-13) == "; device side"
    return (pinfo.p2p_dir == 0) ~= device
end

-- The Source and Destination columns: host or device (docs/capture.md §1).
function M.set_ends(pinfo)
    local from_host = M.from_host(pinfo)
    if from_host == nil then return end
    pinfo.cols.src = from_host and "host" or "device"
    pinfo.cols.dst = from_host and "device" or "host"
end

-- The packet's pcapng interface ("?" without one).
function M.interface_key()
    local ifid = interface_id()
    return ifid and tostring(ifid()) or "?"
end

-- One byte stream of a capture: interface and direction.
function M.stream_key(pinfo)
    return string.format("%s/%d", M.interface_key(), pinfo.p2p_dir)
end

-- Byte streams ---------------------------------------------------------------------------------------------------

-- Scans stream bytes `s` as the project's stream decoders do. `step(s, i, n)` judges the bytes at 0-based offset `i`
-- (of `n`): "hunt", next (no frame starts at `i`: skipped up to the 0-based `next`, nil for the end); "noise" (one
-- byte skipped); "wait" (undecided: held for more bytes); "reject", event (a header refused, the byte after it
-- skipped); "frame", event (a frame of `event.len` bytes, the reader goes on after it). Runs of skipped bytes are
-- events of kind `skipped`. Returns the events (each with its 0-based `start`) and the offset of the undecided tail
-- (#s when none).
function M.scan(s, step, skipped)
    local events = {}
    local n = #s
    local i = 0
    local skip_start = nil
    local function flush()
        if skip_start ~= nil and i > skip_start then
            events[#events + 1] = { kind = skipped, start = skip_start, len = i - skip_start }
        end
        skip_start = nil
    end
    while i < n do
        local action, a = step(s, i, n)
        if action == "hunt" then
            if skip_start == nil then skip_start = i end
            if a == nil then i = n break end
            i = a
        elseif action == "noise" then
            if skip_start == nil then skip_start = i end
            i = i + 1
        elseif action == "reject" then
            flush()
            a.start = i
            events[#events + 1] = a
            i = i + 1
            skip_start = i
        elseif action == "frame" then
            flush()
            a.start = i
            events[#events + 1] = a
            i = i + a.len
        else
            break
        end
    end
    flush()
    return events, i
end

-- Reassembles the frames of byte streams captured in pieces, per stream key, on the first pass; later passes show
-- what each packet completed. `scan(s)` returns events { kind, start = 0-based offset in `s`, len, ... } and the
-- offset of the undecided tail. A packet's result: its events (`offset` into the packet, or `reassembled` with the
-- frame's `bytes` and the packet it started in, `first_frame`; the scanner's other keys kept) and `partial_len`,
-- the bytes of the packet held for a later one.
function M.reassembler(scan)
    local self = { streams = {}, results = {} }

    function self.reset()
        self.streams = {}
        self.results = {}
    end

    local function feed(pinfo, tvb, key)
        local st = self.streams[key]
        if st == nil then st = { held = "", first_frame = 0 }; self.streams[key] = st end
        local held = st.held
        local s = held .. tvb:raw(0, tvb:len())
        local events, tail = scan(s)
        local base = #held
        local out = {}
        for _, e in ipairs(events) do
            local r = {}
            for k, v in pairs(e) do if k ~= "start" then r[k] = v end end
            if e.start >= base then
                r.offset = e.start - base
            else
                r.reassembled = true
                r.bytes = s:sub(e.start + 1, e.start + e.len)
                r.first_frame = st.first_frame
            end
            out[#out + 1] = r
        end
        local result = { events = out, partial_len = 0 }
        st.held = s:sub(tail + 1)
        if #st.held > 0 then
            if tail >= base then st.first_frame = pinfo.number end
            result.partial_len = math.min(#st.held, tvb:len())
        end
        return result
    end

    -- The packet's result, fed to the stream `key` the first time the packet is seen.
    function self.result(pinfo, tvb, key)
        local result = self.results[pinfo.number]
        if result == nil then
            result = feed(pinfo, tvb, key)
            self.results[pinfo.number] = result
        end
        return result
    end

    return self
end

-- Shows a packet's result: `o.event(e, t)` shows each event (`t` a tvb range of its bytes, a new tvb named
-- `o.reassembled` for a reassembled one) and returns its summary or nil; the held bytes are item `o.partial` (a
-- format of their count) of `o.proto` with expert `o.expert`, and the summary `o.continues` when there is no other.
-- Returns the summaries.
function M.show_stream(tvb, tree, result, o)
    local summaries = {}
    for _, e in ipairs(result.events) do
        local t
        if e.reassembled then
            local tv = ByteArray.new(e.bytes, true):tvb(o.reassembled)
            t = tv(0, tv:len())
        else
            t = tvb(e.offset, e.len)
        end
        local s = o.event(e, t)
        if s ~= nil then summaries[#summaries + 1] = s end
    end
    if result.partial_len > 0 then
        tree:add(o.proto, tvb(tvb:len() - result.partial_len, result.partial_len),
            string.format(o.partial, result.partial_len)):add_proto_expert_info(o.expert)
        if #summaries == 0 then summaries[1] = o.continues end
    end
    return summaries
end

-- The Protocol and Info columns from a packet's summaries (untouched without any).
function M.set_info(pinfo, protocol, summaries)
    if #summaries == 0 then return end
    pinfo.cols.protocol = protocol
    pinfo.cols.info = table.concat(summaries, "; ")
end

-- TCP: what is left of a segment from `tail` on. Cut short by the capture (snaplen): shown as item `cut` of `proto`
-- with expert `truncated`, all there will be. Else TCP is asked for `more` bytes (nil: one more segment).
function M.desegment(tvb, pinfo, tree, tail, more, proto, cut, truncated)
    local n = tvb:len()
    if tail >= n then return end
    if tvb:reported_length_remaining(tail) > n - tail then
        tree:add(proto, tvb(tail, n - tail), cut):add_proto_expert_info(truncated)
        return
    end
    pinfo.desegment_offset = tail
    pinfo.desegment_len = more or DESEGMENT_ONE_MORE_SEGMENT
end

tuneup_dissector_common = M
return M
