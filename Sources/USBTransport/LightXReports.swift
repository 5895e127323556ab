import LightX
import Transport

/// The host side of LightX over HID feature reports (the layout is `HIDReports`, sheet §1.7):
///
/// - Sending one raw packet (header + buffer, as `RawPacketCodec.encode` makes it): SET_REPORT 0xF1 first, only when
///   the header's buffer flag is set and param1 > 0; then SET_REPORT 0xF0.
/// - Receiving: GET_REPORT 0xF0; when its header announces a buffer (flag set, param1 > 0), GET_REPORT 0xF1 and keep
///   the first param1 bytes.
///
/// Every function here is pure and total: malformed input is a `TransportError(.io)` naming what is wrong.
public enum LightXReports {
    /// One feature report as it travels: `bytes[0]` is the report id.
    public struct Report: Sendable, Hashable {
        /// The report id (0xF0 or 0xF1).
        public var id: UInt8
        /// The whole report, id byte first.
        public var bytes: [UInt8]
    }

    /// The SET_REPORT sequence for one raw LightX packet: `[0xF1 report]` (when there is a buffer) then the 0xF0
    /// report.
    ///
    /// - Throws: `TransportError(.io)` when the packet is shorter than a header, announces more than 256 buffer
    ///   bytes, or carries a different number of buffer bytes than its header announces.
    public static func setReports(for packet: [UInt8]) throws(TransportError) -> [Report] {
        guard packet.count >= Header.size else {
            throw TransportError(.io, "cannot send a \(packet.count)-byte packet over USB: a LightX packet needs its 12-byte header")
        }
        let header: Header
        do { header = try Header(decoding: packet) } catch {
            throw TransportError(.io, "cannot send the packet over USB: \(error)")
        }
        let extra = packet.count - Header.size
        let announced = HIDReports.announcedBuffer(header)
        guard announced <= HIDReports.maximumBuffer else {
            throw TransportError(.io, "cannot send a packet with a \(header.param1)-byte buffer over USB: report 0xF1 holds at most 256 bytes")
        }
        guard extra == announced else {
            let why = header.hasBuffer ? "its header announces \(announced) (param1)" : "its buffer flag is clear"
            throw TransportError(.io, "cannot send the packet over USB: it carries \(extra) buffer bytes but \(why)")
        }
        var reports: [Report] = []
        if announced > 0 {
            reports.append(Report(id: HIDReports.bufferReportID, bytes: HIDReports.bufferReport(packet.dropFirst(Header.size))))
        }
        reports.append(Report(id: HIDReports.headerReportID, bytes: HIDReports.headerReport(packet, flag: HIDReports.noPacketFlag)))
        return reports
    }

    /// Decodes a GET_REPORT 0xF0 answer: nil for "nothing ready", else the announced header.
    ///
    /// - Throws: `TransportError(.io)` for a short report ("short report 0xF0: got 5 of 14 bytes"), a wrong report id,
    ///   or a header announcing more than 256 buffer bytes.
    public static func parseHeaderReport(_ report: [UInt8]) throws(TransportError) -> Header? {
        guard report.count >= HIDReports.headerReportSize else {
            throw TransportError(.io, "short report 0xF0: got \(report.count) of \(HIDReports.headerReportSize) bytes")
        }
        guard report[0] == HIDReports.headerReportID else {
            throw TransportError(.io, "report 0xF0 came back with report id 0x\(usbHex2(report[0]))")
        }
        guard report[1] != HIDReports.noPacketFlag else { return nil }
        let header: Header
        do { header = try Header(decoding: report[2..<HIDReports.headerReportSize]) } catch {
            throw TransportError(.io, "report 0xF0: \(error)")
        }
        guard HIDReports.announcedBuffer(header) <= HIDReports.maximumBuffer else {
            throw TransportError(.io, "report 0xF0 announces a \(header.param1)-byte buffer; report 0xF1 holds at most 256")
        }
        return header
    }

    /// Assembles the raw packet from an announced header and the GET_REPORT 0xF1 answer (ignored, and may be empty,
    /// when the header announces no buffer).
    ///
    /// - Throws: `TransportError(.io)` when the report is shorter than the id byte plus param1 ("short report 0xF1:
    ///   got 101 bytes, the header announced 200 buffer bytes"), or has a wrong report id.
    public static func packet(header: Header, bufferReport: [UInt8]) throws(TransportError) -> [UInt8] {
        let announced = HIDReports.announcedBuffer(header)
        var packet = header.encoded
        guard announced > 0 else { return packet }
        guard bufferReport.count >= 1 + announced else {
            throw TransportError(.io, "short report 0xF1: got \(bufferReport.count) bytes, the header announced \(announced) buffer bytes (\(1 + announced) with the report id)")
        }
        guard bufferReport[0] == HIDReports.bufferReportID else {
            throw TransportError(.io, "report 0xF1 came back with report id 0x\(usbHex2(bufferReport[0]))")
        }
        packet += bufferReport[1...announced]
        return packet
    }

    /// Whether a received packet answers a request (so one fewer is outstanding): not a push (command < 0xC0) and
    /// not an interim Pending status (the final reply follows).
    public static func isFinalReply(_ header: Header) -> Bool {
        !header.command.isPush && header.status != .pending
    }
}
