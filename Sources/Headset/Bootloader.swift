import LightX

/// The typed API of a LightX bootloader (sheet §4.15, §6, and the Tuneup extensions) over a `LightXSession`: one
/// method per boot operation, typed results, and a pipelined form (`submit` / `reply(to:)`) for transfers that keep
/// several erases, writes or reads in flight.
///
/// Boot commands answer with a status the caller decides on (a jump answered NotReady may still happen, a verify
/// answered Fail is a mismatch, not an error), so most methods return a `BootAnswer` rather than throwing on a
/// failing status. They throw `HeadsetError` for a lost link, a timeout or a malformed reply (and
/// `CancellationError`).
public struct Bootloader: Sendable {
    /// The session the requests go through (shared with the application's `Headset` of the same link).
    public let session: LightXSession

    public init(session: LightXSession) {
        self.session = session
    }

    /// Whether the session is still usable.
    public var isOpen: Bool { get async { await session.isOpen } }

    /// Closes the session and the link.
    public func close() async { await session.close() }

    // MARK: Identification

    /// Which firmware the device runs, or `.notReady` while it is starting (BootImageType, 0x20).
    /// - Parameters: `timeout` and `retransmissions` override the session's for this request (nil: the session's).
    /// - Throws: `HeadsetError.deviceStatus` for another failing status, `.noData` for an empty reply.
    public func imageType(timeout: Duration? = nil, retransmissions: Int? = nil) async throws -> BootImageType {
        let reply = try await session.request(BootRequests.imageType(session.style), timeout: timeout, retransmissions: retransmissions)
        switch reply.status {
        case .ok:
            do {
                return try BootRequests.isBootloader(imageTypeReply: reply.buffer) ? .bootloader : .application
            } catch {
                throw HeadsetError.malformed(error, command: .bootImageType)
            }
        case .notReady:
            return .notReady
        default:
            throw HeadsetError.deviceStatus(reply.status, command: .bootImageType, buffer: reply.buffer)
        }
    }

    /// Whether the host is authenticated (BootAuthStatus, 0x22); nil when the device does not say (a failing status
    /// or a reply it cannot be read from).
    public func isAuthenticated() async throws -> Bool? {
        let reply = try await session.request(BootRequests.authStatus(session.style))
        guard reply.status == .ok else { return nil }
        return try? BootRequests.isAuthenticated(authStatusReply: reply.buffer)
    }

    /// Authenticates the host (sheet §5): challenge, response = challenge XOR 0x5D, status.
    /// Throws `.challengeLength` for a challenge shorter than 16 bytes and `.authenticationFailed` when refused.
    ///
    /// The challenge request is never retransmitted: the device draws a new challenge for every request, so after a
    /// repeated request the reply that arrives first holds a challenge the device no longer expects an answer to.
    /// A challenge that times out starts the handshake again instead (three times at most), after the session's
    /// quiet period, which keeps a late reply from being taken for the new one.
    public func authenticate() async throws {
        var attempt = 1
        let challenge: Packet
        while true {
            do {
                challenge = try await session.exchange(BootRequests.authChallenge(session.style), retransmissions: 0)
                break
            } catch let error as HeadsetError where error.code == .timeout && attempt < 3 {
                attempt += 1
            }
        }
        let response: [UInt8]
        do {
            response = try Authentication.response(to: challenge.buffer)
        } catch {
            throw HeadsetError(.challengeLength, "the device's authentication challenge has \(challenge.buffer.count) bytes, expected 16", command: .bootAuthChallenge)
        }
        do {
            _ = try await session.exchange(try Self.encode { () throws(LightXError) in try BootRequests.authResponse(response, session.style) })
        } catch let error as HeadsetError where error.category == .device {
            var refused = HeadsetError(.authenticationFailed, "the device refused the authentication response (\(error.message))", command: .bootAuthResponse)
            refused.reason = error.reason
            throw refused
        }
        let status = try await session.exchange(BootRequests.authStatus(session.style))
        guard (try? BootRequests.isAuthenticated(authStatusReply: status.buffer)) == true else {
            throw HeadsetError(.authenticationFailed, "the device reports the host as not authenticated", command: .bootAuthStatus)
        }
    }

