/// Where a server of the tools listens: a host and a port 0...65535 (0: a free port). The one parser of the listen
/// options: `HOST:PORT` / `[IPv6]:PORT` (the operator page's --ui, the line dashboard's and the hub's --listen) and
/// `tcp:HOST:PORT` (a simulated speaker's and a receiver's --listen, a device address of the tcp scheme).
public struct ListenEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) { (self.host, self.port) = (host, port) }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`; `option` names the option in the error (one line, `.invalidAddress`: a
    /// usage error).
    public init(parsing text: String, option: String) throws(TransportError) {
        var host = Substring(text)
        guard let colon = host.lastIndex(of: ":"), let number = Int(host[host.index(after: colon)...]), let port = UInt16(exactly: number) else {
            throw TransportError(.invalidAddress, "\(option) takes HOST:PORT with a port 0...65535, got '\(text)'")
        }
        host = host[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) else {
            throw TransportError(.invalidAddress, "\(option) takes HOST:PORT, got '\(text)'")
        }
        if host.contains(":"), !text.hasPrefix("[") {
            throw TransportError(.invalidAddress, "\(option): write an IPv6 address in brackets, [ADDRESS]:PORT, got '\(text)'")
        }
        (self.host, self.port) = (String(host), port)
    }

    /// Parses `tcp:HOST:PORT` (`DeviceAddress`'s tcp scheme); anything else is refused in one line naming `option`.
    public init(parsingTCP text: String, option: String) throws(TransportError) {
        guard case let .tcp(host, port)? = try? DeviceAddress(parsing: text) else {
            throw TransportError(.invalidAddress, "\(option) takes tcp:HOST:PORT, got '\(text)'")
        }
        (self.host, self.port) = (host, port)
    }

    /// The host and the port.
    public var parts: (host: String, port: UInt16) { (host, port) }

    /// `HOST:PORT`, an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
