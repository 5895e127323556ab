import LightX
import Synchronization
import Transport

/// A recorded headset session as the requests a host made and what the device answered to each (issue 32 §4,
/// fwupd's emulation model): built from a capture's LightX byte-stream interfaces (either side's), one link after
/// another (the application's, the bootloader's after the re-enumeration, the application's again).
public struct EmulationScript: Sendable {
    public struct Exchange: Sendable {
        /// Which recorded link (0, 1, ...) the exchange was on.
        public var link: Int
        /// The capture's packet number of the request (for messages).
        public var packet: Int
        public var request: Packet
        /// The reply, then any pushes the device sent after it.
        public var replies: [Packet]
    }

    /// A recorded link: the capture's interface it was on.
    public struct Link: Sendable, Hashable {
        /// `if_name`: the address (`tcp:…`, `usb:1209:0002`, `hidraw:/dev/hidraw1`, …).
        public var name: String
        /// 147 (SPP byte stream) or 148 (USB HID feature reports).
        public var linkType: CaptureLinkType
        /// Whether the recorded device ran its bootloader on this link (a USB device presents the bootloader's
        /// product id then): its BootImageType replies said so (byte 0 = 0), or, when it was not asked, the link
        /// before it ended with a jump to the bootloader (or was already in it, and did not end with a jump back).
        public var runsBootloader = false
    }

    public var exchanges: [Exchange]
    /// The recorded links, in order (`Exchange.link` indexes them).
    public var links: [Link]

    /// The script of `contents`: its LightX interfaces, SPP byte streams (147) and USB HID feature reports (148; a
    /// request is the 0xF1 and 0xF0 reports the host set, a reply the 0xF0 and 0xF1 it got, docs/capture.md §2).
    /// Throws `CaptureError(.malformed)` when it holds no LightX request.
    public init(_ contents: CaptureContents) throws(CaptureError) {
        var exchanges: [Exchange] = []
        var decoders: [Int: SPPStreamDecoder] = [:]
        var reports: [Int: HIDReassembly] = [:]
        var links: [Int: Int] = [:]  // interface → link number, in order of first request
        var recorded: [Link] = []
        for packet in contents.packets {
            let interface = contents.interfaces[packet.interface]
            guard let linkType = interface.knownLinkType, linkType == .lightXStream || linkType == .lightXHID,
                  let direction = packet.direction else { continue }
            let fromHost = (direction == .outbound) == (interface.role == .host)
            let key = packet.interface * 2 + (fromHost ? 0 : 1)
            let frames: [Packet]
            if linkType == .lightXStream {
                var decoder = decoders[key] ?? SPPStreamDecoder()
                decoder.append(packet.data)
                frames = decoder.decodeAll()
                decoders[key] = decoder
            } else {
                var reassembly = reports[key] ?? HIDReassembly()
                frames = reassembly.append(packet.data, fromHost: fromHost).map { [$0] } ?? []
                reports[key] = reassembly
            }
            for frame in frames {
                if fromHost {
                    let link = links[packet.interface] ?? {
                        let n = links.count
                        links[packet.interface] = n
                        recorded.append(Link(name: interface.name, linkType: linkType))
                        return n
                    }()
                    exchanges.append(Exchange(link: link, packet: packet.number, request: frame, replies: []))
                } else if let link = links[packet.interface] {
                    let onLink = exchanges.indices.filter { exchanges[$0].link == link }
                    if !frame.isPush, let i = onLink.first(where: { exchanges[$0].replies.isEmpty && Self.answers(frame, exchanges[$0].request) }) {
                        exchanges[i].replies.append(frame)
                    } else if let i = onLink.last(where: { !exchanges[$0].replies.isEmpty }) ?? onLink.last {
                        exchanges[i].replies.append(frame)
                    }
                }
            }
        }
        guard !exchanges.isEmpty else {
            throw CaptureError(.malformed, "the capture holds no LightX request (link types 147 and 148): nothing to emulate")
        }
        self.exchanges = exchanges
        self.links = recorded
        for k in recorded.indices {
            self.links[k].runsBootloader = Self.runsBootloader(link: k, exchanges, previous: k > 0 ? self.links[k - 1].runsBootloader : false)
        }
    }

