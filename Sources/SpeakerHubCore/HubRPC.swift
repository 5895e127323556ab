import OrderedJSON

/// A JSON-RPC 2.0 error (docs/hub.md §8.4): the standard codes and the hub's application codes.
public struct HubRPCError: Error, Sendable, Equatable {
    public var code: Int
    public var message: String
    /// The hub's error name (`DeviceNotFound`...) for application errors.
    public var name: String?
    /// Snapcast's shape (a Snapcast method's error, docs/hub.md §9): `message` the standard words of `code`, the
    /// detail in `data` as a string, as snapserver answers.
    public var snapcastDetail: String?

    public init(_ code: Int, _ message: String, name: String? = nil) { (self.code, self.message, self.name) = (code, message, name) }

    /// An error in Snapcast's shape: `{"code","data":DETAIL,"message":STANDARD}`.
    public init(snapcast code: Int, _ detail: String) {
        (self.code, self.message, self.snapcastDetail) = (code, Snapcast.standardMessage(code), detail)
    }

    public static let parseError = -32700
    public static let invalidRequest = -32600
    public static let methodNotFound = -32601
    public static let invalidParams = -32602
    /// A failure of the hub itself (not the request's).
    public static let internalError = -32603

    /// The application code of a hub refusal: -32001... by kind (docs/hub.md §8.4).
    public static func code(of error: HubError) -> Int {
        switch error.code {
        case .missingParameter, .malformedParameter, .malformedQuery: invalidParams
        case .deviceNotFound: -32001
        case .mediaNotFound: -32002
        case .noSpeakerInSession: -32003
        case .playbackBusy: -32004
        case .notPlaying: -32005
        case .notResumable: -32006
        case .notSeekable: -32007
        case .speakerFailed: -32008
        case .mediaUnreadable: -32009
        case .tooManySessions: -32010
        case .unsupported: -32011
        default: -32000
        }
    }

    init(_ error: HubError) { self.init(Self.code(of: error), error.message, name: error.name) }

    var json: OrderedJSON {
        if let snapcastDetail {
            return .object([("code", .int(code)), ("data", .string(snapcastDetail)), ("message", .string(message))])
        }
        var fields: [(String, OrderedJSON)] = [("code", .int(code)), ("message", .string(message))]
        if let name { fields.append(("data", .object([("error", .string(name))]))) }
        return .object(fields)
    }
}

/// The JSON-RPC 2.0 control API over `HubAPI` (docs/hub.md §8): one dispatcher for both transports (an HTTP POST
/// body, a WebSocket text message), pure: text in, text out. Requests run one at a time with the v1 calls.
extension HubAPI {
    /// The longest message read; a longer one is an invalid request.
    public static let rpcMaxMessage = 65536
    /// The most requests in one batch.
    public static let rpcMaxBatch = 64

    /// Snapcast's methods, with Snapcast's parameters, results and errors (docs/hub.md §9).
    public static let snapcastMethods: Set<String> = [
        "Server.GetRPCVersion", "Server.GetStatus", "Server.DeleteClient",
        "Client.GetStatus", "Client.SetVolume", "Client.SetName", "Client.SetLatency",
        "Group.GetStatus", "Group.SetMute", "Group.SetStream", "Group.SetClients", "Group.SetName",
        "Stream.Control", "Stream.SetProperty",
    ]

    /// Tuneup's own methods (docs/hub.md §8): the player, the media list, the playback session, and the speakers in
    /// the hub's own terms (volume 0...50, groups by name).
    public static let tuneupMethods = [
        "Hub.GetStatus", "Server.SetVolume",
        "Client.GetInfo", "Client.SetLevel", "Client.SetMute", "Client.SetActive",
        "Group.GetAll", "Group.Assign",
        "Player.GetStatus", "Player.Play", "Player.Pause", "Player.Resume", "Player.Stop", "Player.Seek",
        "Media.List",
    ]

    /// Every method.
    public static let rpcMethods = snapcastMethods.sorted() + tuneupMethods

