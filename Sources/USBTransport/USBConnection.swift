import CLibUSB
import Glibc
import Logging
import Synchronization
import Transport

/// A raw pointer handed between threads. The owner guarantees the pointee's lifetime. Internal.
struct USBPointer<Pointee>: @unchecked Sendable {
    let raw: Pointee
}

/// One control request on endpoint 0.
struct ControlRequest: Sendable {
    var requestType: UInt8
    var request: UInt8
    var value: UInt16
    var index: UInt16
    /// OUT: the data stage (its count is wLength). IN: ignored.
    var data: [UInt8]
    /// IN: how many bytes to ask for (wLength). OUT: ignored.
    var inLength: Int
    /// For messages: "SET_REPORT 0xF0".
    var label: String
    /// The report the request is about, for messages.
    var reportID: UInt8

    var isIn: Bool { requestType & 0x80 != 0 }
    var length: Int { isIn ? inLength : data.count }

    /// SET_REPORT (feature) of `report` (whose byte 0 is its id) on interface 0.
    static func setReport(_ report: [UInt8]) -> ControlRequest {
        let id = report.first ?? 0
        return ControlRequest(requestType: 0x21, request: 0x09, value: 0x0300 | UInt16(id), index: 0, data: report,
                              inLength: 0, label: "SET_REPORT 0x\(usbHex2(id))", reportID: id)
    }

    /// GET_REPORT (feature) of report `id`, `length` bytes with the id, on interface 0.
    static func getReport(_ id: UInt8, length: Int) -> ControlRequest {
        ControlRequest(requestType: 0xA1, request: 0x01, value: 0x0300 | UInt16(id), index: 0, data: [],
                       inLength: length, label: "GET_REPORT 0x\(usbHex2(id))", reportID: id)
    }
}

/// An open, claimed device, served by the process's one libusb context and event thread (`USBEventLoop`). Internal.
///
/// - Control transfers are submitted asynchronously (`libusb_submit_transfer`) from any thread; their callbacks run
///   on the event thread and resume the waiting task. Each transfer's buffer (setup packet + data) is allocated when
///   it is submitted and freed in its callback, together with the transfer.
/// - A transfer in flight is never freed before its callback. Task cancellation does not unlink a transfer in flight
///   (see `perform`); `shutdown()` does, and waits for the callbacks.
/// - `shutdown()` refuses new transfers, cancels the ones in flight, and lets the event thread finish them; then, on
///   that thread, it releases interface 0, re-attaches the kernel driver it detached and closes the handle and the
///   device node. `shutdownAndWait()` waits for exactly that.
final class USBConnection: USBEventLoop.Client, @unchecked Sendable {
    let handle: OpaquePointer
    /// The device node the handle wraps (`libusb_wrap_sys_device`), closed after the handle; -1 when libusb opened
    /// the device itself.
    let node: Int32
    let detachedKernelDriver: Bool
    let peer: String
    private let logger: Logger?
    private let loop: USBEventLoop

    private struct State {
        var stopping = false
        var finished = false
        var inFlight: [ObjectIdentifier: ControlTransfer] = [:]
        var finishWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Takes ownership of an opened, claimed device and registers it with the shared event loop. On failure
    /// everything is released (the driver re-attached) before the error is thrown.
    init(_ opened: USBOpen.Opened, peer: String, logger: Logger?) throws(TransportError) {
        self.handle = opened.handle
        self.node = opened.node
        self.detachedKernelDriver = opened.detachedKernelDriver
        self.loop = opened.loop
        self.peer = peer
        self.logger = logger
        do {
            try loop.register(self)
        } catch {
            opened.discard(peer: peer, logger: logger)
            throw error
        }
    }

    /// Whether `shutdown()` was called.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Stopped with no transfer in flight: the event loop may tear the connection down.
    var isReadyForTeardown: Bool { state.withLock { $0.stopping && $0.inFlight.isEmpty } }