    /// What a Tuneup-aware bootloader supports (0x3B), including its secure-boot policy; nil for a device without
    /// the extension (a failing status or a reply it cannot decode).
    public func capabilities() async throws -> BootCapabilities? {
        let reply = try await session.request(BootRequests.capabilities(session.style))
        guard reply.status == .ok else { return nil }
        return try? BootCapabilities(decoding: reply.buffer)
    }

    /// The contents of the version file at `address` ("1.4.2"; 0 is the bootloader's own), or nil when the device
    /// has none (BootReadVersionFile, 0x3A).
    public func versionFile(at address: UInt32) async throws -> String? {
        let reply = try await session.request(try Self.encode { () throws(LightXError) in
            try BootRequests.readVersionFile(address: address, session.style)
        })
        guard reply.status == .ok else { return nil }
        let text = String(decoding: reply.buffer.prefix { $0 != 0 }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }

    /// The version file of `region`.
    public func versionFile(of region: FlashRegion) async throws -> String? {
        try await versionFile(at: region.versionFileAddress)
    }

    // MARK: Mode changes

    /// Asks the application to shut down (AppShutdown, 0x7F): a courtesy before the jump; some devices answer
    /// NotSupported.
    @discardableResult
    public func shutDownApplication() async throws -> BootAnswer {
        BootAnswer(try await session.request(BootRequests.appShutdown(session.style)))
    }

    /// Jumps to the bootloader (0x25), sent once: the device may reset before it answers, so a timeout is not a failure
    /// of the jump (the caller asks `imageType` afterwards).
    public func jumpToBootloader() async throws -> BootAnswer {
        BootAnswer(try await session.request(BootRequests.jumpToBootloader(session.style), retransmissions: 0))
    }

    /// Jumps to the committed application (0x2A), sent once (see `jumpToBootloader`).
    public func jumpToApplication() async throws -> BootAnswer {
        BootAnswer(try await session.request(BootRequests.jumpToApplication(session.style), retransmissions: 0))
    }

    // MARK: Image checks

    /// Whether the first `sectors` sectors of `region` have CRC-32/JAMCRC `crc` (BootVerifyCRC, 0x2C): Ok is a match,
    /// Fail a mismatch; any other answer is returned as it is.
    /// - Throws: `HeadsetError(.invalidArgument)` when the request cannot be encoded.
    public func verifyCRC(_ region: FlashRegion, sectors: Int, crc: UInt32, timeout: Duration? = nil) async throws -> BootAnswer {
        let request = try Self.encode { () throws(LightXError) in
            guard let count = UInt32(exactly: sectors) else {
                throw LightXError(.valueOutOfRange, "a sector count of \(sectors) does not fit the request")
            }
            return try BootRequests.verifyCRC(region, sectors: count, crc: crc, session.style)
        }
        return BootAnswer(try await session.request(request, timeout: timeout))
    }

    /// Commits the first `sectors` sectors of the application region (BootCommitImage, 0x29); the device commits only
    /// right after a matching verification.
    public func commit(sectors: Int, timeout: Duration? = nil) async throws -> BootAnswer {
        let request = try Self.encode { () throws(LightXError) in
            guard let count = UInt32(exactly: sectors) else {
                throw LightXError(.valueOutOfRange, "a sector count of \(sectors) does not fit the request")
            }
            return try BootRequests.commit(sectors: count, session.style)
        }
        return BootAnswer(try await session.request(request, timeout: timeout))
    }

    // MARK: Pipelined flash operations

    /// Puts `operation` on the link now and returns at once with a ticket for its reply (see
    /// `LightXSession.submit`: calls go out in call order; there is no retransmission).
    /// - Throws: `HeadsetError(.invalidArgument)` for an operation that cannot be encoded, the session's errors.
    public func submit(_ operation: BootOperation, timeout: Duration? = nil) async throws -> BootTicket {
        let request = try Self.encode { () throws(LightXError) in try operation.request(session.style) }
        let ticket = try await session.submit(request, timeout: timeout)
        return BootTicket(operation: operation, ticket: ticket)
    }

    /// The reply to a submitted operation, whatever its status; nil when none came within the ticket's timeout
    /// (lost: the caller decides what to send again).
    /// - Throws: `HeadsetError` when the session ends (`.disconnected`, ...), `CancellationError`.
    public func reply(to ticket: BootTicket) async throws -> BootReply? {
        do {
            let packet = try await session.reply(to: ticket.ticket)
            return BootReply(answer: BootAnswer(packet), data: packet.buffer, latency: ContinuousClock.now - ticket.sentAt)
        } catch let error as HeadsetError where error.code == .timeout {
            return nil
        }
    }

    private static func encode(_ build: () throws(LightXError) -> Packet) throws -> Packet {
        try encodeRequest(build)
    }
}

extension Headset {
    /// The bootloader API over this headset's session.
    public var bootloader: Bootloader { Bootloader(session: session) }
}

/// What BootImageType says runs.
public enum BootImageType: Sendable, Hashable {
    case bootloader, application
    /// The device answered NotReady (it is starting up after a jump or a power cycle).
    case notReady
}

/// A boot command's answer: its status, and why the device refused it when it said (Tuneup extension).
public struct BootAnswer: Sendable, Hashable {
    public var status: Status
    public var reason: BootRefusalReason?

