#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// File reading and writing for the `load`/`save` helpers; errors are `.io` and name the file.
public enum FileAccess {
    /// The largest file any helper reads (no image, key or manifest comes near it).
    public static let defaultLimit = 64 * 1024 * 1024

    /// Reads a whole file. Throws `.io` ("PATH: cannot read: No such file or directory") when it cannot be opened
    /// or read, and `.tooLarge` when it is bigger than `limit` bytes.
    public static func read(_ path: String, limit: Int = defaultLimit) throws(ImageError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ImageError(.io, "\(path): cannot read: \(errnoText())") }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ImageError(.io, "\(path): cannot read: \(errnoText())")
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
            if result.count > limit {
                throw ImageError(.tooLarge, "\(path): is larger than \(limit) bytes; not an image, key or manifest")
            }
        }
        return result
    }

    /// Writes `bytes` to `path` (replacing it) and sets its permissions to `mode`. Throws `.io` naming the file.
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o644) throws(ImageError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw ImageError(.io, "\(path): cannot write: \(errnoText())") }
        _ = fchmod(fd, mode_t(mode))  // also when the file existed (O_CREAT's mode applies only to new files)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in posixWrite(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                let why = errnoText()
                close(fd)
                throw ImageError(.io, "\(path): cannot write: \(why)")
            }
            done += n
        }
        guard close(fd) == 0 else { throw ImageError(.io, "\(path): cannot write: \(errnoText())") }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// libc's read(2), outside `FileAccess` so the name is not shadowed.
private func posixRead(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }

/// libc's write(2), outside `FileAccess` so the name is not shadowed.
private func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }
