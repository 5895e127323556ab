import Foundation
import NIOCore

/// A server's bind failure in one line, as `tuneup speaker hub` prints it: the system's reason and the address
/// ("address already in use: 127.0.0.1:8080"), not NIO's whole error value (`bind(descriptor:ptr:bytes:)`).
enum BindFailure {
    static func message(_ error: any Error, host: String, port: Int) -> String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "\(reason(error)): \(address)"
    }

    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        let text = "\(error)"
        if let range = text.range(of: "errno: ") ?? text.range(of: "errno ") {
            let digits = text[range.upperBound...].prefix { $0.isNumber }
            if let code = Int32(digits) { return String(cString: strerror(code)).lowercased() }
        }
        return "cannot listen: " + (text.split(separator: "\n").first.map(String.init) ?? text)
    }
}
