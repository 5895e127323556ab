import Foundation
import Firmware
import LightX
import Support

// What `tuneup bootloader` and `tuneup firmware read` report and do, with their text for people: a program using the
// library reads firmware back and shows a device's status as tuneup does, without writing it again.

extension BootloaderClient.Status {
    /// A table: the mode, whether authenticated, the versions; in the bootloader also its pipelining and secure boot.
    public var text: String {
        let na = "not reported"
        var rows: [(String, String)] = [
            ("Mode", mode),
            ("Authenticated", authenticated.map { $0 ? "yes" : "no" } ?? na),
            ("Application", applicationVersion ?? (mode == "bootloader" ? "none committed" : na)),
        ]
        if mode == "bootloader" {
            rows.insert(("Bootloader", bootloaderVersion ?? na), at: 1)
            rows.append(("Resource", resourceVersion ?? "none"))
            rows.append(("Pipelining", queueDepth.map { "queue of \($0)" + (addressedErase == true ? ", addressed erase" : "") } ?? "no (one request at a time)"))
            rows.append(("Secure boot", secureBootKeyHash.map { "images signed by key \($0.prefix(16))…" + (rollbackFloor.map { ", version \($0) or newer" } ?? "") } ?? "not reported"))
        }
        return TextTable.aligned(rows)
    }
}

/// A flash region read back from the device (`tuneup firmware read`): the bytes, and the report of the read.
public struct FirmwareReadBack: Sendable {
    public var bytes: [UInt8]
    public var report: Report

    /// What was read: the region, the byte count, the file it goes to, its CRC-32/JAMCRC, and whether the device
    /// was taken back to its application.
    public struct Report: Encodable, Sendable, Hashable {
        public var region: String
        public var bytes: Int
        public var file: String
        public var crc: String
        public var returnedToApplication: Bool

        public var text: String { "Read \(bytes) bytes of the \(region) region into \(file) (CRC-32/JAMCRC \(crc))" }
    }
}

extension BootloaderClient {
    /// Reads `region` back: the device is taken to its bootloader if needed, `length` bytes are read (nil: the signed
    /// image's length its header gives, else the whole region), and a device that ran its application is taken back
    /// to it unless `stay`. `file` is only named in the report (the caller writes the bytes).
    public func readBack(_ region: FlashRegion, length: Int?, stay: Bool, file: String) async throws -> FirmwareReadBack {
        let inApplication = try await !isInBootloader()
        try await enter()
        let size: Int
        if let length {
            size = length
        } else {
            size = try await imageLength(in: region) ?? region.maxSize
        }
        let bytes = try await read(region, length: size)
        if inApplication && !stay { try await leave() }
        return FirmwareReadBack(bytes: bytes, report: .init(
            region: region.rawValue, bytes: bytes.count, file: file, crc: String(format: "%08x", CRC32JAMCRC.checksum(bytes)),
            returnedToApplication: inApplication && !stay))
    }
}