    /// Releases the device and wakes `shutdownAndWait()`. Called once, on the event thread.
    func tearDown() {
        Self.release(handle: handle, node: node, detached: detachedKernelDriver, peer: peer, logger: logger)
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.finished = true
            defer { s.finishWaiters.removeAll() }
            return s.finishWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Releases interface 0, gives the interface back to the kernel driver if it was detached, closes the handle and
    /// then the device node. Blocking: runs on the event thread (or the opening thread on failure).
    static func release(handle: OpaquePointer, node: Int32, detached: Bool, peer: String, logger: Logger?) {
        let released = libusb_release_interface(handle, 0)
        if released != 0 { logger?.debug("\(peer): release interface 0: \(LibUSBErrors.name(released))") }
        if detached {
            let attached = libusb_attach_kernel_driver(handle, 0)
            if attached == 0 {
                logger?.debug("\(peer): kernel HID driver re-attached")
            } else {
                logger?.debug("\(peer): re-attaching the kernel HID driver: \(LibUSBErrors.name(attached))")
            }
        }
        libusb_close(handle)
        if node >= 0 { Glibc.close(node) }
        logger?.trace("\(peer): closed")
    }

    // MARK: Shutdown

    /// Refuses new transfers, cancels those in flight and wakes the event thread, which then tears down. Returns at
    /// once; idempotent.
    func shutdown() {
        let transfers: [ControlTransfer]? = state.withLock { s in
            guard !s.stopping else { return nil }
            s.stopping = true
            return Array(s.inFlight.values)
        }
        guard let transfers else { return }
        for transfer in transfers { transfer.cancel() }
        loop.wake()
    }

    /// `shutdown()`, then waits until the device is released and its node closed.
    func shutdownAndWait() async {
        shutdown()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.finished { return true }
                s.finishWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: Transfers

    /// The outcome of one control transfer.
    enum Outcome: Sendable {
        /// Completed: the IN data (empty for OUT), or the OUT byte count in `transferred`.
        case completed(data: [UInt8], transferred: Int)
        /// Ended with this status (stall, timeout, no device, ...).
        case failed(libusb_transfer_status)
        /// Cancelled before it completed.
        case cancelled
        /// Not submitted: libusb refused (`code`), or the connection is shutting down (nil).
        case notSubmitted(Int32?)
    }

    /// Performs one control transfer and waits for its callback.
    ///
    /// A task that is already cancelled submits nothing (`.cancelled`). A cancellation that arrives while the
    /// transfer is in flight does not cut it short: a control transfer unlinked halfway leaves the device and the host
    /// disagreeing (measured on dummy_hcd + FunctionFS: a SET_REPORT torn after 14 of 257 bytes, a GET_REPORT 0xF1
    /// whose buffer the device had already handed over and dequeued). The transfer finishes within `timeout` and the
    /// caller honours the cancellation afterwards. `shutdown()` does cancel transfers in flight.
    func perform(_ request: ControlRequest, timeout: Duration) async -> Outcome {
        let transfer = ControlTransfer(connection: self)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            submit(transfer, request, timeout: timeout, continuation: continuation)
        }
    }

    private func submit(
        _ box: ControlTransfer, _ request: ControlRequest, timeout: Duration, continuation: CheckedContinuation<Outcome, Never>
    ) {
        let length = request.length
        guard length >= 0, length <= Int(UInt16.max) else {
            continuation.resume(returning: .notSubmitted(LIBUSB_ERROR_INVALID_PARAM.rawValue))
            return
        }
        if Task.isCancelled {
            continuation.resume(returning: .cancelled)
            return
        }
        guard let transfer = libusb_alloc_transfer(0) else {
            continuation.resume(returning: .notSubmitted(LIBUSB_ERROR_NO_MEM.rawValue))
            return
        }
        let setupSize = usbControlSetupSize
        guard let raw = calloc(1, setupSize + length) else {
            libusb_free_transfer(transfer)
            continuation.resume(returning: .notSubmitted(LIBUSB_ERROR_NO_MEM.rawValue))
            return
        }
        let buffer = raw.assumingMemoryBound(to: UInt8.self)
        libusb_fill_control_setup(buffer, request.requestType, request.request, request.value, request.index, UInt16(length))
        if !request.isIn {
            for (i, byte) in request.data.enumerated() { buffer[setupSize + i] = byte }
        }
        let timeoutMs = UInt32(clamping: max(1, milliseconds(timeout)))
        let userData = Unmanaged.passRetained(box).toOpaque()
        libusb_fill_control_transfer(transfer, handle, buffer, usbControlTransferDone, userData, timeoutMs)

        // Register before submitting, so shutdown waits for this transfer's callback.
        let registered = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.inFlight[ObjectIdentifier(box)] = box
            return true
        }
        let cancelledEarly = registered && box.arm(transfer: transfer, isIn: request.isIn, length: length, continuation: continuation)
        if !registered || cancelledEarly {
            Unmanaged<ControlTransfer>.fromOpaque(userData).release()
            free(raw)
            libusb_free_transfer(transfer)
            if registered { unregister(box) }
            if !registered {
                continuation.resume(returning: .notSubmitted(nil))
            } else {
                box.takeContinuation()?.resume(returning: .cancelled)
            }
            return
        }
        let rc = libusb_submit_transfer(transfer)
        if rc != 0 {
            let waiting = box.takeContinuation()
            Unmanaged<ControlTransfer>.fromOpaque(userData).release()
            free(raw)
            libusb_free_transfer(transfer)
            unregister(box)
            waiting?.resume(returning: .notSubmitted(rc))
            return
        }
        box.markSubmitted()
    }

    fileprivate func unregister(_ box: ControlTransfer) {
        let wake = state.withLock { s -> Bool in
            s.inFlight[ObjectIdentifier(box)] = nil
            return s.stopping && s.inFlight.isEmpty
        }
        if wake { loop.wake() }
    }
}

/// One submitted control transfer: the bridge between libusb's callback and the waiting task. Internal.
final class ControlTransfer: Sendable {
    private struct State {
        var transfer: USBPointer<UnsafeMutablePointer<libusb_transfer>>?
        var submitted = false
        var finished = false
        var cancelRequested = false
        var isIn = false
        var length = 0
        var continuation: CheckedContinuation<USBConnection.Outcome, Never>?
    }

    private let state = Mutex(State())
    private let connection: USBConnection

    init(connection: USBConnection) {
        self.connection = connection
    }

    /// Stores the transfer and the continuation before submission. Returns true when a cancellation already came.
    func arm(transfer: UnsafeMutablePointer<libusb_transfer>, isIn: Bool, length: Int,
             continuation: CheckedContinuation<USBConnection.Outcome, Never>) -> Bool {
        let transfer = USBPointer(raw: transfer)
        return state.withLock { s in
            s.transfer = transfer
            s.isIn = isIn
            s.length = length
            s.continuation = continuation
            return s.cancelRequested
        }
    }

    func takeContinuation() -> CheckedContinuation<USBConnection.Outcome, Never>? {
        state.withLock { s in
            s.finished = true
            s.transfer = nil
            return s.continuation.take()
        }
    }

    /// After a successful submit: from now on a cancellation cancels the libusb transfer.
    func markSubmitted() {
        state.withLock { s in
            s.submitted = true
            if s.cancelRequested, !s.finished, let transfer = s.transfer {
                _ = libusb_cancel_transfer(transfer.raw)
            }
        }
    }

    /// Asks libusb to cancel the transfer (its callback still comes, on the event thread).
    /// Called under this transfer's lock so the transfer cannot be freed meanwhile: the callback frees it only
    /// after taking the same lock, and libusb runs callbacks without holding the transfer's own lock.
    func cancel() {
        state.withLock { s in
            s.cancelRequested = true
            if s.submitted, !s.finished, let transfer = s.transfer {
                _ = libusb_cancel_transfer(transfer.raw)
            }
        }
    }

    /// The callback's work, on the event thread: copy the result out, free the buffer and the transfer, resume.
    func complete(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
        let status = transfer.pointee.status
        let actual = max(0, Int(transfer.pointee.actual_length))
        let (isIn, length, continuation) = state.withLock { s in
            s.finished = true
            s.transfer = nil
            return (s.isIn, s.length, s.continuation.take())
        }
        var data: [UInt8] = []
        if isIn, let buffer = transfer.pointee.buffer {
            let count = min(actual, length)
            data = Array(UnsafeBufferPointer(start: buffer + usbControlSetupSize, count: count))
        }
        free(transfer.pointee.buffer)
        transfer.pointee.buffer = nil
        libusb_free_transfer(transfer)
        connection.unregister(self)

        let outcome: USBConnection.Outcome
        switch status {
        case LIBUSB_TRANSFER_COMPLETED:
            outcome = .completed(data: data, transferred: actual)
        case LIBUSB_TRANSFER_CANCELLED:
            // The kernel may have finished the data stage before the cancellation took effect: keep a whole answer.
            outcome = isIn && length > 0 && data.count == length ? .completed(data: data, transferred: actual) : .cancelled
        default:
            outcome = .failed(status)
        }
        continuation?.resume(returning: outcome)
    }
}

/// libusb's completion callback for every control transfer (runs on the connection's event thread).
private let usbControlTransferDone: libusb_transfer_cb_fn = { transfer in
    guard let transfer, let userData = transfer.pointee.user_data else { return }
    let box = Unmanaged<ControlTransfer>.fromOpaque(userData).takeRetainedValue()
    box.complete(transfer)
}

/// The setup packet in front of every control transfer's data (libusb's LIBUSB_CONTROL_SETUP_SIZE, a macro).
let usbControlSetupSize = MemoryLayout<libusb_control_setup>.size