    /// Answers one message: a request, a notification (no answer: nil) or a batch. Never throws: every problem is a
    /// JSON-RPC error answer.
    public nonisolated func rpc(_ bytes: some Collection<UInt8>, peer: HubRPCPeer) async -> String? {
        guard bytes.count <= Self.rpcMaxMessage else {
            return Self.errorAnswer(.null, HubRPCError(HubRPCError.invalidRequest,
                                                      "the message is \(bytes.count) bytes long; at most \(Self.rpcMaxMessage) are read"))
        }
        let value: OrderedJSON
        do {
            value = try OrderedJSON.parse(bytes)
        } catch {
            return Self.errorAnswer(.null, HubRPCError(HubRPCError.parseError, "not JSON: \(error.message)"))
        }
        guard case let .array(items) = value else { return await one(value, peer: peer) }
        guard !items.isEmpty else { return Self.errorAnswer(.null, HubRPCError(HubRPCError.invalidRequest, "an empty batch")) }
        guard items.count <= Self.rpcMaxBatch else {
            return Self.errorAnswer(.null, HubRPCError(HubRPCError.invalidRequest, "a batch of \(items.count) requests; at most \(Self.rpcMaxBatch)"))
        }
        var answers: [String] = []
        for item in items {
            if let answer = await one(item, peer: peer) { answers.append(answer) }
        }
        return answers.isEmpty ? nil : "[" + answers.joined(separator: ",") + "]"
    }

    public nonisolated func rpc(_ text: String, peer: HubRPCPeer) async -> String? {
        await rpc(Array(text.utf8), peer: peer)
    }

    static func errorAnswer(_ id: OrderedJSON, _ error: HubRPCError) -> String {
        OrderedJSON.object([("jsonrpc", .string("2.0")), ("error", error.json), ("id", id)]).rendered
    }

    /// One request or notification.
    nonisolated func one(_ request: OrderedJSON, peer: HubRPCPeer) async -> String? {
        guard case .object = request else {
            return Self.errorAnswer(.null, HubRPCError(HubRPCError.invalidRequest, "a request is a JSON object"))
        }
        let id = request["id"]
        switch id {
        case nil, .string?, .int?, .null?: break
        default: return Self.errorAnswer(.null, HubRPCError(HubRPCError.invalidRequest, "id is a string, a whole number or null"))
        }
        let answerID = id ?? .null
        guard request["jsonrpc"] == .string("2.0") else {
            return Self.errorAnswer(answerID, HubRPCError(HubRPCError.invalidRequest, "jsonrpc must be \"2.0\""))
        }
        guard case let .string(method)? = request["method"] else {
            return Self.errorAnswer(answerID, HubRPCError(HubRPCError.invalidRequest, "method must be a string"))
        }
        let params: RPCParams
        switch request["params"] {
        case nil: params = RPCParams(fields: [])
        case let .object(fields)?: params = RPCParams(fields: fields)
        case let .array(items)? where items.isEmpty: params = RPCParams(fields: [])
        case .array?:
            return Self.errorAnswer(answerID, HubRPCError(HubRPCError.invalidParams, "params are given by name (an object)"))
        default:
            return Self.errorAnswer(answerID, HubRPCError(HubRPCError.invalidRequest, "params must be an object"))
        }
        let result: Result<OrderedJSON, HubRPCError>
        do {
            result = .success(try await dispatch(method, params, peer: peer))
        } catch let error as HubRPCError {
            result = .failure(error)
        } catch let error as HubError {
            result = .failure(HubRPCError(error))
        } catch is CancellationError {
            result = .failure(HubRPCError(HubRPCError.internalError, "the request was cancelled"))
        } catch {
            result = .failure(HubRPCError(-32008, "\(error)", name: "SpeakerFailed"))
        }
        guard id != nil else { return nil }  // a notification: no answer, even to an error
        switch result {
        case let .success(value): return OrderedJSON.object([("jsonrpc", .string("2.0")), ("result", value), ("id", answerID)]).rendered
        case let .failure(error): return Self.errorAnswer(answerID, error)
        }
    }

