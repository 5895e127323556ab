import CBluetooth
import Glibc
import Transport

/// What the kernel Bluetooth links (RFCOMM, L2CAP LE) share when they open a connection: the adapter named by the
/// caller, and a non-blocking connect whose completion is waited for on the I/O reactor.
enum BluetoothConnect {
    /// The selector an `adapter` argument names (nil: the kernel picks); a bad name is `.invalidAddress`.
    static func selector(_ adapter: String?, context: String) throws(TransportError) -> AdapterSelector? {
        do {
            return try adapter.map { name throws(TransportError) in try AdapterSelector(parsing: name) }
        } catch {
            throw TransportError(.invalidAddress, "\(context): \(error.message)")
        }
    }

    /// The adapter `selector` names, which must be up (`.notFound` with how to bring it up otherwise).
    static func upAdapter(_ selector: AdapterSelector, context: String) throws(TransportError) -> BluetoothAdapter {
        let chosen = try BluetoothAdapters.adapter(selector, context: context)
        guard chosen.isUp else {
            throw TransportError(.notFound, "\(context): adapter \(chosen.name) is down (bring it up: hciconfig \(chosen.name) up)")
        }
        return chosen
    }

    /// Opens a non-blocking `AF_BLUETOOTH` socket of `type` and `proto`, binds it with `bind` (when given) and connects
    /// it with `connect`, waiting for the connection on the I/O reactor (cancellation ends the wait at once). Returns
    /// the connected descriptor, which the caller owns; no descriptor outlives a failure.
    ///
    /// - Parameters:
    ///   - socketFailure: the error for a socket that cannot be created (errno).
    ///   - failure: the error for a bind or connect that fails (errno).
    static func connectedSocket(
        type: Int32, proto: Int32,
        bind: ((Int32) -> Int32)?, connect: (Int32) -> Int32,
        socketFailure: (Int32) -> TransportError, failure: (Int32) -> TransportError
    ) async throws -> Int32 {
        let fd = socket(AF_BLUETOOTH, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), proto)
        guard fd >= 0 else { throw socketFailure(errno) }
        var handedOver = false
        defer { if !handedOver { POSIX.close(fd) } }
        if let bind, bind(fd) != 0 { throw failure(errno) }
        if connect(fd) != 0 {
            let e = errno
            guard e == EINPROGRESS || e == EINTR || e == EAGAIN else { throw failure(e) }
            let outcome = try await SocketWait.wait(for: .writable, on: fd, wake: WakeSignal())
            if outcome == .woken { throw CancellationError() }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) != 0 { pending = errno }
            if pending != 0 { throw failure(pending) }
        }
        handedOver = true
        return fd
    }
}
