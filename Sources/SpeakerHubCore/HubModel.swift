import OrderedJSON

/// A speaker as the hub reports it: the published DeviceInfo fields (docs/hub.md §3.4).
public struct HubDevice: Sendable, Equatable {
    public var deviceID: UInt64
    public var deviceName: String
    public var groupID: UInt64
    public var groupName: String
    public var modelName: String
    public var ipAddress: String
    public var port: Int
    public var macAddress: String
    public var volume: Int
    public var active: Bool
    public var wifiSignalStrength: Int
    public var role: Int
    public var version: String
    public var isPlaying: Bool
    /// Whether the hub reaches the speaker now. A known speaker that is off or out of reach stays listed with what
    /// it said last (`connected` false) while the hub reconnects it in the background (docs/hub.md §3.2).
    public var connected: Bool
    /// When the hub last heard from the speaker: wall-clock time since the Unix epoch (Snapcast's `lastSeen`, from
    /// the hub's injectable wall clock, `HubWallClock`); nil: never.
    public var lastSeen: Duration?

    public init(deviceID: UInt64, deviceName: String, groupID: UInt64, groupName: String, modelName: String, ipAddress: String,
                port: Int, macAddress: String, volume: Int, active: Bool, wifiSignalStrength: Int, role: Int, version: String,
                isPlaying: Bool, connected: Bool = true, lastSeen: Duration? = nil) {
        self.deviceID = deviceID; self.deviceName = deviceName; self.groupID = groupID; self.groupName = groupName
        self.modelName = modelName; self.ipAddress = ipAddress; self.port = port; self.macAddress = macAddress
        self.volume = volume; self.active = active; self.wifiSignalStrength = wifiSignalStrength; self.role = role
        self.version = version; self.isPlaying = isPlaying; self.connected = connected; self.lastSeen = lastSeen
    }

    /// The published object, in the published order: ids as strings, numbers and booleans as JSON values.
    public var json: OrderedJSON {
        .object([
            ("GroupName", .string(groupName)), ("Role", .int(role)), ("MacAddress", .string(macAddress)),
            ("WifiSignalStrength", .int(wifiSignalStrength)), ("Port", .int(port)), ("Active", .bool(active)),
            ("DeviceName", .string(deviceName)), ("Version", .string(version)), ("ModelName", .string(modelName)),
            ("IPAddress", .string(ipAddress)), ("GroupID", .string(String(groupID))), ("Volume", .int(volume)),
            ("IsPlaying", .bool(isPlaying)), ("DeviceID", .string(String(deviceID))),
        ])
    }
}

/// One item of the hub's media list.
public struct HubMediaItem: Sendable, Equatable {
    /// Stable across restarts: derived from the file's path in the media folder.
    public var persistentID: UInt64
    public var title: String
    public var artist: String
    public var albumTitle: String
    /// Whole seconds (0 when unknown).
    public var duration: Int
    /// Where the player finds it (a file path).
    public var location: String

    public init(persistentID: UInt64, title: String, artist: String, albumTitle: String, duration: Int, location: String) {
        self.persistentID = persistentID; self.title = title; self.artist = artist; self.albumTitle = albumTitle
        self.duration = duration; self.location = location
    }

    /// The published object: `PersistentID` a string, `Duration` a number.
    public var json: OrderedJSON {
        .object([
            ("PersistentID", .string(String(persistentID))), ("Title", .string(title)), ("Artist", .string(artist)),
            ("Duration", .int(duration)), ("AlbumTitle", .string(albumTitle)),
        ])
    }
}

/// What the player plays.
public enum HubPlayable: Sendable, Equatable {
    case media(HubMediaItem)
    /// An http(s), rtsp or mms URL: cannot be resumed (pause stops it).
    case web(url: String)
}

/// The player states of the published API.
public enum HubPlayerState: String, Sendable, Equatable, CaseIterable {
    case initialized = "PlayerStateInitialized"
    case playing = "PlayerStatePlaying"
    case paused = "PlayerStatePaused"
    case stopped = "PlayerStateStopped"
}

