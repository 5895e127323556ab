import OrderedJSON

/// Snapcast's control API (snapserver 0.26, badaix/snapcast doc/json_rpc_api/control.md) over the hub's model: the
/// mapping as pure values, no I/O (docs/hub.md §9). A speaker is a client, a named speaker group a group (a speaker in
/// no group is a group of its own, as snapserver gives every new client), the hub's player the one stream.
///
/// Objects are built with their keys in snapserver's order (alphabetical, as its JSON library writes them).
public enum Snapcast {
    /// The one stream: the hub's player (a media item or a web URL).
    public static let streamID = "hub"
    /// The Snapcast version whose control API this is (`server.snapserver.version`; clients check it before
    /// `Group.SetName`, 0.16, and `Stream.Control`, 0.26).
    public static let version = "0.26.0"
    /// The id of the group of a speaker in no named group.
    public static let soloPrefix = "speaker-"

    // MARK: Volume

    /// A speaker's volume 0...50 as Snapcast's percent 0...100: twice the volume. Every percent this gives reads back
    /// as the same volume (`volume(ofPercent:)`), so a speaker's volume survives percent → volume → percent and
    /// volume → percent → volume exactly.
    public static func percent(ofVolume volume: Int) -> Int { min(100, max(0, volume * 2)) }

    /// A percent 0...100 as a speaker volume: half of it, an odd percent rounded up (33 % → 17, read back as 34 %).
    public static func volume(ofPercent percent: Int) -> Int { min(50, max(0, (percent + 1) / 2)) }

    static func volumeJSON(volume: Int, muted: Bool) -> OrderedJSON {
        .object([("muted", .bool(muted)), ("percent", .int(percent(ofVolume: volume)))])
    }

    /// `lastSeen`: `{"sec","usec"}` since the Unix epoch (0 when never seen).
    static func timeJSON(_ t: Duration?) -> OrderedJSON {
        let t = t ?? .zero
        return .object([("sec", .int(Int(t.components.seconds))), ("usec", .int(Int(t.components.attoseconds / 1_000_000_000_000)))])
    }

    // MARK: Clients

    /// A speaker as a Snapcast client: `id` its DeviceID (decimal), `config.name` and `host.name` its name,
    /// `host.os` "HKWirelessHD", `host.arch` its model, `snapclient.version` its firmware, `config.latency` 0 (a
    /// speaker has no latency setting), `connected` and `lastSeen` as the hub knows them.
    public static func client(_ d: HubDevice, muted: Bool) -> OrderedJSON {
        .object([
            ("config", .object([
                ("instance", .int(1)), ("latency", .int(0)), ("name", .string(d.deviceName)),
                ("volume", volumeJSON(volume: d.volume, muted: muted)),
            ])),
            ("connected", .bool(d.connected)),
            ("host", .object([
                ("arch", .string(d.modelName)), ("ip", .string(d.ipAddress)), ("mac", .string(d.macAddress)),
                ("name", .string(d.deviceName)), ("os", .string("HKWirelessHD")),
            ])),
            ("id", .string(String(d.deviceID))),
            ("lastSeen", timeJSON(d.lastSeen)),
            ("snapclient", .object([("name", .string("HKWirelessHD")), ("protocolVersion", .int(2)), ("version", .string(d.version))])),
        ])
    }

    // MARK: Groups

    /// A Snapcast group: a named speaker group, or one speaker in none.
    public struct Group: Sendable, Equatable {
        /// The HKWirelessHD group id (decimal) of a named group; `speaker-DEVICEID` for a speaker in none.
        public var id: String
        /// The group's name; "" for a speaker in none.
        public var name: String
        public var members: [HubDevice]

        /// Whether this is a named HKWirelessHD group (not a speaker on its own).
        public var isNamed: Bool { !name.isEmpty }

        /// Muted when every member is (HKWirelessHD has no group mute: `Group.SetMute` mutes each member).
        public func muted(_ mutes: [UInt64: Bool]) -> Bool {
            !members.isEmpty && members.allSatisfy { mutes[$0.deviceID] ?? false }
        }
    }

    /// The speakers as Snapcast's groups, in list order (a named group where its first member is listed).
    public static func groups(_ devices: [HubDevice]) -> [Group] {
        var out: [Group] = []
        for d in devices {
            if d.groupID == 0 {
                out.append(Group(id: soloPrefix + String(d.deviceID), name: "", members: [d]))
            } else if let i = out.firstIndex(where: { $0.isNamed && $0.name == d.groupName }) {
                out[i].members.append(d)
            } else {
                out.append(Group(id: String(d.groupID), name: d.groupName, members: [d]))
            }
        }
        return out
    }

    public static func group(_ g: Group, mutes: [UInt64: Bool]) -> OrderedJSON {
        .object([
            ("clients", .array(g.members.map { client($0, muted: mutes[$0.deviceID] ?? false) })),
            ("id", .string(g.id)), ("muted", .bool(g.muted(mutes))), ("name", .string(g.name)), ("stream_id", .string(streamID)),
        ])
    }

    // MARK: The stream

