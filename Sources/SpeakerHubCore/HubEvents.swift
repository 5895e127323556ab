import OrderedJSON
import Synchronization

/// One JSON-RPC notification the hub pushes (docs/hub.md §8): `{"jsonrpc":"2.0","method":...,"params":...}`.
public struct HubNotification: Sendable, Equatable {
    public var method: String
    public var params: OrderedJSON
    /// The client whose own Snapcast request caused this (`HubRPCPeer.key`): it is not told, as snapserver does not
    /// tell the connection that made a change (docs/hub.md §9.4); nil: every client is.
    public var except: ObjectIdentifier?

    public init(_ method: String, _ params: OrderedJSON, except: ObjectIdentifier? = nil) {
        (self.method, self.params, self.except) = (method, params, except)
    }

    /// The message's text.
    public var text: String {
        OrderedJSON.object([("jsonrpc", .string("2.0")), ("method", .string(method)), ("params", params)]).rendered
    }

    /// Position updates replace one another in a client's queue: a client that reads late gets the latest one.
    var coalesces: Bool { method == "Player.OnPosition" }
}

/// The hub's notifications fanned out to the connected JSON-RPC clients (WebSockets).
///
/// Whoever publishes (a call that changed something, the position ticker, the player's events) only appends to each
/// client's queue under a lock and wakes it: nothing is encoded, sent or awaited on its path. Each client's queue is
/// bounded (`limit`): a queued position update is replaced by the newer one, and a client whose queue is full (it
/// took nothing while `limit` notifications came) is dropped — its wake-up stream ends and its socket is closed, so
/// it can never hold the hub back.
public final class HubEvents: Sendable {
    public static let defaultLimit = 256

    private struct Client {
        var queue: [HubNotification] = []
        var wake: AsyncStream<Void>.Continuation
        /// The JSON-RPC client this subscription serves (its `HubRPCPeer.key`), if any.
        var peer: ObjectIdentifier?
    }

    private struct State {
        var next = 0
        var clients: [Int: Client] = [:]
        var published = 0
    }

    private let state = Mutex(State())
    public let limit: Int

    public init(limit: Int = HubEvents.defaultLimit) { self.limit = max(1, limit) }

    /// A new client: its id and its wake-ups (at most one pending; `take` then returns everything queued).
    /// - Parameter peer: the JSON-RPC client it serves (`HubRPCPeer.key`): notifications its own Snapcast requests
    ///   caused are not queued for it.
    public func subscribe(peer: ObjectIdentifier? = nil) -> (id: Int, wakeups: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s in
            s.next += 1
            s.clients[s.next] = Client(wake: continuation, peer: peer)
            return s.next
        }
        return (id, stream)
    }

    public func unsubscribe(_ id: Int) {
        state.withLock { $0.clients.removeValue(forKey: id) }?.wake.finish()
    }

    /// Queues `notification` for every client and wakes them.
    public func publish(_ notification: HubNotification) {
        let (wake, dropped): ([AsyncStream<Void>.Continuation], [AsyncStream<Void>.Continuation]) = state.withLock { s in
            s.published += 1
            var wake: [AsyncStream<Void>.Continuation] = []
            var dropped: [AsyncStream<Void>.Continuation] = []
            for id in Array(s.clients.keys) {
                var client = s.clients[id]!
                if let except = notification.except, client.peer == except { continue }
                if notification.coalesces, let i = client.queue.firstIndex(where: { $0.method == notification.method }) {
                    client.queue.remove(at: i)
                }
                if client.queue.count >= limit {
                    s.clients[id] = nil
                    dropped.append(client.wake)
                    continue
                }
                client.queue.append(notification)
                s.clients[id] = client
                wake.append(client.wake)
            }
            return (wake, dropped)
        }
        for w in wake { w.yield(()) }
        for d in dropped { d.finish() }
    }

    /// Everything queued for client `id`, oldest first; nil once the client was dropped or unsubscribed.
    public func take(_ id: Int) -> [HubNotification]? {
        state.withLock { s in
            guard var client = s.clients[id] else { return nil }
            defer { client.queue = []; s.clients[id] = client }
            return client.queue
        }
    }

    /// How many clients are subscribed.
    public var subscriberCount: Int { state.withLock { $0.clients.count } }

    /// How many notifications were published.
    public var published: Int { state.withLock { $0.published } }

    /// Ends every client's stream (the server stops).
    public func finishAll() {
        let all = state.withLock { s in defer { s.clients = [:] }; return s.clients.values.map(\.wake) }
        for c in all { c.finish() }
    }
}
