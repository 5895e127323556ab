import Foundation
import NIOCore

/// A server's bind failure in one line, the same for every server of the project (the pages, the hub): the system's
/// reason ("address already in use"), not NIO's whole error value (`bind(descriptor:ptr:bytes:)`).
public enum BindFailure {
    /// The system's reason, lower-cased; nil when `error` carries no errno.
    public static func systemReason(_ error: any Error) -> String? {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        let text = "\(error)"
        if let range = text.range(of: "errno: ") ?? text.range(of: "errno ") {
            let digits = text[range.upperBound...].prefix { $0.isNumber }
            if let code = Int32(digits) { return String(cString: strerror(code)).lowercased() }
        }
        return nil
    }

    /// The system's reason, or else the first line of the error's description.
    public static func reason(_ error: any Error) -> String {
        systemReason(error) ?? firstLine(error)
    }

    /// The reason and the address, as `tuneup speaker hub` prints it: "address already in use: 127.0.0.1:8080"
    /// (an IPv6 host in brackets; "cannot listen: ..." when the system gave no reason).
    public static func message(_ error: any Error, host: String, port: Int) -> String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "\(systemReason(error) ?? "cannot listen: " + firstLine(error)): \(address)"
    }

    static func firstLine(_ error: any Error) -> String {
        let text = "\(error)"
        return text.split(separator: "\n").first.map(String.init) ?? text
    }
}