    /// Runs `method` (one at a time with every other call).
    func dispatch(_ method: String, _ p: RPCParams, peer: HubRPCPeer) async throws -> OrderedJSON {
        guard Self.rpcMethods.contains(method) else {
            throw HubRPCError(HubRPCError.methodNotFound, "there is no method '\(HubQuery.shown(method))' (docs/hub.md §8 lists them)")
        }
        await enter()
        defer { leave() }
        if Self.snapcastMethods.contains(method) { return try await snapcast(method, p, peer: peer) }
        switch method {
        case "Hub.GetStatus":
            let list = try await speakers.devices()
            let mutes = (try? await speakers.mutes()) ?? [:]
            return .object([
                ("server", .object([("name", .string("tuneup-hub")), ("protocolVersion", .int(2))])),
                ("clients", .array(list.map { Self.clientJSON($0, muted: mutes[$0.deviceID]) })),
                ("groups", Self.groupsJSON(list)),
                ("player", Self.playerJSON(await player.playback())),
                ("media", .array(try await media.items().map(Self.mediaJSON))),
            ])
        case "Server.SetVolume":
            let volume = try p.int("volume", in: HubRequest.volumeRange)
            _ = try await perform(.setVolume(volume), for: peer)
            return .object([("volume", .int(volume))])
        case "Client.GetInfo":
            let d = try await known(try p.id("id"))
            let mutes = (try? await speakers.mutes()) ?? [:]
            return .object([("client", Self.clientJSON(d, muted: mutes[d.deviceID]))])
        case "Client.SetLevel":
            let (id, volume) = (try p.id("id"), try p.int("volume", in: HubRequest.volumeRange))
            _ = try await perform(.setVolumeDevice(deviceID: id, volume: volume), for: peer)
            return .object([("volume", .int(volume))])
        case "Client.SetMute":
            let (id, muted) = (try p.id("id"), try p.bool("muted"))
            _ = try session(for: peer)
            try await setMute(muted, of: id)
            return .object([("muted", .bool(muted))])
        case "Client.SetActive":
            let (id, active) = (try p.id("id"), try p.bool("active"))
            _ = try await perform(active ? .addDeviceToSession(deviceID: id) : .removeDeviceFromSession(deviceID: id), for: peer)
            return .object([("active", .bool(active))])
        case "Group.GetAll":
            return .object([("groups", Self.groupsJSON(try await speakers.devices()))])
        case "Group.Assign":
            // The name is the speakers' to check (`HubSpeakers.setGroup`: the one rule of the speaker library).
            let (name, ids) = (try p.string("name"), try p.ids("clients", allowEmpty: true))
            _ = try session(for: peer)
            try await setGroup(name, members: ids)
            return .object([("groups", Self.groupsJSON(try await speakers.devices()))])
        case "Player.GetStatus":
            return Self.playerJSON(await player.playback())
        case "Player.Play":
            let target = try p.target()
            if let url = try p.optionalString("url") {
                guard p.has("media") == false else { throw HubRPCError(HubRPCError.invalidParams, "params: media or url, not both") }
                let checked: String
                do { checked = try HubRequest.checkURL(url) } catch { throw HubRPCError(HubRPCError.invalidParams, "params.url: " + error.message) }
                _ = try await perform(.playWebMedia(url: checked, target), for: peer)
            } else {
                _ = try await perform(.playHubMedia(persistentID: try p.id("media"), target), for: peer)
            }
            return Self.playerJSON(await player.playback())
        case "Player.Pause":
            _ = try await perform(.pausePlay, for: peer)
            return Self.playerJSON(await player.playback())
        case "Player.Resume":
            let target = try p.target()
            guard case let .media(item)? = await player.playback().item else {
                throw HubError(.notResumable, "nothing is paused that can be resumed (web media cannot be)")
            }
            _ = try await perform(.resumeHubMedia(persistentID: item.persistentID, target), for: peer)
            return Self.playerJSON(await player.playback())
        case "Player.Stop":
            _ = try await perform(.stopPlay, for: peer)
            return Self.playerJSON(await player.playback())
        case "Player.Seek":
            let position = try p.seconds("position")
            try await seek(to: position, for: peer)
            return Self.playerJSON(await player.playback())
        default:  // "Media.List"
            return .object([("media", .array(try await media.items().map(Self.mediaJSON)))])
        }
    }
}

