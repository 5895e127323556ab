import Glibc
import Transport

/// The mapping from Bluetooth socket errors to one-line `TransportError`s. Every message starts with the caller's
/// context ("cannot connect to bt:00:AA:01:00:00:00:5") and names the cause in plain words. Internal.
enum BluetoothErrors {
    /// What a host without AF_BLUETOOTH (errno 97) reports.
    static let noKernelSupport = "no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)"

    /// A failed `socket(AF_BLUETOOTH, …)`.
    static func socketError(_ e: Int32, context: String, protocolName: String = "RFCOMM") -> TransportError {
        switch e {
        case EAFNOSUPPORT:
            return TransportError(.unsupported, "\(context): \(noKernelSupport)", errno: e)
        case EPROTONOSUPPORT, ESOCKTNOSUPPORT, EPROTOTYPE:
            return TransportError(
                .unsupported, "\(context): this kernel's Bluetooth stack has no \(protocolName) support (is the \(protocolName.lowercased()) module loaded?)",
                errno: e)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "\(context): permission denied opening a Bluetooth socket", errno: e)
        default:
            return TransportError(.io, "\(context): cannot create a Bluetooth socket: \(POSIX.describe(e))", errno: e)
        }
    }

    /// A failed adapter ioctl (HCIGETDEVLIST / HCIGETDEVINFO).
    static func adapterError(_ e: Int32, adapter: String?, context: String) -> TransportError {
        switch e {
        case ENODEV:
            return TransportError(.notFound, "\(context): no Bluetooth adapter \(adapter ?? "found")", errno: e)
        case EAFNOSUPPORT:
            return TransportError(.unsupported, "\(context): \(noKernelSupport)", errno: e)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "\(context): permission denied reading Bluetooth adapters", errno: e)
        default:
            return TransportError(.io, "\(context): cannot read Bluetooth adapters: \(POSIX.describe(e))", errno: e)
        }
    }

    /// A failed RFCOMM `bind`/`connect` (or its asynchronous completion, SO_ERROR) towards `address`, `channel`.
    static func connectError(_ e: Int32, address: BluetoothAddress, channel: UInt8, context: String) -> TransportError {
        switch e {
        case ECONNREFUSED:
            return TransportError(.connectionRefused, "\(context): no service on RFCOMM channel \(channel)", errno: e)
        case EHOSTDOWN:
            return TransportError(.notFound, "\(context): \(address) is not in range or not connectable (page timeout)", errno: e)
        case ETIMEDOUT:
            return TransportError(.timedOut, "\(context): \(address) did not answer (connection timed out)", errno: e)
        case EHOSTUNREACH, ENETUNREACH, ENETDOWN:
            return TransportError(.notFound, "\(context): \(noRouteReason())", errno: e)
        case ENODEV, EADDRNOTAVAIL:
            return TransportError(.notFound, "\(context): the local Bluetooth adapter is not available", errno: e)
        case EAFNOSUPPORT:
            return TransportError(.unsupported, "\(context): \(noKernelSupport)", errno: e)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "\(context): permission denied (security or pairing required?)", errno: e)
        case EBUSY, EALREADY, EADDRINUSE:
            return TransportError(.busy, "\(context): the link is busy (\(POSIX.describe(e)))", errno: e)
        case ECONNRESET, ECONNABORTED:
            return TransportError(.io, "\(context): \(address) dropped the connection while it was being set up (\(POSIX.describe(e)))", errno: e)
        default:
            return TransportError(.io, "\(context): \(POSIX.describe(e))", errno: e)
        }
    }

    /// A failed SDP query (L2CAP PSM 1) towards `address`.
    static func sdpError(_ e: Int32, address: BluetoothAddress, context: String) -> TransportError {
        switch e {
        case ECONNREFUSED:
            return TransportError(
                .connectionRefused,
                "\(context): \(address) has no SDP server (connection refused); name the RFCOMM channel: bt:\(address):CHANNEL",
                errno: e)
        case EPROTONOSUPPORT, ESOCKTNOSUPPORT:
            return socketError(e, context: context, protocolName: "L2CAP")
        case ETIMEDOUT:
            return TransportError(.timedOut, "\(context): \(address) did not answer the SDP query (timed out)", errno: e)
        default:
            return connectError(e, address: address, channel: 0, context: context)
        }
    }

    /// Why no route exists: no adapter at all, or none powered up.
    static func noRouteReason() -> String {
        guard let adapters = try? BluetoothAdapters.list() else { return "no Bluetooth adapter is available" }
        if adapters.isEmpty { return "no Bluetooth adapter found" }
        if !adapters.contains(where: \.isUp) {
            return "no Bluetooth adapter is up (\(adapters.map(\.name).joined(separator: ", ")) down)"
        }
        return "no route to the device (is the chosen adapter up?)"
    }
}
