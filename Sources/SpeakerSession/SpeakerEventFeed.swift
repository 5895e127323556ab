import Speaker

/// The events of many speakers as one stream (what `tuneup speaker events` prints): each speaker's pushes, typed
/// and tagged with its device id; after a volume change the new average volume of the speakers followed; a speaker
/// added while the feed runs (a discovery watch finds it) and one that goes away (its session ends, or it is removed).
///
/// Each speaker's events keep their order; events of different speakers interleave as they arrive.
public actor SpeakerEventFeed {
    public enum Event: Sendable, Hashable {
        /// Something speaker `deviceId` pushed.
        case speaker(deviceId: UInt64, SpeakerEvent)
        /// The average volume of the speakers followed, after one of them changed.
        case averageVolume(Double)
        /// A speaker followed from now on (only those added with `announce`).
        case added(deviceId: UInt64, name: String, address: String)
        /// A speaker no longer followed: its session ended (`reason` says how), or `remove` was called.
        case removed(deviceId: UInt64, address: String, reason: String)
    }

    /// Every event from the feed's creation until `finish()`.
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private var followed: [UInt64: (session: SpeakerSession, task: Task<Void, Never>, volume: Int)] = [:]
    private var removing: [UInt64: String] = [:]

    public init() {
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(4096))
    }

    /// The device ids followed now.
    public var deviceIds: [UInt64] { Array(followed.keys) }

    /// The average volume of the speakers followed (0 with none).
    public var averageVolume: Double {
        followed.isEmpty ? 0 : Double(followed.values.map(\.volume).reduce(0, +)) / Double(followed.count)
    }

    /// Follows `session` (its DeviceInfo is read for its name and volume); with `announce` an `.added` event says
    /// so. A session already followed (same device id) is ignored. The feed closes the session when it stops
    /// following it.
    public func add(_ session: SpeakerSession, announce: Bool) async throws {
        let id = session.deviceId
        guard followed[id] == nil else { return }
        let info = try await session.deviceInfo()
        let stream = await session.events()
        let task = Task { [weak self] in
            for await event in stream { await self?.received(event, from: id) }
            await self?.ended(id)
        }
        followed[id] = (session, task, Int(info.volume.value))
        if announce { continuation.yield(.added(deviceId: id, name: info.deviceName.value, address: session.address)) }
    }

    /// Stops following speaker `id` (a discovery watch lost it): `.removed` with `reason`.
    public func remove(deviceId id: UInt64, reason: String) async {
        guard let entry = followed[id] else { return }
        removing[id] = reason
        await entry.session.close()
        await entry.task.value
    }

    /// Closes every session and ends the stream.
    public func finish() async {
        for (_, entry) in followed {
            entry.task.cancel()
            await entry.session.close()
        }
        followed = [:]
        continuation.finish()
    }

    private func received(_ event: SpeakerEvent, from id: UInt64) {
        continuation.yield(.speaker(deviceId: id, event))
        if case let .volumeChanged(_, volume, _) = event, followed[id] != nil {
            followed[id]?.volume = volume
            continuation.yield(.averageVolume(averageVolume))
        }
    }

    private func ended(_ id: UInt64) {
        guard let entry = followed.removeValue(forKey: id) else { return }
        let reason = removing.removeValue(forKey: id) ?? "its connection ended"
        continuation.yield(.removed(deviceId: id, address: entry.session.address, reason: reason))
    }
}
