import Speaker
import Synchronization

/// Datagrams recorded in a capture (HKWirelessHD audio, clock and discovery, docs/capture.md §2): one interface per kind and peer
/// (`udp:HOST:PORT`), made when its first datagram goes. `record` does not block (the writer queues the block).
public final class DatagramCapture: Sendable {
    public let writer: CaptureWriter
    public let role: CaptureRole
    private let interfaces = Mutex<[String: Int]>([:])

    public init(writer: CaptureWriter, role: CaptureRole) {
        self.writer = writer
        self.role = role
    }

    /// Records one datagram of `linkType` exchanged with `peer`.
    public func record(_ linkType: CaptureLinkType, peer: String, direction: CaptureDirection, _ bytes: [UInt8]) {
        let key = "\(linkType.rawValue) \(peer)"
        let id: Int
        if let known = interfaces.withLock({ $0[key] }) {
            id = known
        } else {
            // Described outside the lock (the writer has locks of its own); a racing first datagram may leave one
            // interface without packets, never a packet without its interface.
            let made = writer.addInterface(linkType: linkType, name: peer, role: role)
            id = interfaces.withLock { d in
                if let other = d[key] { return other }
                d[key] = made
                return made
            }
        }
        writer.record(interface: id, direction: direction, bytes)
    }
}

extension DatagramCapture {
    /// Records a datagram of the speaker's side (`tuneup sim speaker`, `tuneup speaker receive`): give it to
    /// `SimulatedSpeaker`, `SpeakerSimulation` or `SpeakerReceiver` as their datagram tap.
    public var speakerSide: SpeakerSideDatagramTap {
        { [self] d in
            let linkType: CaptureLinkType = switch d.kind {
            case .audio: .hkwhdAudio
            case .clock: .hkwhdClock
            case .discovery: .hkwhdDiscovery
            }
            record(linkType, peer: d.peer, direction: d.outbound ? .outbound : .inbound, d.bytes)
        }
    }
}

extension CaptureSettings {
    /// The datagram recorder of this capture's file.
    public func datagrams() async throws -> DatagramCapture {
        DatagramCapture(writer: try await writer(), role: role)
    }
}
