import CBluetooth
import Support
import Glibc
import Logging
import Synchronization
import Transport

/// SDP through libbluetooth: finding a remote SPP service's RFCOMM channel, and registering our own SPP record with
/// the local SDP server (bluetoothd). Internal.
enum SDP {
    /// The Serial Port service class (and profile) UUID.
    static let serialPortUUID = UInt16(SERIAL_PORT_SVCLASS_ID)

    // MARK: - Client: find the SPP channel on a remote device

    /// Asks the SDP server of `remote` (L2CAP PSM 1), from the local adapter `local` (nil: any), for the Serial Port
    /// service, and returns the RFCOMM channel of the first SPP record that has one.
    ///
    /// The L2CAP connect is non-blocking and waited for on the I/O reactor (cancellable); the SDP transaction
    /// itself (libbluetooth's blocking request code) runs on the blocking executor (its own 20 s response timeout
    /// bounds it; a cancelled caller returns at once and the pool thread cleans up after itself).
    ///
    /// - Throws: `.notFound` "no SPP service …" when the device answers without one, the mapped socket errors
    ///   (`BluetoothErrors.sdpError`), or `CancellationError`.
    static func findSerialPortChannel(on remote: BluetoothAddress, from local: bdaddr_t?, context: String, logger: Logger?) async throws -> UInt8 {
        let started = ContinuousClock.now
        let session = try await connect(to: remote, from: local, context: context)
        // From here on, whoever ends up with the session closes it.
        let socket = sdp_get_socket(session.raw)
        do {
            let outcome = try await SocketWait.wait(for: .writable, on: socket, wake: WakeSignal())
            if outcome == .woken { throw CancellationError() }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(socket, SOL_SOCKET, SO_ERROR, &pending, &length) != 0 { pending = errno }
            if pending != 0 { throw BluetoothErrors.sdpError(pending, address: remote, context: context) }
        } catch {
            session.close()
            throw error
        }
        // libbluetooth's request code expects a blocking socket (it selects, then reads).
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) & ~O_NONBLOCK)
        let result = try await Blocking.run("tuneup-sdp", discard: { _ in }) { () -> Result<UInt8?, Int32Error> in
            defer { session.close() }
            return searchSerialPort(session.raw)
        }
        let elapsed = ContinuousClock.now - started
        switch result {
        case .success(let channel?):
            logger?.debug("SDP: \(remote) has SPP on RFCOMM channel \(channel) (query took \(elapsed.shortDescription))")
            return channel
        case .success(nil):
            throw TransportError(
                .notFound,
                "\(context): no SPP service (UUID 0x1101) found on \(remote) through SDP; name the RFCOMM channel: bt:\(remote):CHANNEL")
        case .failure(let e):
            throw BluetoothErrors.sdpError(e.code, address: remote, context: context)
        }
    }

    /// `sdp_connect(local or ANY, remote, SDP_NON_BLOCKING)`: returns with the L2CAP connect in progress.
    private static func connect(to remote: BluetoothAddress, from local: bdaddr_t?, context: String) async throws -> SDPSession {
        var attempts = 0
        while true {
            attempts += 1
            let result = try await Blocking.run("tuneup-sdp", discard: { (r: Result<SDPSession, Int32Error>) in
                if case .success(let session) = r { session.close() }
            }) { () -> Result<SDPSession, Int32Error> in
                var source = local ?? BluetoothAddress.anyKernelAddress
                var destination = remote.kernelAddress
                guard let raw = sdp_connect(&source, &destination, UInt32(SDP_NON_BLOCKING)) else {
                    return .failure(Int32Error(errno))
                }
                return .success(SDPSession(raw))
            }
            switch result {
            case .success(let session):
                return session
            case .failure(let e) where e.code == EBUSY && attempts < 5:
                // What SDP_RETRY_IF_BUSY would do (it cannot be combined with SDP_NON_BLOCKING).
                try await Task.sleep(for: .milliseconds(100))
            case .failure(let e) where e.code == EAFNOSUPPORT:
                throw BluetoothErrors.socketError(e.code, context: context, protocolName: "L2CAP")
            case .failure(let e):
                throw BluetoothErrors.sdpError(e.code, address: remote, context: context)
            }
        }
    }

    /// One ServiceSearchAttribute transaction for UUID 0x1101, all attributes. Runs on a dedicated thread.
    private static func searchSerialPort(_ session: UnsafeMutablePointer<sdp_session_t>) -> Result<UInt8?, Int32Error> {
        let uuid = UnsafeMutablePointer<uuid_t>.allocate(capacity: 1)
        defer { uuid.deallocate() }
        sdp_uuid16_create(uuid, serialPortUUID)
        let range = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { range.deallocate() }
        range.pointee = 0x0000_FFFF
        let search = sdp_list_append(nil, uuid)
        defer { sdp_list_free(search, nil) }
        let attributes = sdp_list_append(nil, range)
        defer { sdp_list_free(attributes, nil) }
        var response: UnsafeMutablePointer<sdp_list_t>?
        errno = 0
        guard sdp_service_search_attr_req(session, search, SDP_ATTR_REQ_RANGE, attributes, &response) == 0 else {
            let e = errno
            return .failure(Int32Error(e == 0 ? EIO : e))
        }
        defer { freeRecordList(response) }
        var node = response
        while let current = node {
            if let record = current.pointee.data?.assumingMemoryBound(to: sdp_record_t.self),
               let channel = rfcommChannel(of: record) {
                return .success(channel)
            }
            node = current.pointee.next
        }
        return .success(nil)
    }

    /// The RFCOMM channel in a record's protocol descriptor list (L2CAP, RFCOMM channel N), if any.
    static func rfcommChannel(of record: UnsafePointer<sdp_record_t>) -> UInt8? {
        var protocols: UnsafeMutablePointer<sdp_list_t>?
        guard sdp_get_access_protos(record, &protocols) == 0 else { return nil }
        defer {
            // Each element is itself a list (one protocol stack); the data they point to belongs to the record.
            var node = protocols
            while let current = node {
                sdp_list_free(current.pointee.data?.assumingMemoryBound(to: sdp_list_t.self), nil)
                node = current.pointee.next
            }
            sdp_list_free(protocols, nil)
        }
        let port = sdp_get_proto_port(protocols, Int32(RFCOMM_UUID))
        return (1...30).contains(port) ? UInt8(port) : nil
    }

    /// Whether the record lists `uuid16` among its service classes.
    static func hasServiceClass(_ record: UnsafePointer<sdp_record_t>, _ uuid16: UInt16) -> Bool {
        var classes: UnsafeMutablePointer<sdp_list_t>?
        guard sdp_get_service_classes(record, &classes) == 0 else { return false }
        defer { sdp_list_free(classes, { free($0) }) }
        var node = classes
        while let current = node {
            if let uuid = current.pointee.data?.assumingMemoryBound(to: uuid_t.self),
               uuid.pointee.type == UInt8(SDP_UUID16), uuid.pointee.value.uuid16 == uuid16 {
                return true
            }
            node = current.pointee.next
        }
        return false
    }

    private static func freeRecordList(_ list: UnsafeMutablePointer<sdp_list_t>?) {
        var node = list
        while let current = node {
            if let record = current.pointee.data?.assumingMemoryBound(to: sdp_record_t.self) {
                sdp_record_free(record)
            }
            node = current.pointee.next
        }
        sdp_list_free(list, nil)
    }

    // MARK: - Server: our SPP record

    /// Builds an SPP service record: service class 0x1101, protocols L2CAP + RFCOMM `channel`, profile descriptor
    /// Serial Port 1.2, public browse group, and the name strings. Nil if libbluetooth runs out of memory.
    static func makeSerialPortRecord(channel: UInt8, name: String, provider: String, description: String) -> SDPRecord? {
        guard let record = sdp_record_alloc() else { return nil }
        let uuids = UnsafeMutablePointer<uuid_t>.allocate(capacity: 4)
        defer { uuids.deallocate() }
        let profile = UnsafeMutablePointer<sdp_profile_desc_t>.allocate(capacity: 1)
        defer { profile.deallocate() }
        let channelValue = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        defer { channelValue.deallocate() }
        channelValue.pointee = channel

        var ok = true
        sdp_uuid16_create(uuids, UInt16(PUBLIC_BROWSE_GROUP))
        let browse = sdp_list_append(nil, uuids)
        ok = ok && sdp_set_browse_groups(record, browse) == 0
        sdp_list_free(browse, nil)

        sdp_uuid16_create(uuids + 1, serialPortUUID)
        let classes = sdp_list_append(nil, uuids + 1)
        ok = ok && sdp_set_service_classes(record, classes) == 0
        sdp_list_free(classes, nil)

        sdp_uuid16_create(&profile.pointee.uuid, serialPortUUID)
        profile.pointee.version = 0x0102
        let profiles = sdp_list_append(nil, profile)
        ok = ok && sdp_set_profile_descs(record, profiles) == 0
        sdp_list_free(profiles, nil)

        // Protocol descriptor list: ((L2CAP), (RFCOMM, channel)).
        sdp_uuid16_create(uuids + 2, UInt16(L2CAP_UUID))
        sdp_uuid16_create(uuids + 3, UInt16(RFCOMM_UUID))
        let channelData = sdp_data_alloc(UInt8(SDP_UINT8), channelValue)
        let l2cap = sdp_list_append(nil, uuids + 2)
        let rfcomm = sdp_list_append(sdp_list_append(nil, uuids + 3), channelData)
        let stack = sdp_list_append(sdp_list_append(nil, l2cap), rfcomm)
        let access = sdp_list_append(nil, stack)
        ok = ok && channelData != nil && l2cap != nil && rfcomm != nil && stack != nil && access != nil
        if ok { ok = sdp_set_access_protos(record, access) == 0 }
        sdp_list_free(access, nil)
        sdp_list_free(stack, nil)
        sdp_list_free(rfcomm, nil)
        sdp_list_free(l2cap, nil)
        sdp_data_free(channelData)

        sdp_set_info_attr(record, name, provider, description)
        guard ok else {
            sdp_record_free(record)
            return nil
        }
        return SDPRecord(record)
    }

    /// Registers `record` with the local SDP server (bluetoothd's Unix socket, /run/sdp, present with `bluetoothd
    /// --compat`). Blocking (a local socket round trip): call it on a dedicated thread. The record stays registered
    /// while the returned registration's session is open (bluetoothd drops it when the session closes).
    static func register(_ record: SDPRecord) -> Result<SDPRegistration, Int32Error> {
        var any = BluetoothAddress.anyKernelAddress
        var local = BluetoothAddress.localKernelAddress
        guard let session = sdp_connect(&any, &local, UInt32(SDP_RETRY_IF_BUSY)) else {
            return .failure(Int32Error(errno))
        }
        errno = 0
        guard sdp_record_register(session, record.raw, 0) == 0 else {
            let e = errno
            sdp_close(session)
            return .failure(Int32Error(e == 0 ? EIO : e))
        }
        return .success(SDPRegistration(session: SDPSession(session), record: record))
    }
}

