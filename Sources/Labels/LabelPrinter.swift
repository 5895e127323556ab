import Foundation
import Glibc
import Spawn
import Support

/// A label printer's raw TCP port (`tcp:HOST:PORT`, 9100 by convention): the ZPL is sent as is.
public struct PrinterAddress: Sendable, Hashable, CustomStringConvertible, Encodable {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// `tcp:HOST:PORT` or `tcp:HOST` (port 9100); an IPv6 host in brackets.
    public static func parse(_ text: String) throws(LabelError) -> PrinterAddress {
        let bad = LabelError(.unprintable, "label printer '\(text)' is not tcp:HOST[:PORT] (e.g. tcp:192.168.1.40:9100)")
        guard text.hasPrefix("tcp:") else { throw bad }
        var rest = Substring(text.dropFirst(4))
        var host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw bad }
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            rest = rest[colon...]
        } else {
            host = rest
            rest = ""
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == " " }) else { throw bad }
        var port: UInt16 = 9100
        if !rest.isEmpty {
            guard rest.hasPrefix(":"), let p = UInt16(rest.dropFirst()), p > 0 else { throw bad }
            port = p
        }
        return PrinterAddress(host: String(host), port: port)
    }

    public var description: String { host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)" }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// What printing one label did.
public struct PrintedLabel: Sendable, Hashable, Encodable {
    public var serial: String
    /// Files written to the label folder (the ZPL, and the PNG preview).
    public var files: [String]
    /// The printer the ZPL went to.
    public var printer: PrinterAddress?
    /// Why there is no PNG preview (rsvg-convert missing or failed), when a folder was asked for.
    public var previewProblem: String?
}

/// Prints the labels of passed units, one at a time and in order, off the cooperative pool: to a folder (`SERIAL.zpl`
/// and its preview `SERIAL.png`, each written whole) and/or to a printer's raw TCP port.
public final class LabelPrinter: Sendable {
    public let folder: String?
    public let printer: PrinterAddress?
    public let symbology: LabelSymbology
    public let layout: LabelLayout
    /// How long a printer may take to accept the connection and the label.
    public let timeout: Duration
    private let lane = SerialLane("labels")

    public init(folder: String?, printer: PrinterAddress?, symbology: LabelSymbology = .code128,
                layout: LabelLayout = .init(), timeout: Duration = .seconds(5)) {
        self.folder = folder
        self.printer = printer
        self.symbology = symbology
        self.layout = layout
        self.timeout = timeout
    }

    /// Refuses a label folder that is not a directory one can write to (before a unit is touched).
    public static func checkFolder(_ path: String) throws(LabelError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw LabelError(.file, "label folder \(path) does not exist or is not a directory")
        }
        guard access(path, W_OK | X_OK) == 0 else { throw LabelError(.file, "label folder \(path) is not writable") }
    }

    /// Lays out and prints one label, after every label queued before it.
    public func print(_ content: LabelContent) async throws(LabelError) -> PrintedLabel {
        let design = try LabelDesign(content, symbology: symbology, layout: layout)
        return try await lane.perform(unavailable: { LabelError(.file, "no thread to print labels: \($0.message)") }) {
            () throws(LabelError) -> PrintedLabel in try self.output(design)
        }
    }

    /// Queues one label and returns at once (for a caller that must not wait, such as the station's event
    /// listeners); `report` gets what printing it did, on the label thread. `flush()` waits for every queued label.
    public func enqueue(_ content: LabelContent, then report: @escaping @Sendable (Result<PrintedLabel, LabelError>) -> Void) {
        do {
            try lane.submit { [self] in
                report(Result { () throws(LabelError) -> PrintedLabel in
                    try output(LabelDesign(content, symbology: symbology, layout: layout))
                })
            }
        } catch {
            report(.failure(LabelError(.file, "no thread to print labels: \(error.message)")))
        }
    }

    /// Waits until every label queued before it has been printed (or has failed).
    public func flush() async {
        await lane.flush()
    }

    /// Blocking: runs on the lane.
    private func output(_ design: LabelDesign) throws(LabelError) -> PrintedLabel {
        var printed = PrintedLabel(serial: design.content.serial, files: [], printer: nil, previewProblem: nil)
        let zpl = design.zpl
        if let folder {
            let base = folder + "/" + Self.fileName(design.content.serial)
            do {
                try SafeOutput.write(Array(zpl.utf8), to: base + ".zpl")
                printed.files.append(base + ".zpl")
            } catch {
                throw LabelError(.file, "label \(base).zpl: \(error.message)")
            }
            if let png = SVGRasterizer.png(of: design.svg, zoom: 2) {
                do {
                    try SafeOutput.write(png, to: base + ".png")
                    printed.files.append(base + ".png")
                } catch {
                    throw LabelError(.file, "label preview \(base).png: \(error.message)")
                }
            } else {
                printed.previewProblem = SVGRasterizer.tool == nil
                    ? "no PNG preview: rsvg-convert is not installed (Debian: librsvg2-bin)"
                    : "no PNG preview: rsvg-convert failed"
            }
        }
        if let printer {
            try Self.send(Array(zpl.utf8), to: printer, timeout: timeout)
            printed.printer = printer
        }
        return printed
    }

    /// A serial as a file name (`/` becomes `_`; serials hold `A-Z a-z 0-9 - _ . /` only).
    static func fileName(_ serial: String) -> String {
        let name = String(serial.map { $0 == "/" ? "_" : $0 })
        return name.hasPrefix(".") ? "_" + name.dropFirst() : name
    }

    /// Sends `bytes` to a raw printer port and closes the connection. Blocking, bounded by `timeout` per step.
    static func send(_ bytes: [UInt8], to printer: PrinterAddress, timeout: Duration) throws(LabelError) {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let found = getaddrinfo(printer.host, String(printer.port), &hints, &list)
        guard found == 0, let first = list else {
            throw LabelError(.printer, "label printer \(printer): cannot resolve \(printer.host): \(String(cString: gai_strerror(found)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastError = String(cString: strerror(errno)); continue }
            defer { close(fd) }
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else { lastError = String(cString: strerror(errno)); continue }
                guard wait(fd, events: Int16(POLLOUT), milliseconds: milliseconds) else { lastError = "no answer within \(timeout)"; continue }
                var problem: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &problem, &length)
                guard problem == 0 else { lastError = String(cString: strerror(problem)); continue }
            }
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { sent += n; continue }
                if n < 0, errno == EAGAIN || errno == EINTR {
                    guard wait(fd, events: Int16(POLLOUT), milliseconds: milliseconds) else {
                        throw LabelError(.printer, "label printer \(printer) took no data for \(timeout)")
                    }
                    continue
                }
                throw LabelError(.printer, "label printer \(printer) dropped the connection: \(String(cString: strerror(errno)))")
            }
            shutdown(fd, Int32(SHUT_WR))
            return
        }
        throw LabelError(.printer, "label printer \(printer) cannot be reached: \(lastError)")
    }

    private static func wait(_ fd: Int32, events: Int16, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let n = poll(&entry, 1, milliseconds)
            if n < 0, errno == EINTR { continue }
            return n > 0
        }
    }
}
