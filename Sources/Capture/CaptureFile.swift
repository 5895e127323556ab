import Failure
import Glibc
import Support

/// Reading a capture file (off the cooperative pool).
public enum CaptureFile {
    /// The largest capture `read` loads (a capture is read whole).
    public static let maxSize = 1 << 30

    /// Reads and parses the capture at `path`. Throws `OutputFileError`-like local errors as `CaptureReadError`
    /// (exit 74: the file cannot be read) and `CaptureError` (exit 65: it is not a whole pcapng capture).
    public static func read(path: String) async throws -> CaptureContents {
        let bytes = try await Blocking.perform("capture-read") { () throws -> [UInt8] in try readAll(path) }
        return try PcapNG.parse(bytes)
    }

    /// The bytes of the regular file at `path` (blocking: call it on the blocking executor).
    static func readAll(_ path: String) throws(CaptureReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw CaptureReadError(.unreadable, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { _ = close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw CaptureReadError(.unreadable, "cannot read \(path): not a regular file")
        }
        guard Int(info.st_size) <= maxSize else {
            throw CaptureReadError(.unreadable, "cannot read \(path): \(info.st_size) bytes is above the \(maxSize >> 20) MiB a capture may have")
        }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CaptureReadError(.unreadable, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return out }
            out += chunk[0..<n]
        }
    }
}

/// A capture file that cannot be read (exit 74).
public typealias CaptureReadError = CodedFailure<CaptureReadErrors>

public enum CaptureReadErrors: ErrorDomain {
    public static func category(of code: CaptureReadError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == CaptureReadError {
    public static let unreadable = Self(rawValue: "unreadable")
}
