/// The parameters of one query string, %-decoded (docs/hub.md §2).
///
/// `a=1&b=x%20y+z` → a: "1", b: "x y z". Empty pieces (`&&`) are skipped; a key without `=` has the value "".
/// Refused with `.malformedQuery`: a `%` not followed by two hex digits, bytes that are not UTF-8 once decoded, a
/// parameter given twice, a query longer than `maxLength` bytes or with more than `maxParameters` pieces. Names are
/// case-sensitive, as published (`SessionID`, `DeviceIDList`); names the call does not use are ignored.
public struct HubQuery: Sendable, Equatable {
    public static let maxLength = 8192
    public static let maxParameters = 64

    public private(set) var values: [String: String] = [:]

    public init(_ raw: Substring?) throws(HubError) {
        guard let raw, !raw.isEmpty else { return }
        guard raw.utf8.count <= Self.maxLength else {
            throw HubError(.malformedQuery, "the query is \(raw.utf8.count) bytes long; at most \(Self.maxLength) are read")
        }
        var count = 0
        for piece in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            count += 1
            guard count <= Self.maxParameters else {
                throw HubError(.malformedQuery, "the query has more than \(Self.maxParameters) parameters")
            }
            let bytes = Array(piece)
            let eq = bytes.firstIndex(of: UInt8(ascii: "="))
            let name = try Self.decode(bytes[..<(eq ?? bytes.endIndex)])
            let value = try eq.map { i throws(HubError) in try Self.decode(bytes[(i + 1)...]) } ?? ""
            guard values[name] == nil else {
                throw HubError(.malformedQuery, "parameter '\(Self.shown(name))' is given twice")
            }
            values[name] = value
        }
    }

    public init(_ raw: String?) throws(HubError) { try self.init(raw.map { Substring($0) }) }

    public subscript(name: String) -> String? { values[name] }

    /// %XX and `+` decoded, checked to be UTF-8.
    static func decode(_ bytes: ArraySlice<UInt8>) throws(HubError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) else {
                    throw HubError(.malformedQuery, "a '%' in the query is not followed by two hex digits")
                }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
                i += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw HubError(.malformedQuery, "the query is not UTF-8 once %-decoded")
        }
        return text
    }

    static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A value as an error message shows it: at most 40 characters, control characters as `?`.
    static func shown(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { $0.value < 0x20 || $0.value == 0x7f ? "?" : $0 }))
        return text.unicodeScalars.count > 40 ? cleaned + "..." : cleaned
    }
}

/// Which speakers a play or resume uses.
public enum HubTarget: Sendable, Equatable {
    /// The speakers in the playback session (`play_hub_media`).
    case session
    /// Every speaker, added to the session first (`..._party_mode`).
    case party
    /// Exactly these speakers: they join the session, the others leave it (`..._selected_speakers`).
    case selected([UInt64])
}

/// One call of the HKWHub v1 API with its parameters checked (docs/hub.md §3).
public enum HubCall: Sendable, Equatable {
    case initSession(priority: Int)
    case closeSession
    case deviceCount
    case deviceList
    case deviceInfo(deviceID: UInt64)
    case addDeviceToSession(deviceID: UInt64)
    case removeDeviceFromSession(deviceID: UInt64)
    case setPartyMode
    case mediaList
    case playHubMedia(persistentID: UInt64, HubTarget)
    case playWebMedia(url: String, HubTarget)
    case pausePlay
    case stopPlay
    case resumeHubMedia(persistentID: UInt64, HubTarget)
    case playbackStatus
    case isPlaying
    case getVolume
    case getVolumeDevice(deviceID: UInt64)
    case setVolume(Int)
    case setVolumeDevice(deviceID: UInt64, volume: Int)
}

/// A request read from `/v1/NAME?QUERY`: the call and the session it names (every call but `init_session` names one).
public struct HubRequest: Sendable, Equatable {
    public var name: String
    public var call: HubCall
    public var sessionID: UInt64?
    /// A SessionID the hub cannot have issued (not its decimal spelling: letters, a sign, leading zeros, too many
    /// digits), as shown in messages: answered `SessionNotFound` like any other id it does not hold.
    public var unissuedSession: String?

    /// Every call name, as published (`add_device_tosession`, the spec's spelling in one place, is an alias).
    public static let callNames = [
        "init_session", "close_session", "device_count", "device_list", "device_info", "add_device_to_session",
        "remove_device_from_session", "set_party_mode", "media_list", "play_hub_media", "play_hub_media_party_mode",
        "play_hub_media_selected_speakers", "play_web_media", "play_web_media_party_mode", "play_web_media_selected_speakers",
        "pause_play", "stop_play", "resume_hub_media", "resume_hub_media_party_mode", "resume_hub_media_selected_speakers",
        "playback_status", "is_playing", "get_volume", "get_volume_device", "set_volume", "set_volume_device",
    ]

    public static let defaultPriority = 100
    public static let priorityRange = 0...1_000_000
    public static let volumeRange = 0...50
    public static let maxDeviceIDs = 64
    public static let maxURLLength = 2048
    public static let urlSchemes = ["http", "https", "rtsp", "mms"]

