import LightX
import Transport

/// Which protocol family a link carries: with the link's framing, it decides the interface's link type.
public enum CaptureFamily: String, Sendable, Hashable {
    /// LightX headsets: SPP byte streams (147) or USB HID reports (148).
    case lightX
    /// HKWirelessHD speakers' control stream (149).
    case speaker
    /// Bose Wearables: Tuneup's GATT framing on byte streams (152) or ATT PDUs (153).
    case wearable

    /// The link type of a link of this family with `framing`.
    public func linkType(_ framing: LinkFraming) -> CaptureLinkType {
        switch (self, framing) {
        case (.lightX, .byteStream): .lightXStream
        case (.lightX, .packets): .lightXHID
        case (.speaker, _): .hkwhdControl
        case (.wearable, .byteStream): .wearableStream
        case (.wearable, .packets): .wearableATT
        }
    }
}

/// What `--capture` gives the code that opens links: the file, the family of the links and the side writing.
public struct LinkCapture: Sendable {
    public let writer: CaptureWriter
    public var family: CaptureFamily
    public var role: CaptureRole

    public init(writer: CaptureWriter, family: CaptureFamily, role: CaptureRole = .host) {
        self.writer = writer
        self.family = family
        self.role = role
    }

    /// This capture for links of another family (a command that opens several kinds).
    public func family(_ family: CaptureFamily) -> LinkCapture {
        LinkCapture(writer: writer, family: family, role: role)
    }

    /// `transport` wrapped so that every frame it carries is recorded on a new interface named `name` (default: the
    /// transport's `peerDescription`).
    public func wrap(_ transport: any Transport, name: String? = nil) -> any Transport {
        CapturingTransport(wrapping: transport, writer: writer, linkType: family.linkType(transport.framing),
                           name: name ?? transport.peerDescription, role: role)
    }
}

/// A `Transport` that records what it carries in a capture, one interface per link (docs/capture.md): sends are
/// recorded as they are handed over (outbound, before the bytes leave, so that a reply is never recorded before its
/// request), receives as they return (inbound). Recording does not block: blocks are written off the pool by the
/// `CaptureWriter`. Closing the link waits until its blocks are written.
public final class CapturingTransport: Transport {
    public let base: any Transport
    public let writer: CaptureWriter
    public let interface: Int
    public let linkType: CaptureLinkType
    public let role: CaptureRole

    public init(wrapping base: any Transport, writer: CaptureWriter, linkType: CaptureLinkType, name: String, role: CaptureRole) {
        self.base = base
        self.writer = writer
        self.linkType = linkType
        self.role = role
        self.interface = writer.addInterface(linkType: linkType, name: name, role: role)
    }

    public var peerDescription: String { base.peerDescription }
    public var framing: LinkFraming { base.framing }

    public nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        record(.outbound, bytes)
        try await base.send(bytes)
    }

    public nonisolated(nonsending) func receive() async throws -> [UInt8] {
        let bytes = try await base.receive()
        record(.inbound, bytes)
        return bytes
    }

    public nonisolated(nonsending) func close() async {
        await base.close()
        await writer.flush()
    }

    private func record(_ direction: CaptureDirection, _ bytes: [UInt8]) {
        guard linkType == .lightXHID else {
            writer.record(interface: interface, direction: direction, bytes)
            return
        }
        for report in Self.reports(packet: bytes, fromHost: (direction == .outbound) == (role == .host)) {
            writer.record(interface: interface, direction: direction, report)
        }
    }

    /// The HID feature reports that carry one LightX packet (header + buffer) on USB, in the order they travel
    /// (docs/capture.md §2, link type 148): the host sends 0xF1 (when a buffer is announced) then 0xF0; the device
    /// answers 0xF0 then 0xF1 (USB replies echo the request's module ids, so the side is told by the direction and
    /// the role, not by the header).
    public static func reports(packet: [UInt8], fromHost: Bool) -> [[UInt8]] {
        guard packet.count >= Header.size, let header = try? Header(decoding: packet) else { return [packet] }
        let buffer = packet.dropFirst(Header.size)
        let announced = HIDReports.announcedBuffer(header) > 0
        if fromHost {
            let head = HIDReports.headerReport(packet.prefix(Header.size), flag: HIDReports.noPacketFlag)
            return announced ? [HIDReports.bufferReport(buffer), head] : [head]
        }
        let head = HIDReports.headerReport(packet.prefix(Header.size), flag: HIDReports.packetFlag)
        return announced ? [head, HIDReports.bufferReport(buffer)] : [head]
    }
}
