import Hummingbird
import HummingbirdWebSocket
import NIOCore
import ServiceLifecycle
import SpeakerHubCore
import SpeakerSession
import Support
import Synchronization

/// The JSON-RPC 2.0 control on HTTP (docs/hub.md §8): `POST /jsonrpc` answers one message; a WebSocket on
/// `/jsonrpc` answers each text message and receives the hub's notifications. Both hand the text to `HubAPI.rpc`,
/// the one dispatcher.
public enum HubRPCServer {
    /// A WebSocket message longer than this closes the socket (1009, "message too big"); one longer than
    /// `HubAPI.rpcMaxMessage` is answered with an invalid-request error.
    public static let maxSocketMessage = 1 << 20

    /// The HTTP clients' peers, one per client address: their hub session lives across their POSTs.
    final class Peers: Sendable {
        private let table = Mutex<[String: HubRPCPeer]>([:])

        func peer(for client: String) -> HubRPCPeer {
            table.withLock { t in
                if let p = t[client] { return p }
                // The table is bounded like the sessions: an address beyond 1024 replaces the whole table (its
                // peers' sessions expire on their own).
                if t.count >= 1024 { t = [:] }
                let p = HubRPCPeer(client: client)
                t[client] = p
                return p
            }
        }
    }

    /// `POST /jsonrpc`: the answer (200, JSON), or 204 for notifications only.
    static func post(_ api: HubAPI, request: Request, peer: HubRPCPeer) async -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: HubAPI.rpcMaxMessage)
        } catch {
            let text = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"the message is longer than \(HubAPI.rpcMaxMessage) bytes\"},\"id\":null}"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        guard let answer = await api.rpc(body.readableBytesView, peer: peer) else { return Response(status: .noContent) }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer)))
    }

    /// One WebSocket client: its requests answered in order, the hub's notifications pushed as they come, until it
    /// closes, the server stops, or it takes nothing for `stalled` (then it is dropped: nothing waits for it).
    static func serve(_ api: HubAPI, client: String, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
                      stalled: Duration = .seconds(10)) async throws {
        let peer = HubRPCPeer(client: client)
        let (id, wakeups) = api.events.subscribe(peer: peer.key)
        do {
            // The server stops: the client's stream ends (also when it stopped before this subscription, after
            // `RunningHub.stop()`'s `finishAll`), the socket closes with a close frame.
            try await withGracefulShutdownHandler {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await message in inbound.messages(maxSize: maxSocketMessage) {
                            let bytes: [UInt8] = switch message {
                            case let .text(text): Array(text.utf8)
                            case let .binary(buffer): Array(buffer.readableBytesView)
                            }
                            if let answer = await api.rpc(bytes, peer: peer) { try await write(answer, to: outbound, stalled: stalled) }
                        }
                    }
                    group.addTask {
                        for await _ in wakeups {
                            guard let queued = api.events.take(id) else { break }
                            for notification in queued { try await write(notification.text, to: outbound, stalled: stalled) }
                        }
                        // Dropped (its queue overflowed) or the server stops: the socket closes.
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } onGracefulShutdown: {
                api.events.unsubscribe(id)
            }
        } catch {
            api.events.unsubscribe(id)
            await api.close(peer)
            throw error
        }
        api.events.unsubscribe(id)
        await api.close(peer)
    }

    /// Writes one message, or throws when the client took nothing for `stalled` (its socket's buffers full).
    static func write(_ text: String, to outbound: WebSocketOutboundWriter, stalled: Duration) async throws {
        try await withDeadline(stalled, late: { HubError(.cannotServe, "a JSON-RPC client took nothing for \(stalled)") }) {
            try await outbound.write(.text(text))
        }
    }

    /// Follows the controller's player for the hub's notifications: a state it reached by itself (the end, a stop
    /// by another controller), a playback it stopped as interrupted (every speaker lost, the stream taken over:
    /// `Player.OnInterrupted`, not an end), speakers that get the stream or are lost, and errors (a source that
    /// failed, a speaker's error). Runs until cancelled.
    public static func follow(_ controller: SpeakerController, into api: HubAPI) -> Task<Void, Never> {
        Task {
            guard let events = try? await controller.playerEvents() else { return }
            for await event in events {
                switch event {
                case .stateChanged(.stopped):
                    // Set before the player reports stopped; nil after an end or a stop. Announced ahead of the state.
                    if let interruption = await controller.playbackInterruption {
                        await api.playbackInterrupted(interruption.code == .interrupted ? .takenOver : .speakersLost, message: interruption.message)
                    }
                    await api.playerChanged()
                case .stateChanged, .ended: await api.playerChanged()
                case let .speakerJoined(id): await api.speakerJoined(id)
                case .speakerLost: break  // the hub's speakers report every lost link (ControllerSpeakers, HubAPI.followSpeakers)
                case let .speakerError(id, _, message): await api.announceError(source: "speaker", message: "speaker \(id): \(message)", client: id)
                case let .sourceFailed(seconds, _, message):
                    await api.announceError(source: "source", message: "the source failed after \(Int(seconds)) s: \(message)")
                case .time: break  // the position is pushed on the hub's clock (HubAPI's ticker)
                }
            }
        }
    }
}