    /// `Link.runsBootloader` of link `k`.
    static func runsBootloader(link k: Int, _ exchanges: [Exchange], previous: Bool) -> Bool {
        let on = exchanges.filter { $0.link == k }
        for exchange in on where exchange.request.command == .bootImageType {
            if let reply = exchange.replies.first(where: { answers($0, exchange.request) }), reply.header.status == .ok,
               let image = reply.buffer.first {
                return image == 0
            }
        }
        guard k > 0, let last = exchanges.last(where: { $0.link == k - 1 })?.request.command else { return false }
        if last == .bootJumpToBootloader { return true }
        if last == .bootJumpToApplication { return false }
        return previous
    }

    /// One direction of a USB HID interface: the reports of one LightX packet put back together.
    struct HIDReassembly {
        var buffer: [UInt8]?
        /// A device's header report (its 12 header bytes) waiting for the buffer it announced.
        var header: (bytes: [UInt8], announced: Int)?

        /// The packet `report` completes, if any (a device's "nothing ready" answers are not packets).
        mutating func append(_ report: [UInt8], fromHost: Bool) -> Packet? {
            guard let id = report.first else { return nil }
            switch id {
            case HIDReports.bufferReportID:
                let data = Array(report.dropFirst())
                if !fromHost, let waiting = header {
                    header = nil
                    return try? RawPacketCodec.decode(waiting.bytes + data.prefix(waiting.announced))
                }
                buffer = data
                return nil
            case HIDReports.headerReportID:
                guard report.count >= 2 + Header.size, let decoded = try? Header(decoding: report.dropFirst(2)) else { return nil }
                let bytes = Array(report[2..<(2 + Header.size)])
                let announced = HIDReports.announcedBuffer(decoded)
                if fromHost {
                    defer { buffer = nil }
                    return try? RawPacketCodec.decode(bytes + (buffer ?? []).prefix(announced))
                }
                guard report[1] == HIDReports.packetFlag else { return nil }
                if announced > 0 {
                    header = (bytes, announced)
                    return nil
                }
                return try? RawPacketCodec.decode(bytes)
            default:
                return nil
            }
        }
    }

    /// Whether `reply` answers `request` (LightX matches by opcode and param0, docs/protocol.md §3.2).
    static func answers(_ reply: Packet, _ request: Packet) -> Bool {
        reply.header.opcode == request.header.opcode && reply.header.param0 == request.header.param0
    }

    /// The script of the capture at `path`.
    public static func load(path: String) async throws -> EmulationScript {
        try EmulationScript(try await CaptureFile.read(path: path))
    }
}

/// The emulated device's rules, pure (events in, actions out): each request must match the next recorded one (or
/// repeat one matched on this link already: a poll or a retransmission, answered again as then, the latest first); the
/// replies recorded for it are sent; a recorded link that ends is closed after its last reply (the re-enumeration),
/// and the host's next link carries the next one. Recorded repeats of a request answered on this link already that the
/// host does not make this time are passed over: polls while the device got ready, requests resent after a timeout,
/// sectors redone (a recording of a run that lost requests replays against one that does not). The first request that
/// matches nothing ends the emulation with one line and a hex diff.
///
/// Fields that legitimately differ from run to run are matched loosely, per command (`loose`, by default
/// `hostChosen`). LightX headers carry no sequence number or timestamp, and nonces (the authentication challenge) come
/// from the device, whose replies are replayed as recorded, so every other byte of a request is compared.
public struct EmulationMachine: Sendable {
    public enum Event: Sendable, Equatable {
        case linkOpened
        case request(Packet)
    }

    public enum Action: Sendable, Equatable {
        /// Send these packets, in order.
        case send([Packet])
        /// End this link (the recorded one ended here).
        case closeLink
        /// Every recorded request was answered.
        case finished
        /// A request matched nothing: the line and the hex diff (request against recording).
        case diverged(String)
    }

