import Logging
import Support
import Transport
import Wearable
import WearableLink

/// The GATT operations `WearableDeviceSession` needs from one link, as `GATTPDU`s: MTU exchange, discovery of the
/// service, reads, writes with response, and notifications. Two conformances: `GATTLinkSession` (Tuneup's framing on
/// byte streams: each operation is one request) and `ATTClient` (real ATT on packet links: discovery takes several
/// requests, long values several reads).
public protocol GATTClient: Sendable {
    /// One operation and the device's answer (an error response included).
    func perform(_ operation: GATTPDU) async throws -> GATTPDU
    /// Notifications (`GATTPDU.notification`) from now on; the stream ends with the link.
    func pushes() async -> AsyncStream<GATTPDU>
    /// `.disconnected` when the link ends.
    func events() async -> AsyncStream<GATTLinkSession.Event>
    func close() async
}

extension RequestSession: GATTClient where P == GATTLinkProtocol {
    public func perform(_ operation: GATTPDU) async throws -> GATTPDU { try await request(operation) }
}

/// Which GATT client a link gets: real ATT on packet links, Tuneup's framing on byte streams.
public enum GATTClients {
    public static func client(on transport: any Transport, options: RequestOptions, clock: any Clock<Duration>,
                              logger: Logger) async -> any GATTClient {
        if transport.framing == .packets { return await ATTClient.start(transport: transport, options: options, clock: clock, logger: logger) }
        return GATTLinkSession(transport: transport, definition: GATTLinkProtocol(), options: options, clock: clock, logger: logger)
    }
}

/// ATT as a `SessionProtocol`: one PDU per packet; every response answers the bearer's one outstanding request (ATT
/// allows one at a time), so all requests share one key and the core sends them one after another; notifications,
/// indications and the server's own requests are pushes (`ATTClient` answers the requests).
public struct ATTProtocol: SessionProtocol {
    public typealias Packet = ATTPDU
    /// The bearer's one transaction slot.
    public struct Key: Hashable, Sendable {}
    public typealias Command = GATTKey
    public typealias Options = RequestOptions
    public typealias Failure = WearableSessionError

    public init() {}

    public func encode(_ request: ATTPDU, for framing: LinkFraming) -> [UInt8] { ATTCodec.encode(request) }
    public func key(of request: ATTPDU) -> Key { Key() }
    public func command(of request: ATTPDU) -> GATTKey { GATTKey(requestOpcode: request.opcode, handle: request.requestHandle) }
    public func makeDeframer(for framing: LinkFraming) -> Deframer { Deframer() }

    public func classify(_ packet: ATTPDU) -> Incoming<Key> {
        ATTPDU.isResponse(packet.opcode) ? .reply(Key()) : .push
    }

    public func error(_ failure: SessionFailure<GATTKey>) -> WearableSessionError { GATTLinkProtocol().error(failure) }

    /// Each received chunk is one ATT PDU.
    public struct Deframer: PacketDeframer {
        public struct Statistics: Sendable, Hashable {
            public var badPDUs = 0
        }

        private var packets: [[UInt8]] = []
        public private(set) var statistics = Statistics()

        public mutating func append(_ chunk: [UInt8]) { packets.append(chunk) }

        public mutating func next() -> Deframed<ATTPDU>? {
            guard !packets.isEmpty else { return nil }
            do throws(WearableError) {
                return .packet(try ATTCodec.decode(packets.removeFirst()))
            } catch {
                statistics.badPDUs += 1
                return .rejected(reason: error.message)
            }
        }
    }
}

