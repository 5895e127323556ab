import CBluetooth
import Glibc
import Transport

// Conversions between `BluetoothAddress` (bytes in written order) and the kernel's structures, where a `bdaddr_t`
// is stored little-endian: b[0] is the LAST byte of "AA:BB:CC:DD:EE:FF".

extension BluetoothAddress {
    /// The address as the kernel stores it (`bdaddr_t`, least significant byte first).
    var kernelAddress: bdaddr_t {
        let w = bytes.count == 6 ? bytes : [UInt8](repeating: 0, count: 6)
        return bdaddr_t(b: (w[5], w[4], w[3], w[2], w[1], w[0]))
    }

    /// The address in a kernel `bdaddr_t` (least significant byte first). Nil never happens in practice (six bytes
    /// always format to a valid address); it keeps the conversion free of traps.
    init?(kernelAddress a: bdaddr_t) {
        self.init(Self.format(written: [a.b.5, a.b.4, a.b.3, a.b.2, a.b.1, a.b.0]))
    }

    /// `AA:BB:CC:DD:EE:FF` from six bytes in written order.
    static func format(written bytes: [UInt8]) -> String {
        bytes.map { b in
            let s = String(b, radix: 16, uppercase: true)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: ":")
    }

    /// 00:00:00:00:00:00 (`BDADDR_ANY`): "any local adapter" when binding.
    static var anyKernelAddress: bdaddr_t { bdaddr_t(b: (0, 0, 0, 0, 0, 0)) }

    /// 00:00:00:FF:FF:FF (`BDADDR_LOCAL`): libbluetooth's name for the local SDP server (bluetoothd's Unix socket).
    static var localKernelAddress: bdaddr_t { bdaddr_t(b: (0, 0, 0, 0xFF, 0xFF, 0xFF)) }
}

/// A `struct sockaddr_rc` (family, bdaddr, channel) as the RFCOMM socket calls take it. Internal.
///
/// The C structure is 10 bytes (`sizeof`); Swift's `MemoryLayout.size` is 9 (no tail padding), and the kernel's
/// `connect` rejects a length below 10 with EINVAL — so the bytes live in a 10-byte buffer and `length` is the stride.
struct RFCOMMSocketAddress: Sendable, Equatable {
    var address: bdaddr_t
    var channel: UInt8

    /// The length passed to bind/connect: sizeof(struct sockaddr_rc).
    static let length = socklen_t(MemoryLayout<sockaddr_rc>.stride)

    init(address: bdaddr_t, channel: UInt8) {
        self.address = address
        self.channel = channel
    }

    /// Decodes a socket address returned by accept/getsockname; nil if it is not AF_BLUETOOTH or too short.
    init?(_ raw: UnsafeRawBufferPointer) {
        guard raw.count >= MemoryLayout<sockaddr_rc>.size,
              Int32(raw.loadUnaligned(as: sa_family_t.self)) == AF_BLUETOOTH else { return nil }
        let rc = raw.loadUnaligned(as: sockaddr_rc.self)
        address = rc.rc_bdaddr
        channel = rc.rc_channel
    }

    /// The encoded bytes: 2 bytes family (host order), 6 bytes bdaddr, 1 byte channel, 1 byte padding.
    var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(Self.length))
        var rc = sockaddr_rc()
        rc.rc_family = sa_family_t(AF_BLUETOOTH)
        rc.rc_bdaddr = address
        rc.rc_channel = channel
        out.withUnsafeMutableBytes { $0.storeBytes(of: rc, as: sockaddr_rc.self) }
        return out
    }

    /// Calls `body` with a `sockaddr` pointer and `length`.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), Self.length)
        }
    }

    static func == (lhs: RFCOMMSocketAddress, rhs: RFCOMMSocketAddress) -> Bool {
        lhs.bytes == rhs.bytes
    }
}