    /// What may differ in a command's requests.
    public struct Loose: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The data buffer.
        public static let buffer = Loose(rawValue: 1)
        /// The 24-bit address.
        public static let address = Loose(rawValue: 2)
    }

    /// The LightX requests that carry a value the host chooses anew on each run (docs/capture.md §6): the identity a
    /// station issues to a unit from its counter and the date (`IdentityIssuer`). Everything else a Tuneup host
    /// sends follows from its arguments, the image and the device's replies (which are replayed): the request window
    /// only decides how many requests are in flight (they go in order, and no request carries it), reads carry the
    /// fixed 256-byte zero buffer or the count the user asked for, erase addresses follow the device's
    /// capabilities, write offsets the image, and the authentication response the device's challenge and the key.
    public static let hostChosen: [UInt8: Loose] = [
        Command.configSerialNumber.rawValue: .buffer,  // the serial issued: the station's counter and the date
        Command.configBTDisplayName.rawValue: .buffer,  // the Bluetooth name issued: may hold the serial, the date
        Command.diagBDAddr.rawValue: .buffer,  // the address issued from the recipe's block, by counter
    ]

    /// Per command byte, what is matched loosely.
    public var loose: [UInt8: Loose] = EmulationMachine.hostChosen

    public let script: EmulationScript
    public private(set) var cursor = 0
    private var currentLink: Int?
    /// The exchanges matched on this link, in order.
    private var answered: [EmulationScript.Exchange] = []

    public init(_ script: EmulationScript) {
        self.script = script
    }

    /// Whether every recorded request has been answered.
    public var isFinished: Bool { cursor >= script.exchanges.count }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .linkOpened:
            currentLink = isFinished ? nil : script.exchanges[cursor].link
            answered = []
            return []
        case let .request(packet):
            // Recorded repeats of requests answered on this link (polls, resends, sectors redone) that the host does
            // not make this time are passed over.
            var at = cursor
            while at < script.exchanges.count, script.exchanges[at].link == currentLink, !matches(packet, script.exchanges[at].request),
                  answered.contains(where: { matches(script.exchanges[at].request, $0.request) }) {
                at += 1
            }
            if at < script.exchanges.count, script.exchanges[at].link == currentLink, matches(packet, script.exchanges[at].request) {
                var exchange = script.exchanges[at]
                exchange.replies = exchange.replies.map { answer($0, recorded: exchange.request, live: packet) }
                cursor = at + 1
                answered.append(exchange)
                var actions: [Action] = exchange.replies.isEmpty ? [] : [.send(exchange.replies)]
                if isFinished {
                    actions.append(.finished)
                } else if script.exchanges[cursor].link != exchange.link {
                    actions.append(.closeLink)
                }
                return actions
            }
            if let earlier = answered.last(where: { matches(packet, $0.request) }) {
                return earlier.replies.isEmpty ? [] : [.send(earlier.replies)]
            }
            return [.diverged(divergence(packet))]
        }
    }

    /// `reply` as the answer to `live`, a request that matched `recorded` loosely: a reply carries its request's
    /// param0 (the host matches by opcode and param0), so a loose address is answered with the host's own.
    func answer(_ reply: Packet, recorded: Packet, live: Packet) -> Packet {
        guard Self.answers(reply, recorded), reply.header.param0 != live.header.param0 else { return reply }
        var adapted = reply
        adapted.header.param0 = live.header.param0
        return adapted
    }

    static func answers(_ reply: Packet, _ request: Packet) -> Bool { EmulationScript.answers(reply, request) }

    func matches(_ a: Packet, _ b: Packet) -> Bool {
        let rule = loose[b.command.rawValue] ?? []
        var ha = a.header, hb = b.header
        if rule.contains(.address) { ha.address = 0; hb.address = 0 }
        if rule.contains(.buffer) { ha.param1 = 0; hb.param1 = 0 }
        return ha == hb && (rule.contains(.buffer) || a.buffer.elementsEqual(b.buffer))
    }

    /// The one line and the hex diff of `packet` against the request expected next.
    func divergence(_ packet: Packet) -> String {
        guard !isFinished else {
            return "emulation: request \(packet.header) after the last recorded one"
        }
        let expected = script.exchanges[cursor]
        let got = Array(SPPFraming.encode(packet)), want = Array(SPPFraming.encode(expected.request))
        let first = (0..<min(got.count, want.count)).first { got[$0] != want[$0] } ?? min(got.count, want.count)
        let from = max(0, first - 8) & ~7
        func row(_ bytes: [UInt8]) -> String { hexString(bytes[min(from, bytes.count)..<min(from + 32, bytes.count)]) }
        return "emulation diverged at request \(cursor + 1) of \(script.exchanges.count) (recorded as packet \(expected.packet)): "
            + "got \(packet.header), expected \(expected.request.header); first difference at frame byte \(first)\n"
            + "  request   @\(from): \(row(got))\n"
            + "  recording @\(from): \(row(want))"
    }
}