/// The player's state and position now.
public struct HubPlayback: Sendable, Equatable {
    public var state: HubPlayerState
    /// Position in the item (while playing or paused).
    public var elapsed: Duration?
    public var item: HubPlayable?

    public init(state: HubPlayerState, elapsed: Duration? = nil, item: HubPlayable? = nil) {
        self.state = state
        self.elapsed = elapsed
        self.item = item
    }
}

/// Something the speakers reported by themselves (not in answer to a hub call): `HubAPI.followSpeakers()` turns
/// these into notifications.
public enum HubSpeakerChange: Sendable, Equatable {
    /// A speaker's volume or mute, as it reported it (set by the hub or by any other controller).
    case volume(id: UInt64, level: Int, muted: Bool)
    /// A known speaker is reachable again (the hub reconnected it).
    case connected(id: UInt64)
    /// A speaker's link was lost (off, out of reach, not answering); the hub reconnects it in the background.
    case lost(id: UInt64, reason: String)
}

/// The speakers the hub controls (real ones: `ControllerSpeakers` over a `SpeakerController`).
public protocol HubSpeakers: Sendable {
    /// Every known speaker's information, in list order: read now from those the hub reaches, as last known
    /// (`connected` false) for those it does not. A speaker that cannot be reached never makes this throw.
    func devices() async throws -> [HubDevice]
    /// What the speakers report by themselves from now on (the stream ends when the speakers are closed).
    func changes() async -> AsyncStream<HubSpeakerChange>
    /// The ids of the speakers in the playback session.
    func sessionMembers() async -> [UInt64]
    func addToSession(_ id: UInt64) async throws
    /// Removing a speaker that is not in the session does nothing.
    func removeFromSession(_ id: UInt64) async throws
    /// Sets one speaker's volume, or every speaker's (`id` nil).
    func setVolume(_ volume: Int, of id: UInt64?) async throws
    func setMute(_ muted: Bool, of id: UInt64) async throws
    func mutes() async throws -> [UInt64: Bool]
    func setGroup(_ name: String, members ids: [UInt64]) async throws
    /// Gives speaker `id` a new name (Snapcast's `Client.SetName`).
    func rename(_ id: UInt64, to name: String) async throws
}

/// What the JSON-RPC control adds to the v1 API's speakers (docs/hub.md §8): mute and named groups. A model
/// without them refuses with `Unsupported`.
extension HubSpeakers {
    /// Speakers that report nothing by themselves: a stream that ends at once.
    public func changes() async -> AsyncStream<HubSpeakerChange> {
        AsyncStream { $0.finish() }
    }

    public func setMute(_ muted: Bool, of id: UInt64) async throws {
        throw HubError(.unsupported, "these speakers cannot be muted")
    }

    /// Which speakers are muted (read now); empty when unknown.
    public func mutes() async throws -> [UInt64: Bool] { [:] }

    /// Puts exactly `ids` in the group named `name` (members of that group not in `ids` leave it). A name the
    /// speakers do not take is `MalformedParameter` naming `params.name`.
    public func setGroup(_ name: String, members ids: [UInt64]) async throws {
        throw HubError(.unsupported, "these speakers cannot be grouped")
    }

    public func rename(_ id: UInt64, to name: String) async throws {
        throw HubError(.unsupported, "these speakers cannot be renamed")
    }
}

/// What the hub needs of a player: play an item from a position on speakers, pause, resume, stop, and its state and
/// elapsed time (an item that has played to its end reports `.stopped`).
public protocol HubPlayer: Sendable {
    func play(_ item: HubPlayable, from position: Duration, on speakers: [UInt64]) async throws
    func pause() async throws
    func resume() async throws
    func stop() async throws
    func playback() async -> HubPlayback
    /// Moves the playing or paused item to `position` (it stays playing or paused).
    func seek(to position: Duration) async throws
}

extension HubPlayer {
    public func seek(to position: Duration) async throws {
        throw HubError(.unsupported, "this player cannot seek")
    }
}

/// The hub's media list.
public protocol HubMediaSource: Sendable {
    func items() async throws -> [HubMediaItem]
}
