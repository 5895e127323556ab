/// LightX over HID feature reports (sheet §1.7): the report layout both USB sides use, the host
/// (`USBTransport.LightXReports`) and the device (`USBGadget.ReportMailbox`). Pure: no I/O, no validation beyond
/// what the builders say.
///
/// - Report 0xF0 carries a header: 14 bytes on the wire = `[0xF0, flag, 12-byte header]`. Host → device the flag is
///   0x00; device → host it is 0x00 for "nothing ready" (the rest zero) and 0x01 when a packet's header follows.
/// - Report 0xF1 carries a buffer: 257 bytes = `[0xF1, up to 256 buffer bytes, zero padding]`.
/// - A header announces a buffer when its buffer flag is set and param1 > 0 (`announcedBuffer`); only then does
///   report 0xF1 travel, before 0xF0 host → device and after it device → host.
/// - Both are feature reports on interface 0: SET_REPORT (bmRequestType 0x21, bRequest 0x09) and GET_REPORT (0xA1,
///   0x01) with wValue `0x0300 | id` (`featureReportValue`).
public enum HIDReports {
    /// The header report id.
    public static let headerReportID: UInt8 = 0xF0
    /// The buffer report id.
    public static let bufferReportID: UInt8 = 0xF1
    /// Wire size of report 0xF0, its id included.
    public static let headerReportSize = 14
    /// Wire size of report 0xF1, its id included.
    public static let bufferReportSize = 257
    /// The largest buffer one packet may carry (report 0xF1 without its id).
    public static let maximumBuffer = 256

    /// Report 0xF0's flag byte host → device, and device → host when nothing is ready.
    public static let noPacketFlag: UInt8 = 0x00
    /// Report 0xF0's flag byte device → host when a packet's header follows.
    public static let packetFlag: UInt8 = 0x01

    /// The buffer length a header announces: param1 when the buffer flag is set, else 0.
    /// Values beyond `Int.max` are clamped (and so exceed `maximumBuffer`).
    public static func announcedBuffer(_ header: Header) -> Int {
        guard header.hasBuffer else { return 0 }
        return Int(clamping: header.param1)
    }

    /// Report 0xF0: `[0xF0, flag]` followed by the first 12 of `header` (fewer are zero-padded), 14 bytes.
    public static func headerReport<C: Collection>(_ header: C, flag: UInt8) -> [UInt8] where C.Element == UInt8 {
        padded([headerReportID, flag] + header.prefix(Header.size), to: headerReportSize)
    }

    /// The device's report 0xF0 when it has nothing for the host: `[0xF0, 0x00, 12 × 0x00]`.
    public static var nothingReady: [UInt8] { headerReport([], flag: noPacketFlag) }

    /// Report 0xF1: `[0xF1]` followed by the first 256 of `buffer`, zero-padded, 257 bytes.
    public static func bufferReport<C: Collection>(_ buffer: C) -> [UInt8] where C.Element == UInt8 {
        padded([bufferReportID] + buffer.prefix(maximumBuffer), to: bufferReportSize)
    }

    /// The wValue of a SET_REPORT or GET_REPORT of feature report `id`: the report type (0x03) in the high byte.
    public static func featureReportValue(_ id: UInt8) -> UInt16 {
        UInt16(Request.featureReportType) << 8 | UInt16(id)
    }

    /// The HID class requests the contract uses.
    public enum Request {
        /// HID GET_REPORT (class, interface, IN: bmRequestType 0xA1).
        public static let getReport: UInt8 = 0x01
        /// HID SET_REPORT (class, interface, OUT: bmRequestType 0x21).
        public static let setReport: UInt8 = 0x09
        /// HID SET_IDLE (class, interface, OUT, no data).
        public static let setIdle: UInt8 = 0x0A
        /// bmRequestType of class requests to the interface, host → device.
        public static let classInterfaceOut: UInt8 = 0x21
        /// bmRequestType of class requests to the interface, device → host.
        public static let classInterfaceIn: UInt8 = 0xA1
        /// The report type in wValue's high byte for feature reports.
        public static let featureReportType: UInt8 = 0x03
    }

    private static func padded(_ bytes: [UInt8], to count: Int) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: max(0, count - bytes.count))
    }
}
