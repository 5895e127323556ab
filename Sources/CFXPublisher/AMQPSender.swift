import CQpidProton
import Foundation
import Support
import Synchronization

/// What the sender reports about its link to the broker (from its own thread; handlers must be quick).
public enum AMQPLinkEvent: Sendable, Hashable {
    /// The link is open: the broker takes messages.
    case connected
    /// The connection failed or was lost (the reason as the library or the broker gave it); it is tried again.
    case disconnected(reason: String)
    /// The broker refused a message for good (it stays in the spool and is offered again on the next connection).
    case rejected(id: String, reason: String)
}

/// An AMQP 1.0 sender on Qpid Proton's proactor, on a thread of its own: messages are sent unsettled and count as
/// sent only when the broker accepts them (`onAccepted`). A message released or not acknowledged when the link
/// drops is sent again once the broker answers (every second while it does not).
public final class AMQPSender: Sendable {
    public struct Outgoing: Sendable {
        public var id: String
        public var body: [UInt8]
        public init(id: String, body: [UInt8]) { (self.id, self.body) = (id, body) }
    }

    private struct Shared {
        /// Waiting to be sent, in order (messages to resend first).
        var pending: [(seq: UInt64, message: Outgoing)] = []
        var nextSeq: UInt64 = 0
        var stopping = false
    }

    let target: AMQPAddress
    private let shared = Mutex(Shared())
    private let proactor: Proactor
    private let onAccepted: @Sendable (String) -> Void
    private let onEvent: @Sendable (AMQPLinkEvent) -> Void
    private let reconnectDelay: UInt32
    private let ended = Mutex<[CheckedContinuation<Void, Never>]?>([])

    /// Starts the sender's thread and its first connection. Throws `thread` when no thread can be started,
    /// `libraryMissing` without Qpid Proton.
    public init(
        target: AMQPAddress, reconnectDelayMilliseconds: UInt32 = 1000,
        onAccepted: @escaping @Sendable (String) -> Void, onEvent: @escaping @Sendable (AMQPLinkEvent) -> Void
    ) throws(CFXError) {
        self.target = target
        self.onAccepted = onAccepted
        self.onEvent = onEvent
        self.reconnectDelay = reconnectDelayMilliseconds
        if let why = tuneup_proton_load() { throw CFXError(.libraryMissing, "cfx: " + String(cString: why)) }
        proactor = Proactor()
        let loop = Loop(sender: self)
        do {
            try Threads.spawn(name: "tuneup-amqp") { loop.run() }
        } catch {
            throw CFXError(.thread, "cfx: \(error.message)")
        }
    }

    /// Queues a message (returns at once); it is sent when the link has credit.
    public func send(_ message: Outgoing) {
        shared.withLock { s in
            s.pending.append((s.nextSeq, message))
            s.nextSeq += 1
        }
        proactor.interrupt()
    }