    /// Reads a call: its name (the path's last part), then the query, then the SessionID, then the call's parameters,
    /// so the first problem met is the one reported.
    public init(name rawName: Substring, query: Substring?) throws(HubError) {
        let name = rawName == "add_device_tosession" ? "add_device_to_session" : String(rawName)
        guard Self.callNames.contains(name) else {
            throw HubError(.unknownCall, "there is no call '\(HubQuery.shown(String(rawName)))' in the v1 API (see docs/hub.md)")
        }
        let q = try HubQuery(query)
        self.name = name
        if name == "init_session" {
            sessionID = nil
            unissuedSession = nil
            call = .initSession(priority: try Self.integer(q, "Priority", in: Self.priorityRange, default: Self.defaultPriority))
            return
        }
        let spelled = try Self.required(q, "SessionID")
        sessionID = Self.decimal(spelled).flatMap { String($0) == spelled ? $0 : nil }
        unissuedSession = sessionID == nil ? HubQuery.shown(spelled) : nil
        func device() throws(HubError) -> UInt64 { try Self.id(q, "DeviceID") }
        func media() throws(HubError) -> UInt64 { try Self.id(q, "PersistentID") }
        func url() throws(HubError) -> String { try Self.mediaURL(q) }
        func list() throws(HubError) -> HubTarget { .selected(try Self.idList(q, "DeviceIDList")) }
        switch name {
        case "close_session": call = .closeSession
        case "device_count": call = .deviceCount
        case "device_list": call = .deviceList
        case "device_info": call = .deviceInfo(deviceID: try device())
        case "add_device_to_session": call = .addDeviceToSession(deviceID: try device())
        case "remove_device_from_session": call = .removeDeviceFromSession(deviceID: try device())
        case "set_party_mode": call = .setPartyMode
        case "media_list": call = .mediaList
        case "play_hub_media": call = .playHubMedia(persistentID: try media(), .session)
        case "play_hub_media_party_mode": call = .playHubMedia(persistentID: try media(), .party)
        case "play_hub_media_selected_speakers": call = .playHubMedia(persistentID: try media(), try list())
        case "play_web_media": call = .playWebMedia(url: try url(), .session)
        case "play_web_media_party_mode": call = .playWebMedia(url: try url(), .party)
        case "play_web_media_selected_speakers": call = .playWebMedia(url: try url(), try list())
        case "pause_play": call = .pausePlay
        case "stop_play": call = .stopPlay
        case "resume_hub_media": call = .resumeHubMedia(persistentID: try media(), .session)
        case "resume_hub_media_party_mode": call = .resumeHubMedia(persistentID: try media(), .party)
        case "resume_hub_media_selected_speakers": call = .resumeHubMedia(persistentID: try media(), try list())
        case "playback_status": call = .playbackStatus
        case "is_playing": call = .isPlaying
        case "get_volume": call = .getVolume
        case "get_volume_device": call = .getVolumeDevice(deviceID: try device())
        case "set_volume": call = .setVolume(try Self.integer(q, "Volume", in: Self.volumeRange))
        default: call = .setVolumeDevice(deviceID: try device(), volume: try Self.integer(q, "Volume", in: Self.volumeRange))
        }
    }

    public init(name: String, query: String?) throws(HubError) {
        try self.init(name: Substring(name), query: query.map { Substring($0) })
    }

    static func required(_ q: HubQuery, _ name: String) throws(HubError) -> String {
        guard let value = q[name] else { throw HubError(.missingParameter, "parameter \(name) is missing") }
        return value
    }

    /// Decimal digits only: ids are unsigned 64-bit numbers.
    static func id(_ q: HubQuery, _ name: String) throws(HubError) -> UInt64 {
        let text = try required(q, name)
        guard let value = decimal(text) else {
            throw HubError(.malformedParameter, "\(name) '\(HubQuery.shown(text))' is not an id (decimal digits, at most 2^64-1)")
        }
        return value
    }

    static func decimal(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return UInt64(text)
    }

    static func integer(_ q: HubQuery, _ name: String, in range: ClosedRange<Int>, default fallback: Int? = nil) throws(HubError) -> Int {
        guard let text = q[name] else {
            if let fallback { return fallback }
            throw HubError(.missingParameter, "parameter \(name) is missing")
        }
        guard let value = decimal(text).flatMap({ $0 <= UInt64(Int.max) ? Int($0) : nil }), range.contains(value) else {
            throw HubError(.malformedParameter, "\(name) '\(HubQuery.shown(text))' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// `a,b,c`: at least one id, at most `maxDeviceIDs`, no empty item; a repeated id counts once.
    static func idList(_ q: HubQuery, _ name: String) throws(HubError) -> [UInt64] {
        let text = try required(q, name)
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !text.isEmpty, items.count <= maxDeviceIDs else {
            throw HubError(.malformedParameter, "\(name) takes 1...\(maxDeviceIDs) DeviceIDs separated by ','")
        }
        var ids: [UInt64] = []
        for item in items {
            guard let id = decimal(String(item)) else {
                throw HubError(.malformedParameter, "\(name) item '\(HubQuery.shown(String(item)))' is not an id (decimal digits)")
            }
            if !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// `SCHEME://HOST...` with a scheme the SDK streams (http, https, rtsp, mms).
    static func mediaURL(_ q: HubQuery) throws(HubError) -> String {
        try checkURL(try required(q, "MediaUrl"))
    }

    /// `text` when it is a URL web media may have (the checks of `MediaUrl`).
    static func checkURL(_ text: String) throws(HubError) -> String {
        guard text.utf8.count <= maxURLLength else {
            throw HubError(.malformedParameter, "MediaUrl is longer than \(maxURLLength) bytes")
        }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, urlSchemes.contains(parts[0].lowercased()), parts[1].hasPrefix("//"),
              let host = parts[1].dropFirst(2).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first,
              !host.isEmpty, !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }) else {
            throw HubError(.malformedParameter, "MediaUrl '\(HubQuery.shown(text))' is not an http, https, rtsp or mms URL with a host")
        }
        return text
    }
}

extension HubRequest {
    /// A call the JSON-RPC control makes for session `session` (its parameters checked by the dispatcher).
    init(call: HubCall, session: UInt64) {
        name = ""
        self.call = call
        sessionID = session
        unissuedSession = nil
    }
}
