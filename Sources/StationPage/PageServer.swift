import Failure
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Support
import Transport
import WebServing

/// The errors of the operator page and the line dashboard.
public enum PageErrors: ErrorDomain {
    public static func category(of code: PageError.Code) -> FailureCategory {
        switch code {
        case .cannotServe, .unreachable: .connection
        default: .usage
        }
    }
}

public typealias PageError = CodedFailure<PageErrors>

extension ErrorCodeIn where Domain == PageError {
    /// A `--ui` / `--listen` address that is not HOST:PORT.
    public static var badAddress: Self { Self(rawValue: "bad-address") }
    /// The address cannot be bound (in use, not an address of this machine, no permission).
    public static var cannotServe: Self { Self(rawValue: "cannot-serve") }
    /// The line's database cannot be read.
    public static var unreachable: Self { Self(rawValue: "unreachable") }
}

/// `HOST:PORT` or `[IPv6]:PORT` with a port 0...65535 (0: a free port).
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) { (self.host, self.port) = (host, port) }

    /// Parses `text`; `option` names the option in the error (`--ui`, `--listen`).
    public init(parsing text: String, option: String) throws {
        do {
            let endpoint = try ListenEndpoint(parsing: text, option: option)  // the one parser of listen options
            (host, port) = (endpoint.host, Int(endpoint.port))
        } catch {
            throw PageError(.badAddress, error.message)
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Serves one page (`GET /`, a self-contained HTML document with the state as it is), the state as JSON
/// (`GET /state`) and its pushed updates (`GET /ws`, a WebSocket: one text message per change, coalesced for a
/// page that reads slowly). The browser never polls.
public final class PageServer: Sendable {
    public let host: String
    public let port: Int
    private let sections: Sections
    private let server: WebServer

    private init(host: String, sections: Sections, server: WebServer) {
        (self.host, self.port, self.sections, self.server) = (host, server.port, sections, server)
    }

    /// `http://HOST:PORT/`.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/" }

    /// Starts serving `sections` on `address`, the page made by `page` (given the state as a JSON message), and
    /// returns once the server listens.
    /// - Throws: `PageError(.cannotServe)` when the address cannot be bound.
    /// `applied`: called with the `changes` count of each message a page acknowledges (its script does once the
    /// message is in the DOM).
    public static func start(
        _ sections: Sections, on address: ListenAddress, serverName: String, logger: Logger? = nil,
        applied: (@Sendable (Int) -> Void)? = nil,
        answer: (@Sendable (_ prompt: Int, _ text: String) async -> Void)? = nil,
        signIn: (@Sendable (_ name: String?) async -> Void)? = nil,
        image: (@Sendable (_ name: String) async -> (Data, String)?)? = nil,
        page: @escaping @Sendable (_ initialState: String) -> String
    ) async throws -> PageServer {
        var log = logger ?? Logger(label: "tuneup.page")
        if logger == nil { log.logLevel = .critical }
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.get("/") { _, _ -> Response in
            respond(page(sections.fullMessage()), type: "text/html; charset=utf-8")
        }
        router.get("/state") { _, _ -> Response in
            respond(sections.fullMessage(), type: "application/json; charset=utf-8")
        }
        if let image {
            router.get("/image/:name") { _, context -> Response in
                guard let name = context.parameters.get("name"), let (data, type) = await image(name) else {
                    return Response(status: .notFound)
                }
                var headers = HTTPFields()
                headers[.contentType] = type
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
            }
        }
        let handlers = WebSocketHandlers()
        router.ws("/ws") { inbound, outbound, _ in
            try await handlers.run {
                try await serve(sections, inbound: inbound, outbound: outbound, applied: applied, answer: answer, signIn: signIn)
            }
        }
        do {
            let server = try await WebServer.start(router, host: address.host, port: address.port, serverName: serverName,
                                                webSocketHandlers: handlers, logger: log)
            return PageServer(host: address.host, sections: sections, server: server)
        } catch is WebServer.StoppedBeforeListening {
            throw PageError(.cannotServe, "the page on \(address) stopped before it listened")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw PageError(.cannotServe, "cannot serve the page on \(address): \(Self.describe(error))")
        }
    }

    /// A bind failure in one line ("address already in use", not NIO's whole error value): WebServing's, as the hub's.
    static func describe(_ error: any Error) -> String {
        BindFailure.reason(error)
    }

    static func respond(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// One page's WebSocket: everything at once, then every change as it comes (coalesced while the page reads
    /// slowly), until the page goes away or the server stops.
    static func serve(_ sections: Sections, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
                      applied: (@Sendable (Int) -> Void)? = nil, answer: (@Sendable (Int, String) async -> Void)? = nil,
                      signIn: (@Sendable (String?) async -> Void)? = nil,
                      stalled: Duration = .seconds(10)) async throws {
        let (id, wakeups) = sections.subscribe()
        defer { sections.unsubscribe(id) }
        // The server stops: the page's stream ends (also when it stopped before this subscription, after `stop()`'s
        // `finishAll`), the socket closes with a close frame.
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The page sends acknowledgements (`{"applied":CHANGES}`) and the operator's answers (`{"answer":
                // {"prompt":ID,"value":TEXT}}`, checked by the station: a refusal comes back on the tile), an operator
                // signing in or out (`{"signIn":{"name":NAME}}`, `{"signIn":{"name":null}}`); reading also tells when it
                // closes.
                group.addTask {
                    for try await message in inbound.messages(maxSize: 4096) {
                        guard case let .text(text) = message else { continue }
                        if let answer, let given = try? JSONDecoder().decode(AnswerMessage.self, from: Data(text.utf8)).answer {
                            await answer(given.prompt, given.value)
                            continue
                        }
                        if let signIn, let given = try? JSONDecoder().decode(SignInMessage.self, from: Data(text.utf8)).signIn {
                            await signIn(given.name)
                            continue
                        }
                        guard let applied, let range = text.range(of: "\"applied\":") else { continue }
                        if let changes = Int(text[range.upperBound...].prefix { $0.isNumber }) { applied(changes) }
                    }
                }
                group.addTask {
                    var cursor: [String: Int] = [:]
                    for await _ in wakeups {
                        guard let message = sections.message(since: &cursor) else { continue }
                        // A page that takes no data for `stalled` (its socket's buffers full) is dropped: it reconnects
                        // and gets everything again, nothing waits for it meanwhile.
                        try await withDeadline(stalled, late: { PageError(.cannotServe, "a page took nothing for \(stalled)") }) {
                            try await outbound.write(.text(message))
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            sections.unsubscribe(id)
        }
    }

    /// Pages connected now.
    public var connectedPages: Int { sections.subscriberCount }

    /// Connections open now (pages, their WebSockets, idle ones).
    public var openConnections: Int { server.openConnections }

    /// Stops serving and returns when the server has closed, within about a second whatever the browsers do:
    /// connected pages get a close frame, idle connections are closed (see `WebServer`).
    public func stop() async {
        sections.finishAll()
        await server.stop()
    }

    /// Returns when the server ends (an error, or `stop()`).
    public func wait() async throws { try await server.wait() }
}

/// An operator signing in on the page (`{"signIn": {"name": NAME}}`) or out (`{"signIn": {"name": null}}`).
struct SignInMessage: Decodable {
    struct Given: Decodable {
        var name: String?
    }
    var signIn: Given
}

/// An answer from the page: `{"answer": {"prompt": ID, "value": TEXT}}`.
struct AnswerMessage: Decodable {
    struct Given: Decodable {
        var prompt: Int
        var value: String
    }
    var answer: Given
}