/// Serves an `EmulationMachine` on links (the thin shell of `tuneup sim headset --emulate`).
public final class HeadsetEmulator: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// Every recorded request was answered.
        case completed
        /// The line and hex diff of the first request that matched nothing.
        case diverged(String)
    }

    private let machine: Mutex<EmulationMachine>
    private let done = Mutex<(outcome: Outcome?, waiters: [CheckedContinuation<Outcome, Never>])>((nil, []))

    public init(_ script: EmulationScript) {
        machine = Mutex(EmulationMachine(script))
    }

    /// Waits until the emulation completed or diverged.
    public func outcome() async -> Outcome {
        await withCheckedContinuation { c in
            let now = done.withLock { d -> Outcome? in
                if let o = d.outcome { return o }
                d.waiters.append(c)
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    /// Accepts links from `listener` one after another (the host's reconnections) until the emulation ends.
    /// `linkEnded` runs when a recorded link has ended (its replies sent; the link is closed after it), with the
    /// recorded link that comes next, or nil when it was the last (the emulation is complete once it returns): a USB
    /// gadget re-enumerates there as that link's device (`runsBootloader`), or at the end lets the host fetch the last
    /// replies; a TCP listener needs nothing.
    public func run(_ listener: any TransportListener,
                    linkEnded: @escaping @Sendable (EmulationScript.Link?) async -> Void = { _ in }) async -> Outcome {
        let accepting = Task {
            while !Task.isCancelled {
                guard let link = try? await listener.accept() else { return }
                await serve(link, linkEnded: linkEnded)
            }
        }
        let result = await outcome()
        listener.close()
        accepting.cancel()
        return result
    }

    /// Serves one link until it ends, the recorded link ends, or the emulation does: SPP frames on a byte stream, one
    /// raw LightX packet per message on a `.packets` link (a USB gadget's). `linkEnded`: as for `run`.
    public func serve(_ link: any Transport, linkEnded: @Sendable (EmulationScript.Link?) async -> Void = { _ in }) async {
        _ = machine.withLock { $0.handle(.linkOpened) }
        var decoder = SPPStreamDecoder()
        let packets = link.framing == .packets
        defer { Task { await link.close() } }
        while done.withLock({ $0.outcome == nil }) {
            guard let chunk = try? await link.receive() else { return }
            let requests: [Packet]
            if packets {
                requests = (try? RawPacketCodec.decode(chunk)).map { [$0] } ?? []
            } else {
                decoder.append(chunk)
                requests = decoder.decodeAll()
            }
            for request in requests {
                let actions = machine.withLock { $0.handle(.request(request)) }
                for action in actions {
                    switch action {
                    case let .send(replies) where packets:
                        for p in replies { try? await link.send(RawPacketCodec.encode(p)) }
                    case let .send(replies):
                        var bytes: [UInt8] = []
                        for p in replies { SPPFraming.encode(p, into: &bytes) }
                        try? await link.send(bytes)
                    case .closeLink:
                        // The hook first: a USB gadget re-enumerates once the host has fetched the replies queued on
                        // the link (the reply to the jump), which ends the link.
                        let next = machine.withLock { m in m.isFinished ? nil : m.script.links[m.script.exchanges[m.cursor].link] }
                        if let next { await linkEnded(next) }
                        await link.close()
                        return
                    case .finished:
                        await linkEnded(nil)
                        finish(.completed)
                    case let .diverged(text):
                        finish(.diverged(text))
                        await link.close()
                        return
                    }
                }
            }
        }
    }

    private func finish(_ outcome: Outcome) {
        let waiters = done.withLock { d -> [CheckedContinuation<Outcome, Never>] in
            guard d.outcome == nil else { return [] }
            d.outcome = outcome
            defer { d.waiters = [] }
            return d.waiters
        }
        for w in waiters { w.resume(returning: outcome) }
    }
}