/// A request's parameters, by name; a missing or mistyped one is `invalid params` naming it.
struct RPCParams {
    let fields: [(String, OrderedJSON)]

    func has(_ key: String) -> Bool { fields.contains { $0.0 == key } }

    func value(_ key: String) throws(HubRPCError) -> OrderedJSON {
        guard let v = fields.last(where: { $0.0 == key })?.1 else {
            throw HubRPCError(HubRPCError.invalidParams, "params.\(key) is missing")
        }
        return v
    }

    func wrong(_ key: String, _ what: String) -> HubRPCError {
        HubRPCError(HubRPCError.invalidParams, "params.\(key) must be \(what)")
    }

    /// An id: a string of decimal digits (ids do not fit JavaScript's numbers), or a whole number.
    func id(_ key: String) throws(HubRPCError) -> UInt64 {
        guard let id = Self.id(try value(key)) else { throw wrong(key, "an id (a string of decimal digits)") }
        return id
    }

    static func id(_ v: OrderedJSON) -> UInt64? {
        switch v {
        case let .string(s): HubRequest.decimal(s)
        case let .int(i) where i >= 0: UInt64(i)
        default: nil
        }
    }

    func ids(_ key: String, allowEmpty: Bool = false) throws(HubRPCError) -> [UInt64] {
        guard case let .array(items) = try value(key), items.count <= HubRequest.maxDeviceIDs, allowEmpty || !items.isEmpty else {
            throw wrong(key, "an array of \(allowEmpty ? 0 : 1)...\(HubRequest.maxDeviceIDs) ids")
        }
        var out: [UInt64] = []
        for item in items {
            guard let id = Self.id(item) else { throw wrong(key, "an array of ids (strings of decimal digits)") }
            if !out.contains(id) { out.append(id) }
        }
        return out
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws(HubRPCError) -> Int {
        guard case let .int(i) = try value(key), range.contains(i) else { throw wrong(key, "a whole number in \(range.lowerBound)...\(range.upperBound)") }
        return i
    }

    func bool(_ key: String) throws(HubRPCError) -> Bool {
        guard case let .bool(b) = try value(key) else { throw wrong(key, "true or false") }
        return b
    }

    func string(_ key: String) throws(HubRPCError) -> String {
        guard case let .string(s) = try value(key) else { throw wrong(key, "a string") }
        return s
    }

    func optionalString(_ key: String) throws(HubRPCError) -> String? {
        guard has(key) else { return nil }
        return try string(key)
    }

    /// Seconds, 0 or more (at most a day).
    func seconds(_ key: String) throws(HubRPCError) -> Duration {
        let s: Double
        switch try value(key) {
        case let .int(i): s = Double(i)
        case let .double(d): s = d
        default: throw wrong(key, "a number of seconds")
        }
        guard s >= 0, s <= 86400 else { throw wrong(key, "a number of seconds, 0...86400") }
        return .milliseconds(Int64((s * 1000).rounded(.down)))
    }

    /// Where to play: `clients` (exactly these speakers), `party: true` (every speaker), or neither (the playback
    /// session as it is).
    func target() throws(HubRPCError) -> HubTarget {
        if has("clients") {
            guard !has("party") else { throw HubRPCError(HubRPCError.invalidParams, "params: clients or party, not both") }
            return .selected(try ids("clients"))
        }
        if has("party") { return try bool("party") ? .party : .session }
        return .session
    }
}
