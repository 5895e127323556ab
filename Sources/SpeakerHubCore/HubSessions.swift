/// The hub's client sessions (docs/hub.md §1): ids from 1000 up, never reused; a priority each (default 100); expiry
/// `timeout` after the last request; and who owns the playback. Pure: every operation takes `now`, the time on the
/// hub's clock.
///
/// A playback request from a session whose priority is greater than or equal to the owner's takes the playback over;
/// the owner's state becomes PlayerStateStopped and its id stays valid. A playback whose owner was closed or expired
/// can be taken by anyone.
public struct HubSessions: Sendable {
    public struct Entry: Sendable, Equatable {
        public var id: UInt64
        public var priority: Int
        public var lastUsed: Duration
        /// This session's state while it does not own the playback: initialized until it plays, stopped after.
        public var ownState: HubPlayerState
    }

    public static let firstID: UInt64 = 1000

    public let timeout: Duration
    public let capacity: Int
    public private(set) var entries: [UInt64: Entry] = [:]
    public private(set) var owner: UInt64?
    private var nextID = HubSessions.firstID

    public init(timeout: Duration = .seconds(3600), capacity: Int = 4096) {
        self.timeout = timeout
        self.capacity = capacity
    }

    /// A new session; expired ones are dropped first. Refused when `capacity` live sessions exist.
    public mutating func open(priority: Int, now: Duration) throws(HubError) -> UInt64 {
        expire(now: now)
        guard entries.count < capacity else {
            throw HubError(.tooManySessions, "the hub holds \(capacity) live sessions; close one (close_session) or wait for one to expire")
        }
        let id = nextID
        nextID += 1
        entries[id] = Entry(id: id, priority: priority, lastUsed: now, ownState: .initialized)
        return id
    }

    /// Checks session `id` is live and restarts its expiry.
    public mutating func touch(_ id: UInt64, now: Duration) throws(HubError) {
        guard var entry = entries[id] else { throw Self.notFound(id) }
        guard now - entry.lastUsed < timeout else {
            entries[id] = nil
            throw HubError(.sessionNotFound, "session \(id) expired (no request for \(Self.minutes(timeout)))")
        }
        entry.lastUsed = now
        entries[id] = entry
    }

    public mutating func close(_ id: UInt64) {
        entries[id] = nil
    }

    /// Drops every session idle for `timeout` or longer.
    public mutating func expire(now: Duration) {
        entries = entries.filter { now - $0.value.lastUsed < timeout }
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
        HubError(.sessionNotFound, "session \(id) is not open (init_session gives one; sessions expire after an hour without requests)")
    }

    static func minutes(_ d: Duration) -> String {
        let s = d.components.seconds
        return s % 60 == 0 ? "\(s / 60) min" : "\(s) s"
    }
}