    public init(status: Status, reason: BootRefusalReason? = nil) {
        self.status = status
        self.reason = reason
    }

    init(_ reply: Packet) {
        self.init(status: reply.status, reason: BootRefusalReason(reply: reply))
    }

    public var isOK: Bool { status == .ok }
    /// Another host's update owns the device.
    public var isBusy: Bool { reason == .busy }
}

/// A flash operation of a transfer: erase a sector, program a block, read a block.
public enum BootOperation: Sendable, Hashable {
    /// Erase sector `sector` of `region`; `addressed` (only for devices whose capabilities say so) gives every erase
    /// a distinct match key, so several can be in flight.
    case erase(FlashRegion, sector: Int, addressed: Bool)
    /// Program `data` (at most 256 bytes) at `offset` within `region`.
    case write(FlashRegion, offset: Int, data: [UInt8])
    /// Read `count` (1...256) bytes at `offset` within `region`.
    case read(FlashRegion, offset: Int, count: Int)

    func request(_ style: RequestStyle) throws(LightXError) -> Packet {
        switch self {
        case let .erase(region, sector, addressed):
            return try BootRequests.eraseSector(region, index: try Self.u32(sector, "sector index"), addressed: addressed, style)
        case let .write(region, offset, data):
            return try BootRequests.writeBlock(region, offset: try Self.u32(offset, "offset"), data: data, style)
        case let .read(region, offset, count):
            return try BootRequests.readBlock(region, offset: try Self.u32(offset, "offset"), count: count, style)
        }
    }

    private static func u32(_ value: Int, _ what: String) throws(LightXError) -> UInt32 {
        guard let v = UInt32(exactly: value) else { throw LightXError(.valueOutOfRange, "flash \(what) \(value) is out of range") }
        return v
    }
}

/// A submitted `BootOperation` whose reply can be awaited with `Bootloader.reply(to:)`.
public struct BootTicket: Sendable, Hashable {
    public let operation: BootOperation
    let ticket: LightXSession.Ticket
    /// When the request was handed to the link.
    public var sentAt: ContinuousClock.Instant { ticket.sentAt }
}

/// The reply to a pipelined operation.
public struct BootReply: Sendable {
    public var answer: BootAnswer
    /// What a read returned (the reply's buffer).
    public var data: ArraySlice<UInt8>
    /// From handing the request to the link to seeing its reply.
    public var latency: Duration
}