/// An `sdp_session_t`, closed once. Internal.
final class SDPSession: @unchecked Sendable {
    // The pointer is only used by one thread at a time (the thread that created the session, then the one it is
    // handed to); `close()` is serialised by the lock.
    let raw: UnsafeMutablePointer<sdp_session_t>
    private let closed = Mutex(false)

    init(_ raw: UnsafeMutablePointer<sdp_session_t>) { self.raw = raw }

    /// Closes the session's socket and frees it. Idempotent.
    func close() {
        let first = closed.withLock { c -> Bool in
            defer { c = true }
            return !c
        }
        if first { sdp_close(raw) }
    }

    deinit { close() }
}

/// An `sdp_record_t` owned by Swift until it is handed to `sdp_record_unregister` (which frees it). Internal.
final class SDPRecord: @unchecked Sendable {
    // Immutable after construction; freed exactly once (by `free()`, deinit, or a successful unregister).
    let raw: UnsafeMutablePointer<sdp_record_t>
    private let owned = Mutex(true)

    init(_ raw: UnsafeMutablePointer<sdp_record_t>) { self.raw = raw }

    /// The handle bluetoothd assigned (valid after registration).
    var handle: UInt32 { raw.pointee.handle }

    /// Gives up ownership (libbluetooth freed the record). Returns false if it was already released.
    func relinquish() -> Bool {
        owned.withLock { o in
            defer { o = false }
            return o
        }
    }

    deinit {
        if relinquish() { sdp_record_free(raw) }
    }
}

/// A record registered with the local SDP server. `unregister()` removes it (idempotent). Internal.
final class SDPRegistration: Sendable {
    let session: SDPSession
    let record: SDPRecord
    private let done = Mutex(false)

    init(session: SDPSession, record: SDPRecord) {
        self.session = session
        self.record = record
    }

    /// Unregisters the record and closes the session. Blocking (a local socket round trip): call it on a dedicated
    /// thread. Closing the session alone would also make bluetoothd drop the record.
    @discardableResult
    func unregister() -> Bool {
        let first = done.withLock { d -> Bool in
            defer { d = true }
            return !d
        }
        guard first else { return false }
        var ok = false
        if record.relinquish() {
            // sdp_record_unregister frees the record on success only.
            if sdp_record_unregister(session.raw, record.raw) == 0 {
                ok = true
            } else {
                sdp_record_free(record.raw)
            }
        }
        session.close()
        return ok
    }
}