    /// Closes the connection and ends the thread; messages not accepted yet are dropped here (the spool keeps them).
    /// A connection that does not close within 3 s (a broker that stopped answering) is cut.
    public func stop() async {
        shared.withLock { $0.stopping = true }
        proactor.interrupt()
        let cut = Task { [self] in
            try await Task.sleep(for: .seconds(3))
            // Under the lock the loop takes before it frees the proactor: never a freed one.
            ended.withLock { waiting in if waiting != nil { pn_proactor_disconnect(proactor.raw, nil) } }
        }
        defer { cut.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = ended.withLock { waiting -> Bool in
                guard waiting != nil else { return true }
                waiting?.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: The loop (its own thread)

    /// The proactor: created on the caller's thread, used only by the loop (interrupt is thread-safe).
    final class Proactor: @unchecked Sendable {
        let raw: OpaquePointer
        init() { raw = pn_proactor() }
        func interrupt() { pn_proactor_interrupt(raw) }
    }

    /// Everything the loop owns; touched only on the sender's thread.
    private final class Loop: @unchecked Sendable {
        let sender: AMQPSender
        var connection: OpaquePointer?
        var link: OpaquePointer?
        var inFlight: [UInt64: (seq: UInt64, message: Outgoing)] = [:]
        var nextTag: UInt64 = 1
        var linkOpen = false
        var finished = false
        var reported: String?

        init(sender: AMQPSender) { self.sender = sender }

        var p: OpaquePointer { sender.proactor.raw }

        func run() {
            connect()
            while !finished {
                guard let batch = pn_proactor_wait(p) else { break }
                while let event = pn_event_batch_next(batch) { handle(event) }
                pn_proactor_done(p, batch)
            }
            let waiting = sender.ended.withLock { w -> [CheckedContinuation<Void, Never>] in
                defer { w = nil }
                return w ?? []
            }
            pn_proactor_free(p)
            waiting.forEach { $0.resume() }
        }

        func connect() {
            let target = sender.target
            guard let c = pn_connection(), let transport = pn_transport() else { return }
            connection = c
            linkOpen = false
            if let user = target.user {
                pn_connection_set_user(c, user)
                if let password = target.password { pn_connection_set_password(c, password) }
                // PLAIN over a connection without TLS: the line's own network (docs/cfx.md).
                pn_sasl_set_allow_insecure_mechs(pn_sasl(transport), true)
            }
            pn_connection_set_container(c, "tuneup-cfx-\(getpid())")
            pn_connection_set_hostname(c, target.host)
            var address = [CChar](repeating: 0, count: 512)
            _ = pn_proactor_addr(&address, address.count, target.host, String(target.port))
            pn_proactor_connect2(p, c, transport, address)
        }

        func handle(_ event: OpaquePointer) {
            switch pn_event_type(event) {
            case PN_CONNECTION_INIT:
                guard let c = pn_event_connection(event) else { return }
                pn_connection_open(c)
                let session = pn_session(c)
                pn_session_open(session)
                let l = pn_sender(session, "tuneup-cfx")
                pn_terminus_set_address(pn_link_target(l), sender.target.address)
                pn_terminus_set_durability(pn_link_target(l), PN_DELIVERIES)
                pn_link_set_snd_settle_mode(l, PN_SND_UNSETTLED)
                pn_link_set_rcv_settle_mode(l, PN_RCV_FIRST)
                pn_link_open(l)
                link = l
            case PN_LINK_REMOTE_OPEN:
                // A broker that refuses the address attaches without a target (and detaches with the reason).
                guard let l = pn_event_link(event), l == link, pn_terminus_get_address(pn_link_remote_target(l)) != nil else { return }
                linkOpen = true
                reported = nil
                sender.onEvent(.connected)
                flush()
            case PN_LINK_FLOW:
                flush()
            case PN_PROACTOR_INTERRUPT:
                // A connection's state may be changed only in its own batch: wake it (sending and closing happen
                // on PN_CONNECTION_WAKE).
                if let c = connection {
                    pn_connection_wake(c)
                } else if sender.shared.withLock({ $0.stopping }) {
                    finished = true
                }
            case PN_CONNECTION_WAKE:
                if sender.shared.withLock({ $0.stopping }) {
                    if let c = pn_event_connection(event) { pn_connection_close(c) }
                    return
                }
                flush()
            case PN_DELIVERY:
                guard let d = pn_event_delivery(event), pn_delivery_updated(d) else { return }
                let tag = tuneup_pn_delivery_tag_u64(d)
                let state = pn_delivery_remote_state(d)
                if let entry = inFlight.removeValue(forKey: tag) {
                    switch state {
                    case UInt64(PN_ACCEPTED):
                        sender.onAccepted(entry.message.id)
                    case UInt64(PN_REJECTED):
                        let reason = Self.text(pn_disposition_condition(pn_delivery_remote(d))) ?? "rejected"
                        sender.onEvent(.rejected(id: entry.message.id, reason: reason))
                    default:
                        // Released or modified: offered again.
                        sender.shared.withLock { $0.pending.insert(entry, at: 0) }
                    }
                }
                pn_delivery_settle(d)
                flush()
            case PN_LINK_REMOTE_CLOSE, PN_SESSION_REMOTE_CLOSE, PN_CONNECTION_REMOTE_CLOSE:
                let condition = pn_event_type(event) == PN_LINK_REMOTE_CLOSE
                    ? pn_link_remote_condition(pn_event_link(event))
                    : pn_event_type(event) == PN_SESSION_REMOTE_CLOSE
                    ? pn_session_remote_condition(pn_event_session(event))
                    : pn_connection_remote_condition(pn_event_connection(event))
                if let reason = Self.text(condition) { report(reason) }
                if let c = pn_event_connection(event) { pn_connection_close(c) }
            case PN_TRANSPORT_CLOSED:
                let reason = Self.text(pn_transport_condition(pn_event_transport(event))) ?? "the connection closed"
                lost(reason)
            case PN_PROACTOR_TIMEOUT:
                if sender.shared.withLock({ $0.stopping }) { finished = true } else if connection == nil { connect() }
            case PN_PROACTOR_INACTIVE:
                if sender.shared.withLock({ $0.stopping }) { finished = true }
            default:
                break
            }
        }

        /// The connection is gone: what was in flight is offered again, and a new connection is tried after the delay.
        func lost(_ reason: String) {
            connection = nil
            link = nil
            linkOpen = false
            let back = inFlight.values.sorted { $0.seq < $1.seq }
            inFlight = [:]
            let stopping = sender.shared.withLock { s -> Bool in
                s.pending.insert(contentsOf: back, at: 0)
                return s.stopping
            }
            if stopping {
                finished = true
                return
            }
            report(reason)
            pn_proactor_set_timeout(p, pn_millis_t(sender.reconnectDelay))
        }

        /// Reports a problem once per outage (until the link opens again).
        func report(_ reason: String) {
            guard reported == nil else { return }
            reported = reason
            sender.onEvent(.disconnected(reason: reason))
        }

        /// Sends what is pending while the link has credit.
        func flush() {
            guard linkOpen, let l = link else { return }
            while pn_link_credit(l) > 0 {
                guard let next = sender.shared.withLock({ s in s.pending.isEmpty ? nil : s.pending.removeFirst() }) else { return }
                let tag = nextTag
                nextTag += 1
                guard let message = pn_message() else { return }
                defer { pn_message_free(message) }
                _ = tuneup_pn_message_set_string_id(message, next.message.id)
                pn_message_set_durable(message, true)
                _ = pn_message_set_content_type(message, "application/json")
                _ = next.message.body.withUnsafeBufferPointer { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { tuneup_pn_message_set_data_body(message, $0.baseAddress, $0.count) }
                }
                _ = tuneup_pn_delivery_with_tag(l, tag)
                if pn_message_send(message, l, nil) < 0 {
                    sender.shared.withLock { $0.pending.insert(next, at: 0) }
                    return
                }
                inFlight[tag] = next
            }
        }

        static func text(_ condition: OpaquePointer?) -> String? {
            guard let condition, pn_condition_is_set(condition) else { return nil }
            let name = pn_condition_get_name(condition).map { String(cString: $0) } ?? ""
            let description = pn_condition_get_description(condition).map { String(cString: $0) } ?? ""
            switch (name.isEmpty, description.isEmpty) {
            case (true, true): return nil
            case (false, true): return name
            case (true, false): return description
            case (false, false): return "\(description) (\(name))"
            }
        }
    }
}