/// A GATT client on a real ATT bearer (an L2CAP LE channel, CID 4): `GATTPDU` operations carried out in ATT PDUs.
/// Discovery is `GATTDiscovery` (primary services, characteristics, CCCDs); a read whose answer fills the MTU goes on
/// with Read Blob; the server's own requests are answered (its MTU exchange with ours, anything else "request not
/// supported"); indications are confirmed. A request that is not answered in time ends the bearer, as ATT requires
/// (no retransmission on ATT).
public actor ATTClient: GATTClient {
    private let session: RequestSession<ATTProtocol>
    private let notifications = Broadcast<GATTPDU>()
    private let ended = Broadcast<GATTLinkSession.Event>()
    private var offeredMTU: UInt16 = ATTCodec.minimumMTU
    /// The bearer's ATT MTU.
    public private(set) var mtu: UInt16 = ATTCodec.minimumMTU
    private var tasks: [Task<Void, Never>] = []

    /// A client on `transport` (an ATT bearer), listening to it before this returns.
    public static func start(transport: any Transport, options: RequestOptions, clock: any Clock<Duration>, logger: Logger) async -> ATTClient {
        let client = ATTClient(transport: transport, options: options, clock: clock, logger: logger)
        await client.listen()
        return client
    }

    private init(transport: any Transport, options: RequestOptions, clock: any Clock<Duration>, logger: Logger) {
        var timing = options
        timing.retransmissions = 0
        session = RequestSession(transport: transport, definition: ATTProtocol(), options: timing, clock: clock, logger: logger)
    }

    private func listen() async {
        let pushes = await session.pushes()
        let events = await session.events()
        tasks = [
            Task { [weak self] in
                for await pdu in pushes { await self?.handle(pdu) }
                self?.notifications.finish()
            },
            Task { [weak self] in
                for await case let .disconnected(error) in events { self?.ended.finish(last: .disconnected(error)) }
            },
        ]
    }

    private func handle(_ pdu: ATTPDU) async {
        switch pdu {
        case let .notification(h, value):
            notifications.yield(.notification(handle: h, value: value))
        case let .indication(h, value):
            notifications.yield(.notification(handle: h, value: value))
            try? await session.transport.send(ATTCodec.encode(.confirmation))
        case let .exchangeMTURequest(theirs):
            let ours = max(offeredMTU, ATTCodec.minimumMTU)
            mtu = max(ATTCodec.minimumMTU, min(theirs, ours))
            try? await session.transport.send(ATTCodec.encode(.exchangeMTUResponse(mtu: ours)))
        default:
            if ATTPDU.isRequest(pdu.opcode) {
                try? await session.transport.send(ATTCodec.encode(.errorResponse(requestOpcode: pdu.opcode, handle: pdu.requestHandle, error: .requestNotSupported)))
            }
        }
    }

    public func pushes() async -> AsyncStream<GATTPDU> { notifications.subscribe(bufferingPolicy: .bufferingNewest(256)) }

    public func events() async -> AsyncStream<GATTLinkSession.Event> { ended.subscribe() }

    public func close() async {
        await session.close()
    }

    /// One ATT transaction; a timeout ends the bearer.
    private func transact(_ pdu: ATTPDU) async throws -> ATTPDU {
        do {
            return try await session.request(pdu)
        } catch let error as WearableSessionError where error.code == .timeout {
            await session.close()
            throw error
        }
    }

    public func perform(_ operation: GATTPDU) async throws -> GATTPDU {
        switch operation {
        case let .exchangeMTURequest(ours):
            offeredMTU = ours
            switch try await transact(.exchangeMTURequest(mtu: ours)) {
            case let .exchangeMTUResponse(theirs):
                mtu = max(ATTCodec.minimumMTU, min(ours, theirs))
                return .exchangeMTUResponse(mtu: theirs)
            case let .errorResponse(_, _, e): return .errorResponse(requestOpcode: operation.opcode, handle: 0, error: e, reason: "")
            case let other: throw unexpected(other, operation)
            }
        case .discoverRequest:
            var discovery = GATTDiscovery(service: WearableService.uuid16)
            var request = discovery.start()
            while true {
                switch discovery.receive(try await transact(request)) {
                case let .send(next): request = next
                case let .done(layout): return .discoverResponse(layout)
                case let .notFound(services):
                    return .errorResponse(requestOpcode: operation.opcode, handle: 0, error: .attributeNotFound,
                                          reason: "no primary service 0xfdd2 (it has " + (services.isEmpty ? "none" : services.map(\.description).joined(separator: ", ")) + ")")
                case let .failed(reason):
                    throw WearableSessionError(.malformedReply, "service discovery: \(reason)", category: .device)
                }
            }
        case let .readRequest(h):
            var value: [UInt8] = []
            var response = try await transact(.readRequest(handle: h))
            while true {
                switch response {
                case let .readResponse(part), let .readBlobResponse(part):
                    value += part
                    // A part that fills the MTU may have more behind it (a long value).
                    guard part.count == Int(mtu) - 1, value.count < 512 else { return .readResponse(handle: h, value: value) }
                    response = try await transact(.readBlobRequest(handle: h, offset: UInt16(value.count)))
                case let .errorResponse(_, _, e) where !value.isEmpty && (e == .attributeNotLong || e == .invalidOffset):
                    return .readResponse(handle: h, value: value)
                case let .errorResponse(_, _, e):
                    return .errorResponse(requestOpcode: operation.opcode, handle: h, error: e, reason: "")
                case let other: throw unexpected(other, operation)
                }
            }
        case let .writeRequest(h, value):
            switch try await transact(.writeRequest(handle: h, value: value)) {
            case .writeResponse: return .writeResponse(handle: h)
            case let .errorResponse(_, _, e): return .errorResponse(requestOpcode: operation.opcode, handle: h, error: e, reason: "")
            case let other: throw unexpected(other, operation)
            }
        default:
            throw WearableSessionError(.notOpen, "\(operation.opcode) is not a GATT client operation", category: .usage)
        }
    }

    private func unexpected(_ pdu: ATTPDU, _ operation: GATTPDU) -> WearableSessionError {
        .malformed("the device answered the \(operation.key.map(\.description) ?? "request") with ATT opcode 0x\(String(pdu.opcode, radix: 16))")
    }
}
