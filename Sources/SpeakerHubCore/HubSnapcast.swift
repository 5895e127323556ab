import OrderedJSON

/// Snapcast's methods over the hub (docs/hub.md §9): the mapping of `Snapcast` run against the speakers and the player,
/// one at a time with every other call (the caller, `dispatch`, holds the hub). Errors are in Snapcast's shape.
extension HubAPI {
    func snapcast(_ method: String, _ p: RPCParams, peer: HubRPCPeer) async throws -> OrderedJSON {
        do {
            return try await snapcastCall(method, p, peer: peer)
        } catch let error as HubRPCError {
            throw error.snapcastDetail != nil || error.name == nil && error.code > 0 ? error : HubRPCError(snapcast: error.code, error.message)
        } catch let error as HubError {
            switch error.code {
            case .deviceNotFound: throw Snapcast.notFound("Client")
            case .missingParameter, .malformedParameter, .malformedQuery: throw Snapcast.invalid(error.message)
            default: throw Snapcast.cannot(error.message)
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Snapcast.cannot("\(error)")
        }
    }

    func snapcastCall(_ method: String, _ p: RPCParams, peer: HubRPCPeer) async throws -> OrderedJSON {
        switch method {
        case "Server.GetRPCVersion":
            return .object([("major", .int(2)), ("minor", .int(0)), ("patch", .int(0))])
        case "Server.GetStatus":
            return .object([("server", try await snapcastServer())])
        case "Server.DeleteClient":
            let d = try await snapcastClient(p)
            throw Snapcast.cannot("speaker \(d.deviceID) stays: the hub keeps every speaker it was started with and reconnects one that is off")
        case "Client.GetStatus":
            let d = try await snapcastClient(p)
            let mutes = (try? await speakers.mutes()) ?? [:]
            return .object([("client", Snapcast.client(d, muted: mutes[d.deviceID] ?? false))])
        case "Client.SetVolume":
            let d = try await snapcastClient(p)
            guard case let .object(fields) = try p.value("volume") else { throw Snapcast.invalid("params.volume must be an object {percent, muted}") }
            let v = RPCParams(fields: fields)
            var percent: Int?, muted: Bool?
            if v.has("percent") {
                guard case let .int(n) = try v.value("percent"), (0...100).contains(n) else {
                    throw Snapcast.invalid("params.volume.percent must be a whole number in 0...100")
                }
                percent = n
            }
            if v.has("muted") {
                guard case let .bool(b) = try v.value("muted") else { throw Snapcast.invalid("params.volume.muted must be true or false") }
                muted = b
            }
            guard percent != nil || muted != nil else { throw Snapcast.invalid("params.volume needs percent or muted") }
            _ = try session(for: peer)
            _ = try await device(d.deviceID)
            if let percent { try await speakers.setVolume(Snapcast.volume(ofPercent: percent), of: d.deviceID) }
            if let muted { try await speakers.setMute(muted, of: d.deviceID) }
            await announceVolumes(of: [d.deviceID], except: peer)
            let now = try await known(d.deviceID)
            let mutes = (try? await speakers.mutes()) ?? [:]
            return .object([("volume", Snapcast.volumeJSON(volume: now.volume, muted: mutes[d.deviceID] ?? muted ?? false))])
        case "Client.SetName":
            let d = try await snapcastClient(p)
            guard case let .string(name) = try p.value("name") else { throw Snapcast.invalid("params.name must be a string") }
            guard !name.isEmpty else { throw Snapcast.invalid("params.name must not be empty: an HKWirelessHD speaker always has a name") }
            _ = try session(for: peer)
            _ = try await device(d.deviceID)
            try await speakers.rename(d.deviceID, to: name)
            events.publish(HubNotification("Client.OnNameChanged", .object([("id", .string(String(d.deviceID))), ("name", .string(name))]),
                                           except: peer.key))
            return .object([("name", .string(name))])
        case "Client.SetLatency":
            _ = try await snapcastClient(p)
            guard case let .int(latency) = try p.value("latency") else { throw Snapcast.invalid("params.latency must be a whole number of ms") }
            // A speaker's latency is 0 and stays so: setting 0 (a client restoring what it read) changes nothing.
            guard latency == 0 else {
                throw Snapcast.cannot("an HKWirelessHD speaker has no latency setting; a Tuneup receiver takes one at its start (tuneup speaker receive --latency-ms)")
            }
            return .object([("latency", .int(0))])
        case "Group.GetStatus":
            let g = try await snapcastGroup(p)
            let mutes = (try? await speakers.mutes()) ?? [:]
            return .object([("group", Snapcast.group(g, mutes: mutes))])
        case "Group.SetMute":
            let g = try await snapcastGroup(p)
            guard case let .bool(mute) = try p.value("mute") else { throw Snapcast.invalid("params.mute must be true or false") }
            _ = try session(for: peer)
            if let off = g.members.first(where: { !$0.connected }) { throw unavailable(off) }
            for m in g.members { try await speakers.setMute(mute, of: m.deviceID) }
            events.publish(HubNotification("Group.OnMute", .object([("id", .string(g.id)), ("mute", .bool(mute))]), except: peer.key))
            await announceVolumes(of: g.members.map(\.deviceID), except: peer)
            return .object([("mute", .bool(mute))])
        case "Group.SetStream":
            let g = try await snapcastGroup(p)
            guard case let .string(stream) = try p.value("stream_id") else { throw Snapcast.invalid("params.stream_id must be a string") }
            guard stream == Snapcast.streamID else { throw Snapcast.notFound("Stream") }
            events.publish(HubNotification("Group.OnStreamChanged", .object([("id", .string(g.id)), ("stream_id", .string(stream))]),
                                           except: peer.key))
            return .object([("stream_id", .string(stream))])
        case "Group.SetClients":
            let g = try await snapcastGroup(p)
            guard case let .array(items) = try p.value("clients"), items.count <= HubRequest.maxDeviceIDs else {
                throw Snapcast.invalid("params.clients must be an array of at most \(HubRequest.maxDeviceIDs) client ids")
            }
            let list = try await speakers.devices()
            var ids: [UInt64] = []
            for item in items {
                guard let id = RPCParams.id(item), list.contains(where: { $0.deviceID == id }) else { throw Snapcast.notFound("Client") }
                if !ids.contains(id) { ids.append(id) }
            }
            _ = try session(for: peer)
            // A speaker on its own has no group name: the group it grows into is named after it.
            try await setGroup(g.isNamed ? g.name : g.members[0].deviceName, members: ids)
            return .object([("server", try await announceServer(except: peer))])
        case "Group.SetName":
            let g = try await snapcastGroup(p)
            guard case let .string(name) = try p.value("name") else { throw Snapcast.invalid("params.name must be a string") }
            _ = try session(for: peer)
            if g.isNamed, name.isEmpty {
                try await setGroup(g.name, members: [])  // no name: the speakers are on their own again
            } else if name != g.name {
                try await setGroup(name, members: g.members.map(\.deviceID))
            }
            events.publish(HubNotification("Group.OnNameChanged", .object([("id", .string(g.id)), ("name", .string(name))]), except: peer.key))
            _ = try await announceServer(except: peer)  // a speaker on its own that got a name is a group with a new id
            return .object([("name", .string(name))])
        case "Stream.Control":
            try snapcastStream(p)
            guard case let .string(command) = try p.value("command") else { throw Snapcast.invalid("params.command must be a string") }
            var args = RPCParams(fields: [])
            if p.has("params") {
                guard case let .object(fields) = try p.value("params") else { throw Snapcast.invalid("params.params must be an object") }
                args = RPCParams(fields: fields)
            }
            try await streamControl(command, args, peer: peer)
            return .string("ok")
        default:  // "Stream.SetProperty"
            try snapcastStream(p)
            _ = try p.value("property")
            throw Snapcast.cannot("the hub's stream has no settable property (its volume is each client's: Client.SetVolume)")
        }
    }

    /// `Stream.Control`'s commands on the player: play (resume what is paused), pause, playPause, stop, setPosition
    /// (`params.position` s) and seek (`params.offset` s from here); next and previous are refused as snapserver refuses
    /// a stream that cannot.
    func streamControl(_ command: String, _ args: RPCParams, peer: HubRPCPeer) async throws {
        let playback = await player.playback()
        func cannot(_ property: String) -> HubRPCError { HubRPCError(4, "Stream property \(property) is false") }
        func resume() async throws {
            guard playback.state == .paused, case let .media(item)? = playback.item else { throw cannot("canPlay") }
            _ = try await perform(.resumeHubMedia(persistentID: item.persistentID, .session), for: peer)
        }
        switch command {
        case "play": try await resume()
        case "pause":
            guard playback.state == .playing else { throw cannot("canPause") }
            _ = try await perform(.pausePlay, for: peer)
        case "playPause":
            if playback.state == .playing { _ = try await perform(.pausePlay, for: peer) } else { try await resume() }
        case "stop": _ = try await perform(.stopPlay, for: peer)
        case "setPosition", "seek":
            guard playback.state == .playing || playback.state == .paused, Snapcast.isMedia(playback) else { throw cannot("canSeek") }
            let key = command == "seek" ? "offset" : "position"
            let value: Double
            switch try args.value(key) {
            case let .int(i): value = Double(i)
            case let .double(d): value = d
            default: throw Snapcast.invalid("params.params.\(key) must be a number of seconds")
            }
            let target = command == "seek" ? Self.seconds(playback.elapsed ?? .zero) + value : value
            try await seek(to: .milliseconds(Int64((max(0, min(86400, target)) * 1000).rounded(.down))), for: peer)
        case "next": throw cannot("canGoNext")
        case "previous": throw cannot("canGoPrevious")
        default: throw Snapcast.invalid("params.command '\(HubQuery.shown(command))' is none of play, pause, playPause, stop, next, previous, seek, setPosition")
        }
    }

    /// `params.id` as a known speaker (else snapserver's "Client not found").
    func snapcastClient(_ p: RPCParams) async throws -> HubDevice {
        guard case let .string(text) = try p.value("id") else { throw Snapcast.invalid("params.id must be a string") }
        guard let id = HubRequest.decimal(text), let d = try await speakers.devices().first(where: { $0.deviceID == id }) else {
            throw Snapcast.notFound("Client")
        }
        return d
    }

    /// `params.id` as a group (else "Group not found").
    func snapcastGroup(_ p: RPCParams) async throws -> Snapcast.Group {
        guard case let .string(id) = try p.value("id") else { throw Snapcast.invalid("params.id must be a string") }
        guard let g = Snapcast.groups(try await speakers.devices()).first(where: { $0.id == id }) else { throw Snapcast.notFound("Group") }
        return g
    }

    /// `params.id` names the one stream (else "Stream not found").
    func snapcastStream(_ p: RPCParams) throws {
        guard case let .string(id) = try p.value("id") else { throw Snapcast.invalid("params.id must be a string") }
        guard id == Snapcast.streamID else { throw Snapcast.notFound("Stream") }
    }

    /// `Server.GetStatus`'s `server` now.
    func snapcastServer() async throws -> OrderedJSON {
        let list = try await speakers.devices()
        let mutes = (try? await speakers.mutes()) ?? [:]
        return Snapcast.server(list, mutes: mutes, playback: await player.playback(), host: host)
    }

    /// `Server.OnUpdate` with the server as it is now (the groups changed); returns it. The client whose request
    /// changed them has the server in its answer.
    func announceServer(except: HubRPCPeer) async throws -> OrderedJSON {
        let server = try await snapcastServer()
        events.publish(HubNotification("Server.OnUpdate", .object([("server", server)]), except: except.key))
        return server
    }

    /// A speaker as a Snapcast client now (for `Client.OnConnect` and `Client.OnDisconnect`); nil when unknown.
    func snapcastClientJSON(_ id: UInt64) async -> OrderedJSON? {
        guard let d = try? await speakers.devices().first(where: { $0.deviceID == id }) else { return nil }
        let mutes = (try? await speakers.mutes()) ?? [:]
        return Snapcast.client(d, muted: mutes[id] ?? announcedVolumes[id]?.muted ?? false)
    }
}