    /// The hub's player as a stream: `status` "playing" while it plays, else "idle"; `properties` say what
    /// `Stream.Control` can do now, with `playbackStatus`, `position` and `metadata` while an item is loaded.
    public static func stream(_ p: HubPlayback) -> OrderedJSON {
        let loaded = p.state == .playing || p.state == .paused
        var properties: [(String, OrderedJSON)] = [
            ("canControl", .bool(true)), ("canGoNext", .bool(false)), ("canGoPrevious", .bool(false)),
            ("canPause", .bool(p.state == .playing)), ("canPlay", .bool(p.state == .paused)), ("canSeek", .bool(loaded && isMedia(p))),
        ]
        if loaded {
            properties.append(("metadata", metadata(p)))
            properties.append(("playbackStatus", .string(p.state == .playing ? "playing" : "paused")))
            properties.append(("position", .double(HubAPI.seconds(p.elapsed ?? .zero))))
        }
        return .object([
            ("id", .string(streamID)),
            ("properties", .object(properties)),
            ("status", .string(p.state == .playing ? "playing" : "idle")),
            ("uri", .object([
                ("fragment", .string("")), ("host", .string("")), ("path", .string("/" + streamID)),
                ("query", .object([("name", .string(streamID))])),
                ("raw", .string("tuneup:///\(streamID)?name=\(streamID)")), ("scheme", .string("tuneup")),
            ])),
        ])
    }

    static func isMedia(_ p: HubPlayback) -> Bool {
        if case .media? = p.item { return true }
        return false
    }

    /// Snapcast's metadata (MPRIS names): a media item's title, artist (a list), album and duration; a URL's title.
    static func metadata(_ p: HubPlayback) -> OrderedJSON {
        switch p.item {
        case let .media(m)?:
            var fields: [(String, OrderedJSON)] = []
            if !m.albumTitle.isEmpty { fields.append(("album", .string(m.albumTitle))) }
            if !m.artist.isEmpty { fields.append(("artist", .array([.string(m.artist)]))) }
            if m.duration > 0 { fields.append(("duration", .double(Double(m.duration)))) }
            fields.append(("title", .string(m.title)))
            return .object(fields)
        case let .web(url)?:
            return .object([("title", .string(url)), ("url", .string(url))])
        case nil:
            return .object([])
        }
    }

    // MARK: The server

    /// The machine the hub runs on (`server.host`): its name, system and architecture (`SnapcastControlServer.thisHost`
    /// reads them); `ip` and `mac` are empty, as snapserver leaves them.
    public struct Host: Sendable, Equatable {
        public var name: String
        public var os: String
        public var arch: String

        public init(name: String, os: String, arch: String) { (self.name, self.os, self.arch) = (name, os, arch) }

        /// A host not read from the system.
        public static let unnamed = Host(name: "tuneup-hub", os: "", arch: "")
    }

    /// `Server.GetStatus`'s `server`: the groups with their clients, the server, the stream.
    public static func server(_ devices: [HubDevice], mutes: [UInt64: Bool], playback: HubPlayback, host: Host) -> OrderedJSON {
        .object([
            ("groups", .array(groups(devices).map { group($0, mutes: mutes) })),
            ("server", .object([
                ("host", .object([("arch", .string(host.arch)), ("ip", .string("")), ("mac", .string("")), ("name", .string(host.name)),
                                  ("os", .string(host.os))])),
                ("snapserver", .object([
                    ("controlProtocolVersion", .int(1)), ("name", .string("Tuneup hub")), ("protocolVersion", .int(1)), ("version", .string(version)),
                ])),
            ])),
            ("streams", .array([stream(playback)])),
        ])
    }

    // MARK: Errors

    /// Snapcast's error for a client, group or stream id the hub does not know (snapserver's words).
    public static func notFound(_ what: String) -> HubRPCError { HubRPCError(snapcast: HubRPCError.internalError, "\(what) not found") }

    /// What HKWirelessHD cannot do: snapserver's shape for a request it cannot carry out (-32603, "Internal error",
    /// the reason in `data`).
    public static func cannot(_ reason: String) -> HubRPCError { HubRPCError(snapcast: HubRPCError.internalError, reason) }

    /// Bad parameters: -32602, "Invalid params", the parameter named in `data`.
    public static func invalid(_ reason: String) -> HubRPCError { HubRPCError(snapcast: HubRPCError.invalidParams, reason) }

    /// The standard JSON-RPC message of `code`, as snapserver words it.
    public static func standardMessage(_ code: Int) -> String {
        switch code {
        case HubRPCError.parseError: "Parse error"
        case HubRPCError.invalidRequest: "Invalid request"
        case HubRPCError.methodNotFound: "Method not found"
        case HubRPCError.invalidParams: "Invalid params"
        default: "Internal error"
        }
    }

    /// The notifications a Snapcast client knows (the TCP control pushes only these; a WebSocket gets the hub's own
    /// too).
    public static let notifications: Set<String> = [
        "Client.OnConnect", "Client.OnDisconnect", "Client.OnVolumeChanged", "Client.OnLatencyChanged", "Client.OnNameChanged",
        "Group.OnMute", "Group.OnStreamChanged", "Group.OnNameChanged", "Stream.OnProperties", "Stream.OnUpdate", "Server.OnUpdate",
    ]
}
