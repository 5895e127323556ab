import LightX
import Synchronization
import Transport
@_exported import TestSupport

/// A scripted device at the far end of an in-memory link: it decodes every request and answers with whatever
/// `respond` returns (raw bytes, so tests can also send garbage, duplicates or nothing).
final class FakeDevice: Sendable {
    let link: any Transport
    private let log = Mutex<[Packet]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// All requests received so far.
    var requests: [Packet] { log.withLock { $0 } }

    private init(link: any Transport) { self.link = link }

    /// Starts a fake device; returns it and the host's end of the link.
    static func start(
        framing: LinkFraming = .byteStream,
        respond: @escaping @Sendable (_ request: Packet, _ index: Int) async -> [[UInt8]]
    ) -> (FakeDevice, any Transport) {
        let (host, device) = InMemoryTransport.pair(framing: framing)
        let fake = FakeDevice(link: device)
        let t = Task {
            var decoder = SPPStreamDecoder()
            while let chunk = try? await device.receive() {
                var packets: [Packet] = []
                if framing == .packets {
                    if let p = try? RawPacketCodec.decode(chunk) { packets.append(p) }
                } else {
                    decoder.append(chunk)
                    packets = decoder.decodeAll()
                }
                for p in packets {
                    let index = fake.log.withLock { log -> Int in log.append(p); return log.count - 1 }
                    for bytes in await respond(p, index) where !bytes.isEmpty {
                        try? await device.send(bytes)
                    }
                }
            }
        }
        fake.task.withLock { $0 = t }
        return (fake, host)
    }

    /// Sends raw bytes to the host unprompted.
    func send(_ bytes: [UInt8]) async throws { try await link.send(bytes) }

    func stop() async {
        task.withLock { $0?.cancel() }
        await link.close()
    }
}

/// SPP bytes of the reply to `request`.
func reply(_ request: Packet, _ status: Status = .ok, _ buffer: [UInt8] = []) -> [UInt8] {
    SPPFraming.encode(try! Packet.reply(to: request, status: status, buffer: buffer))
}
