/// The hub's client sessions (docs/hub.md §1): ids from 1000 up, never reused; a priority each (default 100); expiry
/// `timeout` after the last request; and who owns the playback. Pure: every operation takes `now`, the time on the
/// hub's clock.
///
/// A playback request from a session whose priority is greater than or equal to the owner's takes the playback over;
/// the owner's state becomes PlayerStateStopped and its id stays valid. A playback whose owner was closed or expired
/// can be taken by anyone.
///
/// No client can lock the others out: a client address holds at most `perClient` sessions (opening one more closes
/// that client's least recently used session that does not own the playback), and a session that never made a
/// request after `init_session` expires after `unusedTimeout` instead of `timeout`.
public struct HubSessions: Sendable {
    public struct Entry: Sendable, Equatable {
        public var id: UInt64
        public var priority: Int
        public var lastUsed: Duration
        /// This session's state while it does not own the playback: initialized until it plays, stopped after.
        public var ownState: HubPlayerState
        /// The address of the client that opened it.
        public var client: String
        /// Whether a request named it after `init_session`.
        public var used: Bool
    }

    public static let firstID: UInt64 = 1000

    public let timeout: Duration
    public let capacity: Int
    public let perClient: Int
    public let unusedTimeout: Duration
    public private(set) var entries: [UInt64: Entry] = [:]
    public private(set) var owner: UInt64?
    private var nextID = HubSessions.firstID
    /// Sessions closed to make room for their client's newer ones (the most recent few, for a clear refusal).
    private var displaced: [UInt64] = []

    public init(timeout: Duration = .seconds(3600), capacity: Int = 4096, perClient: Int = 32, unusedTimeout: Duration = .seconds(300)) {
        self.timeout = timeout
        self.capacity = capacity
        self.perClient = max(1, perClient)
        self.unusedTimeout = min(unusedTimeout, timeout)
    }

    /// A new session for `client`; expired ones are dropped first, and the client's least recently used one when it
    /// holds `perClient` already. Refused when `capacity` live sessions exist.
    public mutating func open(priority: Int, client: String = "", now: Duration) throws(HubError) -> UInt64 {
        expire(now: now)
        let mine = entries.values.filter { $0.client == client && $0.id != owner }
        if entries.values.filter({ $0.client == client }).count >= perClient,
           let oldest = mine.min(by: { ($0.lastUsed, $0.id) < ($1.lastUsed, $1.id) }) {
            entries[oldest.id] = nil
            displaced.append(oldest.id)
            if displaced.count > 4096 { displaced.removeFirst(displaced.count - 4096) }
        }
        guard entries.count < capacity else {
            throw HubError(.tooManySessions, "the hub holds \(capacity) live sessions; close one (close_session) or wait for one to expire")
        }
        let id = nextID
        nextID += 1
        entries[id] = Entry(id: id, priority: priority, lastUsed: now, ownState: .initialized, client: client, used: false)
        return id
    }

    /// Checks session `id` is live and restarts its expiry.
    public mutating func touch(_ id: UInt64, now: Duration) throws(HubError) {
        guard var entry = entries[id] else {
            if displaced.contains(id) {
                throw HubError(.sessionNotFound, "session \(id) was closed: its client opened more than \(perClient) sessions (close_session those you are done with)")
            }
            throw Self.notFound(id)
        }
        guard now - entry.lastUsed < lifetime(entry) else {
            entries[id] = nil
            throw HubError(.sessionNotFound, "session \(id) expired (no request for \(Self.minutes(lifetime(entry))))")
        }
        entry.lastUsed = now
        entry.used = true
        entries[id] = entry
    }

    public mutating func close(_ id: UInt64) {
        entries[id] = nil
    }

    /// Drops every session idle for its lifetime or longer.
    public mutating func expire(now: Duration) {
        entries = entries.filter { now - $0.value.lastUsed < lifetime($0.value) }
    }

    /// How long a session may stay idle: `timeout`, or `unusedTimeout` while it has made no request.
    func lifetime(_ entry: Entry) -> Duration {
        entry.used ? timeout : unusedTimeout
    }

    /// Whether session `id` may start, pause, resume or stop the playback.
    public func mayControlPlayback(_ id: UInt64) -> Bool {
        guard let owner, owner != id, let current = entries[owner] else { return true }
        guard let me = entries[id] else { return false }
        return me.priority >= current.priority
    }

    /// Refused with `.playbackBusy` unless `mayControlPlayback`.
    public func checkControl(_ id: UInt64) throws(HubError) {
        guard mayControlPlayback(id) else {
            let o = owner.flatMap { entries[$0] }
            throw HubError(.playbackBusy, "the playback belongs to session \(o?.id ?? 0) of priority \(o?.priority ?? 0), above this session's \(entries[id]?.priority ?? 0)")
        }
    }

    /// Session `id` owns the playback from now on; the session it took it from (if another) is returned, its state
    /// stopped.
    @discardableResult
    public mutating func takePlayback(_ id: UInt64) -> UInt64? {
        let previous = owner
        owner = id
        guard let previous, previous != id, entries[previous] != nil else { return nil }
        entries[previous]?.ownState = .stopped
        return previous
    }

    /// The state session `id` sees: the player's when it owns the playback, its own otherwise.
    public func state(of id: UInt64, player: HubPlayerState) -> HubPlayerState {
        if owner == id { return player }
        return entries[id]?.ownState ?? .initialized
    }

    static func notFound(_ id: UInt64) -> HubError {
        notFound(spelled: String(id))
    }

    /// A SessionID the hub did not issue, however it is spelled.
    public static func notFound(spelled id: String) -> HubError {
        HubError(.sessionNotFound, "session \(id) is not open (init_session gives one; sessions expire after an hour without requests)")
    }

    static func minutes(_ d: Duration) -> String {
        let s = d.components.seconds
        return s % 60 == 0 ? "\(s / 60) min" : "\(s) s"
    }
}
