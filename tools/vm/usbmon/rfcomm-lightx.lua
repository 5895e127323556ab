-- Hands the RFCOMM payloads of the DLCIs in $LIGHTX_RFCOMM_DLCI (comma-separated) to lightx.lua's byte-stream
-- dissector (SPP frames reassembled per direction): what Decode As would do, which Wireshark 4.0 refuses for a Lua
-- dissector that did not register itself for "btrfcomm.dlci". Load it after lightx.lua (check.py does).
local stream = Dissector.get("lightx_stream")
local table = DissectorTable.get("btrfcomm.dlci")
for dlci in string.gmatch(os.getenv("LIGHTX_RFCOMM_DLCI") or "", "%d+") do
    table:add(tonumber(dlci), stream)
end
