import SpeakerHubCore
import SpeakerSession

/// The hub's speakers: real (or simulated) speakers through a `SpeakerController` (docs/hub.md §3.2).
///
/// Every speaker the hub was started with stays known, and one named but off when it started (`unreached`) is
/// looked for in the background the same way and joins the list when it first answers. One the hub cannot reach (off, out of reach, not answering)
/// is listed with what it said last, `connected` false, and never makes a call fail for the others: the hub reconnects
/// it in the background (at its host and control port) after `backoff`'s waits on the hub's clock, and it comes back
/// by itself (its new session replaces the old one in the controller). Each reachable speaker's events are followed:
/// its volume set by any controller, and the end of its link, which is how a loss is noticed at once.
///
/// Every device read refreshes the reachable speakers' DeviceInfo, so the hub answers what the speakers say now.
public actor ControllerSpeakers: HubSpeakers {
    /// Opens a new session to a lost speaker at its host and control port; throws while it cannot be reached.
    public typealias Connect = @Sendable (_ host: String, _ port: UInt16) async throws -> SpeakerSession

    public let controller: SpeakerController
    public nonisolated let backoff: HubBackoff
    private let now: @Sendable () -> Duration
    private let wallNow: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let connect: Connect

    private struct Entry {
        var device: HubDevice
        var muted: Bool?
        /// The session followed (nil while the speaker is unavailable).
        var session: SpeakerSession?
        var host: String?
        var port: UInt16?
        var follower: Task<Void, Never>?
        var reconnect: Task<Void, Never>?
        /// It left the playback session while unavailable: the speaker is told when it is back.
        var leaveOnReturn = false
    }

    private var order: [UInt64] = []
    private var entries: [UInt64: Entry] = [:]
    /// Speakers named but not reached when the hub started (no id yet), and their searches.
    private let unreached: [(host: String, port: UInt16)]
    private var searches: [Task<Void, Never>] = []
    private var started = false
    private var closed = false
    private var listeners: [AsyncStream<HubSpeakerChange>.Continuation] = []

    /// - Parameters:
    ///   - now: the hub's clock (as `HubAPI`'s; the waits run on `sleep`, on the same clock).
    ///   - sleep: a sleep on the same clock: the waits between reconnection attempts.
    ///   - wallClock: the wall clock (time since the Unix epoch): when a speaker was last heard (`lastSeen`).
    ///   - connect: how a lost speaker is reached again (TCP and hello by default).
    ///   - unreached: speakers (host and control port) not reached at the start (`open(_:endpoint:with:)`).
    public init(_ controller: SpeakerController, unreached: [(host: String, port: UInt16)] = [], backoff: HubBackoff = HubBackoff(),
                now: (@Sendable () -> Duration)? = nil, sleep: (@Sendable (Duration) async throws -> Void)? = nil,
                wallClock: @escaping @Sendable () -> Duration = HubWallClock.now, connect: Connect? = nil) {
        self.controller = controller
        self.unreached = unreached
        self.backoff = backoff
        let clock = ContinuousClock()
        let origin = clock.now
        self.now = now ?? { origin.duration(to: clock.now) }
        self.wallNow = wallClock
        self.sleep = sleep ?? { try await clock.sleep(for: $0) }
        self.connect = connect ?? { host, port in try await SpeakerSession.connect(host: host, port: port, connectTimeout: .seconds(2)) }
    }

    /// The speakers as the controller opened them, followed from the first use on.
    private func start() async {
        guard !started else { return }
        started = true
        let t = wallNow()
        for info in await controller.devices {
            let id = info.deviceId
            guard entries[id] == nil, let session = try? await controller.session(id: id) else { continue }
            order.append(id)
            entries[id] = Entry(device: HubDevice(info, connected: true, lastSeen: t), session: session, host: session.host,
                                port: session.controlPort)
            follow(id, session)
        }
        for endpoint in unreached { search(endpoint.host, endpoint.port) }
    }

    /// Opens a session to each of `items` with `open`: the controller holds those that answered (in order); those
    /// that cannot be reached now (a lost link, refused, no answer) are returned with their endpoint and the reason,
    /// for the hub to look for (`init(_:unreached:)`).
    /// - Throws: the failure of an item that has no endpoint or failed otherwise (a refusal, a version mismatch),
    ///   and the first failure when no item answered.
    public static func open<Item>(
        _ items: [Item], endpoint: (Item) -> (host: String, port: UInt16)?, with open: (Item) async throws -> SpeakerSession
    ) async throws -> (controller: SpeakerController, unreached: [(host: String, port: UInt16, reason: String)]) {
        var sessions: [SpeakerSession] = []
        var unreached: [(host: String, port: UInt16, reason: String)] = []
        var first: (any Error)?
        do {
            for item in items {
                do {
                    sessions.append(try await open(item))
                } catch {
                    guard linkLost(error), let e = endpoint(item) else { throw error }
                    first = first ?? error
                    unreached.append((e.host, e.port, message(error)))
                }
            }
            if sessions.isEmpty, let first { throw first }
            return (try await SpeakerController.open(sessions) { $0 }, unreached)
        } catch {
            for s in sessions { await s.close() }
            throw error
        }
    }

    // MARK: HubSpeakers

    public func devices() async throws -> [HubDevice] {
        await start()
        for id in order {
            guard let session = entries[id]?.session else { continue }
            do {
                let info = try await session.deviceInfo()
                heard(id, info)
            } catch {
                if Self.linkLost(error) { await lost(id, session, reason: Self.message(error)) } else { throw error }
            }
        }
        return order.compactMap { entries[$0]?.device }
    }

    /// Also starts following the speakers (and looking for those not reached), as any first use does.
    public func changes() async -> AsyncStream<HubSpeakerChange> {
        await start()
        let (stream, continuation) = AsyncStream<HubSpeakerChange>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        if closed { continuation.finish() } else { listeners.append(continuation) }
        return stream
    }

    /// The members of the playback session that the hub reaches (one lost is out until it is back).
    public func sessionMembers() async -> [UInt64] {
        await start()
        return await controller.sessionMembers.filter { id in
            guard let e = entries[id] else { return true }
            return e.session != nil && !e.leaveOnReturn
        }
    }

    public func addToSession(_ id: UInt64) async throws {
        try await guarded(id) { try await self.controller.addToSession(id) }
    }

    /// Removing a speaker that is not in the session does nothing; one that is unavailable leaves it at once (it is
    /// told when it is back).
    public func removeFromSession(_ id: UInt64) async throws {
        await start()
        guard await controller.sessionMembers.contains(id) else { return }
        if entries[id]?.session == nil, entries[id] != nil {
            entries[id]?.leaveOnReturn = true
            // The player stops streaming to it and reconnecting it; the speaker itself cannot be told now.
            try? await controller.removeFromSession(id)
            return
        }
        try await guarded(id) { try await self.controller.removeFromSession(id) }
    }

    /// One speaker's volume, or every reachable speaker's (`id` nil).
    public func setVolume(_ volume: Int, of id: UInt64?) async throws {
        await start()
        if let id {
            try await guarded(id) { try await self.controller.setVolume(volume, of: id) }
            return
        }
        for k in order where entries[k]?.session != nil {
            do {
                try await guarded(k) { try await self.controller.setVolume(volume, of: k) }
            } catch let error as HubError where error.code == .speakerFailed && entries[k]?.session == nil {
                continue  // lost meanwhile: it is listed unavailable, the others have the volume
            }
        }
    }

    public func setMute(_ muted: Bool, of id: UInt64) async throws {
        try await guarded(id) { try await self.controller.setMute(muted, of: id) }
        entries[id]?.muted = muted
    }

    /// Renames speaker `id` (the speaker keeps the name).
    public func rename(_ id: UInt64, to name: String) async throws {
        try await guarded(id) { try await self.controller.rename(id, to: name) }
    }

    /// Each speaker's mute: read now from the reachable ones (their playback status), as last known for the others.
    public func mutes() async throws -> [UInt64: Bool] {
        await start()
        var out: [UInt64: Bool] = [:]
        for id in order {
            if let session = entries[id]?.session, let status = try? await session.status() {
                entries[id]?.muted = status.muted
            }
            if let muted = entries[id]?.muted { out[id] = muted }
        }
        return out
    }

    /// The group `name` becomes exactly `ids`: its other members leave it, `ids` join it (an empty list disbands it).
    public func setGroup(_ name: String, members ids: [UInt64]) async throws {
        try Self.checkGroupName(name)
        await start()
        let current = order.filter { entries[$0]?.device.groupID != 0 && entries[$0]?.device.groupName == name }
        for id in current where !ids.contains(id) {
            try await guarded(id) { try await self.controller.leaveGroup(id) }
        }
        guard !ids.isEmpty else { return }
        for id in ids where entries[id]?.session == nil && entries[id] != nil { throw unavailable(id) }
        do {
            try await controller.joinGroup(named: name, ids: ids)
        } catch {
            guard Self.linkLost(error) else { throw error }
            for id in ids { if let s = entries[id]?.session, await !s.core.isOpen { await lost(id, s, reason: Self.message(error)) } }
            throw HubError(.speakerFailed, Self.message(error))
        }
    }

    /// Stops following the speakers and reconnecting them (the controller's sessions are the controller's to close).
    public func close() {
        closed = true
        for id in order {
            entries[id]?.follower?.cancel()
            entries[id]?.reconnect?.cancel()
        }
        for s in searches { s.cancel() }
        for l in listeners { l.finish() }
        listeners = []
    }

    // MARK: Reachability

    /// Runs a request to speaker `id`: refused at once when it is unavailable; a lost link marks it so (and starts
    /// its reconnection) and is `SpeakerFailed`.
    private func guarded(_ id: UInt64, _ body: @Sendable () async throws -> Void) async throws {
        await start()
        guard let e = entries[id] else { return try await body() }  // unknown: the controller says so
        guard let session = e.session else { throw unavailable(id) }
        do {
            try await body()
        } catch {
            guard Self.linkLost(error) else { throw error }
            await lost(id, session, reason: Self.message(error))
            throw HubError(.speakerFailed, "speaker \(id): \(Self.message(error)); the hub reconnects it by itself")
        }
    }

    /// The speaker library's one rule for group names (`GroupAssignment.name`), as the hub's refusal.
    public static func checkGroupName(_ name: String) throws(HubError) {
        do { _ = try GroupAssignment.name(name) } catch { throw HubError(.malformedParameter, "params.name: " + error.message) }
    }

    private func unavailable(_ id: UInt64) -> HubError {
        let name = entries[id].map { " ('\($0.device.deviceName)')" } ?? ""
        return HubError(.speakerFailed, "speaker \(id)\(name) is unavailable; the hub reconnects it by itself")
    }

    /// Whether `error` means the speaker's link is gone (rather than a refusal or a bad value).
    static func linkLost(_ error: any Error) -> Bool {
        if error is CancellationError || error is HubError { return false }
        guard let e = error as? SpeakerSessionError else { return true }
        return [.timeout, .disconnected, .connectionFailed, .notConnected].contains(e.code)
    }

    static func message(_ error: any Error) -> String {
        (error as? SpeakerSessionError)?.message ?? "\(error)"
    }

    private func heard(_ id: UInt64, _ info: DeviceInfo) {
        guard entries[id] != nil else { return }
        entries[id]!.device = HubDevice(info, connected: true, lastSeen: wallNow())
    }

    private func emit(_ change: HubSpeakerChange) {
        for l in listeners { l.yield(change) }
    }

    /// Follows `session`'s events: volumes (any controller's), and its end (the link is lost).
    private func follow(_ id: UInt64, _ session: SpeakerSession) {
        entries[id]?.follower?.cancel()
        entries[id]?.follower = Task { [weak self] in
            let events = await session.events()
            for await event in events {
                await self?.received(event, from: id, on: session)
            }
            guard !Task.isCancelled else { return }
            await self?.lost(id, session, reason: "link to speaker \(session.address) lost")
        }
    }

    private func received(_ event: SpeakerEvent, from id: UInt64, on session: SpeakerSession) {
        guard entries[id]?.session === session else { return }
        entries[id]!.device.lastSeen = wallNow()
        if case let .volumeChanged(_, volume, muted) = event {
            entries[id]!.device.volume = volume
            entries[id]!.muted = muted
            emit(.volume(id: id, level: volume, muted: muted))
        }
    }

    /// Speaker `id`'s `session` ended or stopped answering: unavailable, reconnected in the background. When the
    /// controller already holds another open session for it (the player reconnected a member of the stream), that
    /// one is followed instead.
    private func lost(_ id: UInt64, _ session: SpeakerSession, reason: String) async {
        guard !closed, entries[id]?.session === session else { return }
        if let current = try? await controller.session(id: id), current !== session, await current.core.isOpen {
            guard entries[id]?.session === session else { return }
            entries[id]!.session = current
            follow(id, current)
            return
        }
        guard entries[id]?.session === session else { return }
        entries[id]!.session = nil
        entries[id]!.device.connected = false
        entries[id]!.follower?.cancel()
        entries[id]!.follower = nil
        emit(.lost(id: id, reason: reason))
        await session.close()
        startReconnecting(id)
    }

    private func startReconnecting(_ id: UInt64) {
        guard !closed, entries[id]?.reconnect == nil else { return }
        let backoff = backoff, sleep = sleep
        entries[id]!.reconnect = Task { [weak self] in
            var attempt = 0
            while true {
                do { try await sleep(backoff.delay(beforeAttempt: attempt)) } catch { return }
                attempt += 1
                guard let self, await self.attemptReconnect(id) else { continue }
                return
            }
        }
    }

    /// Looks for a speaker not reached at the start, after `backoff`'s waits, until it answers.
    private func search(_ host: String, _ port: UInt16) {
        let backoff = backoff, sleep = sleep
        searches.append(Task { [weak self] in
            var attempt = 0
            while true {
                do { try await sleep(backoff.delay(beforeAttempt: attempt)) } catch { return }
                attempt += 1
                guard let self, await self.attemptFirst(host, port) else { continue }
                return
            }
        })
    }

    /// One attempt to reach a speaker for the first time: true when it answered (or is no longer looked for).
    private func attemptFirst(_ host: String, _ port: UInt16) async -> Bool {
        guard !closed else { return true }
        guard let session = try? await connect(host, port) else { return false }
        guard let info = try? await session.deviceInfo() else {
            await session.close()
            return false
        }
        let id = session.deviceId
        guard !closed, entries[id] == nil else {
            await session.close()  // known already (named twice, or by another address)
            return true
        }
        entries[id] = Entry(device: HubDevice(info, connected: true, lastSeen: wallNow()), session: session, host: host, port: port)
        order.append(id)
        await controller.reconnected(session)
        follow(id, session)
        emit(.connected(id: id))
        return true
    }

    /// One attempt to reach lost speaker `id`: true when it is back (or no longer to be reconnected).
    private func attemptReconnect(_ id: UInt64) async -> Bool {
        guard !closed, let e = entries[id], e.session == nil else { return true }
        // The player reconnects the speakers of its stream itself: its session is the controller's now.
        if let current = try? await controller.session(id: id), await current.core.isOpen {
            await back(id, current)
            return true
        }
        guard let host = e.host, let port = e.port else { return true }  // not a TCP speaker: cannot be reached again
        guard let session = try? await connect(host, port) else { return false }
        guard session.deviceId == id, !closed, entries[id]?.session == nil else {
            await session.close()  // another speaker answers there now, or it came back meanwhile
            return entries[id]?.session != nil || closed
        }
        await controller.reconnected(session)
        await back(id, session)
        return true
    }

    /// Speaker `id` is reachable again over `session`.
    private func back(_ id: UInt64, _ session: SpeakerSession) async {
        guard entries[id] != nil else { return }
        entries[id]!.session = session
        entries[id]!.reconnect = nil
        entries[id]!.device.connected = true
        entries[id]!.device.lastSeen = wallNow()
        follow(id, session)
        if entries[id]!.leaveOnReturn {
            entries[id]!.leaveOnReturn = false
            try? await controller.removeFromSession(id)  // the controller's session is the new one now
        }
        if let info = try? await session.deviceInfo() { heard(id, info) }
        emit(.connected(id: id))
    }
}

extension HubDevice {
    /// The published fields of a speaker's DeviceInfo.
    public init(_ i: DeviceInfo, connected: Bool = true, lastSeen: Duration? = nil) {
        self.init(deviceID: i.deviceId, deviceName: i.deviceName.value, groupID: i.groupId, groupName: i.groupName.value,
                  modelName: i.modelName.value, ipAddress: i.ipAddress.value, port: Int(i.port), macAddress: i.macAddress.description,
                  volume: Int(i.volume.value), active: i.active, wifiSignalStrength: Int(i.wifiSignalStrength), role: Int(i.role),
                  version: i.version.value, isPlaying: i.isPlaying, connected: connected, lastSeen: lastSeen)
    }
}
