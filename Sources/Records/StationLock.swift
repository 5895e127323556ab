import Foundation
import Support

#if canImport(Glibc)
import Glibc
#endif

/// A live station's hold on its name in one records file: while it is held, no other station of that name can start
/// on that file (and close its open runs as a killed station's).
///
/// The hold is an open-file-description lock (`F_OFD_SETLK`) on one byte of a file next to the records
/// (`RECORDS-stations`), at an offset made from the station's name: the kernel drops it when the process ends, however
/// it ends, so a killed station's runs are recovered at once by the next start, and a live one's never are. Two stores
/// in one process conflict as two processes do (an OFD lock belongs to the open file, not to the process).
public final class StationLock: Sendable {
    /// The station whose name is held.
    public let station: String
    /// The file that holds the locks.
    public let path: String
    private let fd: Int32

    private init(station: String, path: String, fd: Int32) {
        (self.station, self.path, self.fd) = (station, path, fd)
    }

    deinit { Glibc.close(fd) }

    /// The lock file of the records at `recordsPath`.
    public static func lockFile(forRecordsAt recordsPath: String) -> String { recordsPath + "-stations" }

    /// Holds `station` on the records at `recordsPath` until the returned lock is released (or the process ends).
    ///
    /// Throws `RecordsError` `.stationLive` ("station NAME is running already on RECORDS ...") when another live
    /// station of that name holds it, `.cannotOpen` when the lock file cannot be created. Runs on the blocking executor.
    public static func acquire(station: String, recordsPath: String) async throws -> StationLock {
        try await Blocking.perform("station lock") { try acquireNow(station: station, recordsPath: recordsPath) }
    }

    private static func acquireNow(station: String, recordsPath: String) throws -> StationLock {
        let path = lockFile(forRecordsAt: recordsPath)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let e = errno
            throw RecordsError(.cannotOpen, "cannot hold station \(station) on \(recordsPath): cannot open \(path): \(String(cString: strerror(e)))")
        }
        var region = flock()
        region.l_type = Int16(F_WRLCK)
        region.l_whence = Int16(SEEK_SET)
        region.l_start = offset(of: station)
        region.l_len = 1
        region.l_pid = 0
        guard withUnsafeMutablePointer(to: &region, { fcntl(fd, ofdSetLock, $0) }) == 0 else {
            let e = errno
            Glibc.close(fd)
            if e == EAGAIN || e == EACCES {
                throw RecordsError(
                    .stationLive,
                    "station \(station) is running already on \(recordsPath): stop it first, or name this one otherwise with --station")
            }
            throw RecordsError(.cannotOpen, "cannot hold station \(station) on \(recordsPath): \(path): \(String(cString: strerror(e)))")
        }
        return StationLock(station: station, path: path, fd: fd)
    }

    /// `F_OFD_SETLK` (Linux 3.15; not exported by Swift's Glibc module).
    private static let ofdSetLock: Int32 = 37

    /// The byte that stands for `station`: FNV-1a of its UTF-8, within the positive range of `off_t`.
    static func offset(of station: String) -> off_t {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in station.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return off_t(hash & 0x3FFF_FFFF_FFFF_FFFF)
    }
}
