import LightX
import Synchronization
import Transport

/// One host link as a headset serves it: the link (already shaped by the behaviour profile and injected faults), its
/// packet format, and an outbox that a writer task drains in order — replies (after the profile's reply delay) and
/// pushes. Frames beyond `outboxLimit` queued for a host that does not read are dropped. On a byte stream without a
/// reply delay, the writer sends everything queued at once in one write (a host pipelining requests gets its
/// replies in a few writes, not one each), then runs the replies' `after` in order.
struct HostLink: Sendable {
    /// Frames queued per host before further ones are dropped (a host that does not read its link).
    static let outboxLimit = 4096
    /// How long a closing link may take to send what is queued before it is closed anyway (a stuck link).
    static let drainLimit: Duration = .seconds(2)

    enum Outbound: Sendable {
        /// A reply; `after` runs once it was handed to the link (or could not be).
        case reply([UInt8], after: (@Sendable () -> Void)?)
        case push([UInt8])

        var bytes: [UInt8] {
            switch self {
            case let .reply(bytes, _), let .push(bytes): bytes
            }
        }

        var after: (@Sendable () -> Void)? {
            if case let .reply(_, after) = self { return after }
            return nil
        }
    }

    let link: any Transport
    let framing: LinkFraming
    private let outbox: Outbox
    private let writer: Task<Void, Never>

    /// Starts the writer of `link`; every reply waits `replyDelay` (if any) before it is sent.
    init(link: any Transport, replyDelay: Duration?) {
        let outbox = Outbox()
        self.link = link
        self.framing = link.framing
        self.outbox = outbox
        self.writer = Task.detached { await Self.write(outbox, to: link, replyDelay: replyDelay) }
    }

    /// `packet` in this link's format: an SPP frame, or a raw packet whose reply header echoes the modules of
    /// `request` (the USB convention).
    func encode(_ packet: Packet, answering request: Packet?) -> [UInt8] {
        Self.encode(packet, framing: framing, answering: request)
    }

    /// Queues a reply; `after` runs once it is on the link, or at once when it cannot be queued (the link is closing
    /// or its outbox is full).
    func reply(_ bytes: [UInt8], after: (@Sendable () -> Void)? = nil) {
        if !outbox.add(.reply(bytes, after: after)) { after?() }
    }

    /// Queues a push.
    func push(_ bytes: [UInt8]) {
        _ = outbox.add(.push(bytes))
    }

    /// Accepts no more frames; what is queued is still sent.
    func finish() {
        outbox.finish()
    }

    /// After `finish()`: lets the queued frames drain — a host may half-close and still read — for at most
    /// `drainLimit` (a stuck link is closed), then closes the link. Cancelling the caller stops the draining at once:
    /// the link is closed and queued replies are not sent (their `after` still runs).
    func drainAndClose() async {
        let link = link
        let watchdog = Task.detached {
            do {
                try await Task.sleep(for: Self.drainLimit)
                await link.close()
            } catch {}
        }
        await withTaskCancellationHandler {
            await writer.value
        } onCancel: { [writer] in
            writer.cancel()
        }
        watchdog.cancel()
        await link.close()
    }

    /// `packet` encoded for a link with `framing`: an SPP frame on a byte stream; on a packet link the raw packet,
    /// a reply (`request` given) with the request's source and destination echoed.
    static func encode(_ packet: Packet, framing: LinkFraming, answering request: Packet?) -> [UInt8] {
        switch framing {
        case .byteStream:
            return SPPFraming.encode(packet)
        case .packets:
            var raw = packet
            if let request {
                // Same as Packet.reply(to:status:buffer:swapModules: false).
                raw.header.source = request.header.source
                raw.header.destination = request.header.destination
            }
            return RawPacketCodec.encode(raw)
        }
    }

    /// Sends queued frames in order; replies wait `replyDelay` first, then run their `after`. Without a reply delay
    /// on a byte stream, everything queued goes out in one write. Stops sending (closing the link) when sending
    /// fails or the writer is cancelled, still running the `after` of what is left.
    private static func write(_ outbox: Outbox, to link: any Transport, replyDelay: Duration?) async {
        var failed = false
        let batches = replyDelay == nil && link.framing == .byteStream
        while let items = await outbox.take() {
            if failed || Task.isCancelled {
                failed = true
                items.forEach { $0.after?() }
                continue
            }
            if batches {
                var bytes: [UInt8] = []
                for item in items { bytes.append(contentsOf: item.bytes) }
                failed = await send(bytes, on: link)
                items.forEach { $0.after?() }
                continue
            }
            for item in items {
                if !failed, let replyDelay, case .reply = item {
                    do { try await Task.sleep(for: replyDelay) } catch { failed = true }
                }
                if !failed { failed = await send(item.bytes, on: link) }
                item.after?()
            }
        }
    }

    /// Sends `bytes`; on failure closes the link and returns true.
    private static func send(_ bytes: [UInt8], on link: any Transport) async -> Bool {
        do {
            try await link.send(bytes)
            return false
        } catch {
            await link.close()
            return true
        }
    }

    /// The frames queued for the writer: added from the device's actor, taken all at once by the writer.
    final class Outbox: Sendable {
        private struct State {
            var items: [Outbound] = []
            var finished = false
            var cancelled = false
            var waiter: CheckedContinuation<Void, Never>?
        }

        private let state = Mutex(State())

        /// Queues `item`; false when the outbox is finished or full (the item was not queued).
        func add(_ item: Outbound) -> Bool {
            let (added, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
                guard !s.finished, s.items.count < HostLink.outboxLimit else { return (false, nil) }
                s.items.append(item)
                defer { s.waiter = nil }
                return (true, s.waiter)
            }
            waiter?.resume()
            return added
        }

        /// Accepts nothing more; `take` returns what is left, then nil.
        func finish() {
            let waiter = state.withLock { s in
                s.finished = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }

        /// Everything queued, in order, waiting for at least one frame; nil once finished and empty. When the
        /// calling task is cancelled, returns what is left (the writer runs their `after` without sending).
        func take() async -> [Outbound]? {
            while true {
                let taken: [Outbound]?? = state.withLock { s in
                    if !s.items.isEmpty {
                        defer { s.items.removeAll(keepingCapacity: true) }
                        return .some(s.items)
                    }
                    return s.finished || s.cancelled ? .some(nil) : nil
                }
                if let taken { return taken }
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let ready = state.withLock { s in
                            if !s.items.isEmpty || s.finished || s.cancelled || Task.isCancelled {
                                s.cancelled = s.cancelled || Task.isCancelled
                                return true
                            }
                            s.waiter = continuation
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = state.withLock { s in
                        s.cancelled = true
                        defer { s.waiter = nil }
                        return s.waiter
                    }
                    waiter?.resume()
                }
            }
        }
    }
}

/// The hosts a headset serves, by link id: who gets replies and pushes.
struct HostTable {
    private var hosts: [UInt64: HostLink] = [:]
    private var nextID: UInt64 = 0

    /// The number of hosts connected.
    var count: Int { hosts.count }

    /// The id the next added host gets (fault plans number links from 0).
    var nextLinkID: UInt64 { nextID }

    /// Host `id`, while it is connected.
    subscript(id: UInt64) -> HostLink? { hosts[id] }

    /// Adds `host`; returns its id.
    mutating func add(_ host: HostLink) -> UInt64 {
        let id = nextID
        nextID += 1
        hosts[id] = host
        return id
    }

    /// Removes host `id` (it gets nothing more).
    mutating func remove(_ id: UInt64) {
        hosts[id] = nil
    }

    /// Removes every host and returns them.
    mutating func removeAll() -> [HostLink] {
        defer { hosts = [:] }
        return Array(hosts.values)
    }

    /// Queues each push for every host, encoded once per link format.
    func broadcast(_ pushes: [Packet]) {
        for push in pushes {
            var encoded: [LinkFraming: [UInt8]] = [:]
            for host in hosts.values {
                let frame = encoded[host.framing] ?? host.encode(push, answering: nil)
                encoded[host.framing] = frame
                host.push(frame)
            }
        }
    }
}
