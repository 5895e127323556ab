import Foundation

/// Where CFX messages go: `amqp://[USER[:PASSWORD]@]HOST[:PORT]/ADDRESS` (port 5672 by default). ADDRESS is the
/// node on the broker, everything after the slash that ends the host (RabbitMQ 3.x: `amqp://HOST//queue/NAME`, a
/// durable queue it declares).
public struct AMQPAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var address: String
    public var user: String?
    public var password: String?

    public init(host: String, port: Int = 5672, address: String, user: String? = nil, password: String? = nil) {
        (self.host, self.port, self.address, self.user, self.password) = (host, port, address, user, password)
    }

    /// Parses the URL; throws `badURL` with one line saying what is wrong.
    public init(parsing text: String) throws(CFXError) {
        let form = "amqp://HOST[:PORT]/ADDRESS"
        guard text.hasPrefix("amqp://") else {
            if text.hasPrefix("amqps://") { throw CFXError(.badURL, "--cfx \(text): amqps (TLS) is not supported; use \(form)") }
            throw CFXError(.badURL, "--cfx \(text): expected \(form)")
        }
        let rest = text.dropFirst("amqp://".count)
        guard let slash = rest.firstIndex(of: "/") else { throw CFXError(.badURL, "--cfx \(text): no ADDRESS (expected \(form))") }
        var authority = String(rest[..<slash])
        let path = String(rest[rest.index(after: slash)...])
        guard !path.isEmpty else { throw CFXError(.badURL, "--cfx \(text): no ADDRESS after the host (expected \(form))") }
        guard let decoded = path.removingPercentEncoding,
              !decoded.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw CFXError(.badURL, "--cfx \(text): the ADDRESS has spaces or control characters")
        }
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = String(authority[authority.index(after: at)...])
            if let colon = credentials.firstIndex(of: ":") {
                user = String(credentials[..<colon]).removingPercentEncoding
                password = String(credentials[credentials.index(after: colon)...]).removingPercentEncoding
            } else {
                user = String(credentials).removingPercentEncoding
            }
            if user?.isEmpty ?? true { throw CFXError(.badURL, "--cfx \(text): an empty user name") }
        }
        var hostPart = authority
        var portValue = 5672
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw CFXError(.badURL, "--cfx \(text): an unclosed [ in the host") }
            hostPart = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { throw CFXError(.badURL, "--cfx \(text): a bad port") }
                portValue = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = String(authority[..<colon])
            guard let p = Int(authority[authority.index(after: colon)...]) else {
                throw CFXError(.badURL, "--cfx \(text): the port must be a number 1...65535")
            }
            portValue = p
        }
        guard (1...65535).contains(portValue) else { throw CFXError(.badURL, "--cfx \(text): the port must be a number 1...65535") }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == " " || $0 == "/" || $0 == "?" || $0 == "#" }) else {
            throw CFXError(.badURL, "--cfx \(text): no HOST (expected \(form))")
        }
        host = hostPart
        port = portValue
        address = decoded
    }

    /// The URL without its password.
    public var description: String {
        let who = user.map { "\($0)@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "amqp://\(who)\(shownHost):\(port)/\(address)"
    }
}
