import Logging
import Transport

/// A USB device made with configfs + FunctionFS on this machine's USB device controller (UDC): one HID interface
/// carrying LightX in feature reports 0xF0/0xF1 (docs/protocol.md §2.3, "USB: raw packets in HID feature reports"), served
/// on a dedicated thread.
///
/// Lifecycle:
/// - `start(_:logger:)` creates the configfs gadget (removing a leftover one of the same name), mounts FunctionFS,
///   writes the descriptors and binds to the first free UDC; the host enumerates the device about 0.4 s later
///   (dummy_hcd under QEMU). Needs root, configfs, libcomposite, usb_f_fs and a UDC; each missing piece is a
///   one-line `TransportError` (e.g. `.notFound` "no USB device controller (UDC): load dummy_hcd or run on a board
///   with one").
/// - As a `TransportListener`, `accept()` returns one `GadgetLink` (`framing == .packets`) per host attachment (each
///   ENABLE, i.e. the host setting the configuration). The link's `receive` yields the raw LightX packets the host
///   sends; `send` queues one raw packet for the host's GET_REPORT polling. The link closes (receive throws
///   `.closed`) when the attachment ends: unbind, disable, `reenumerate`, `detach`, `close`.
/// - `reenumerate(productID:product:)` is a device reset into another identity (the application ↔ bootloader jump):
///   it lets the host fetch what is queued, unbinds, changes idProduct and the product string, and binds again.
///   `detach()` / `attach()` take the device off the bus and put it back (power off / on).
/// - `close()` starts the teardown (unbind, close ep0, unmount, remove the configfs tree) on the gadget's thread and
///   returns at once; `shutdown()` does the same and waits until it has finished. A process that exits without it
///   leaves the gadget in configfs, unbound (closing ep0 unbinds); the next `start` removes it.
///
/// ep0: every SETUP is answered exactly once (IN → write, OUT with data → read wLength, OUT without data → read 0;
/// stall = the opposite direction with 0 bytes); SET_IDLE and GET_DESCRIPTOR(report) are answered at any time;
/// unknown requests, unknown report IDs and GET_REPORT 0xF1 without an announced packet stall; EIDRM is ignored;
/// BIND and ENABLE reset the mailbox.
///
/// All methods are thread-safe; none blocks the caller's thread.
public final class USBGadget: TransportListener, Sendable {
    /// The configuration the gadget was started with (the identity may have changed since: see `productID`).
    public let configuration: USBGadgetConfiguration
    let core: GadgetCore

    private init(configuration: USBGadgetConfiguration, core: GadgetCore) {
        self.configuration = configuration
        self.core = core
    }

    deinit {
        core.requestStop()
    }

    /// Creates and binds the gadget (see the type's description); returns once it is bound.
    ///
    /// - Throws: `TransportError`: `.invalidAddress` for a bad configuration; `.notFound` without a UDC (or without
    ///   the named one); `.permissionDenied` when not root; `.unsupported` without configfs, libcomposite or
    ///   FunctionFS; `.busy` when every UDC is taken or a leftover gadget of the same name is still in use; `.io`
    ///   for other failures. Nothing is left behind after a failure.
    public static func start(_ configuration: USBGadgetConfiguration, logger: Logger? = nil) async throws -> USBGadget {
        try await start(configuration, system: LinuxGadgetSystem(), logger: logger)
    }

    static func start(_ configuration: USBGadgetConfiguration, system: any GadgetSystem, logger: Logger?) async throws -> USBGadget {
        try configuration.validate()
        let core = try GadgetCore(configuration: configuration, logger: logger)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            do {
                try DedicatedThread.spawn(name: "usb-gadget-ep0") {
                    GadgetThread.blockAsynchronousSignals()
                    var gadget = ConfigFSGadget(configuration: configuration, system: system)
                    do {
                        try gadget.create()
                    } catch {
                        for note in gadget.notes { logger?.debug("USB gadget \(configuration.gadgetName): \(note)") }
                        core.threadFinished()
                        continuation.resume(throwing: error)
                        return
                    }
                    for note in gadget.notes { logger?.info("USB gadget \(configuration.gadgetName): \(note)") }
                    core.noteSetUp(udc: gadget.udc)
                    continuation.resume()
                    var loop = EP0Loop(core: core, gadget: gadget, logger: logger)
                    loop.run()
                }
            } catch {
                continuation.resume(throwing: error)
            }
        }
        logger?.info("USB gadget \(configuration.gadgetName): \(configuration.address) on \(core.state.withLock { $0.udc } ?? "?")")
        return USBGadget(configuration: configuration, core: core)
    }

    // MARK: - State

    /// `usb:VID:PID:SERIAL` with the current product id, e.g. `usb:1209:0001:TS1-000001`.
    public var endpoint: String {
        var c = configuration
        c.productID = productID
        return c.address.description
    }
    /// The idProduct presented now.
    public var productID: UInt16 { core.state.withLock { $0.productID } }
    /// The product string presented now.
    public var product: String { core.state.withLock { $0.product } }
    /// Whether the gadget is bound to its UDC (on the bus) now.
    public var isAttached: Bool { core.state.withLock { $0.isBound } }
    /// The UDC the gadget is bound to (or was, while detached).
    public var udc: String? { core.state.withLock { $0.udc } }
    /// Counters since `start`.
    public var statistics: USBGadgetStatistics { core.state.withLock { $0.statistics } }
    /// Whether `close()` or `shutdown()` was called.
    public var isClosed: Bool { core.isStopRequested }
    /// Sends parked until the FIFO has room (for tests and diagnostics).
    var pendingSends: Int { core.pendingSends }
    /// Whether an `accept()` is parked waiting for an attachment (for tests and diagnostics).
    var hasPendingAccept: Bool { core.hasPendingAccept }
    /// Whether a `reenumerate` is waiting for the host to fetch what is queued (for tests and diagnostics).
    var isWaitingForDrain: Bool { core.isWaitingForDrain }

    // MARK: - TransportListener

    /// Waits for the next host attachment and returns its link (`GadgetLink`, `.packets` framing). An attachment
    /// that ended before it was accepted is skipped. Throws `TransportError(.closed)` after `close()`, or
    /// `CancellationError`. One `accept` may be pending at a time.
    public func accept() async throws -> any Transport {
        try await core.accept()
    }

    /// Stops accepting, ends the current link and starts the teardown of the gadget on its thread; returns at once.
    /// Idempotent. Use `shutdown()` to wait for the teardown.
    public func close() {
        core.requestStop()
    }

    /// `close()`, then waits until the gadget is removed from configfs. If its thread is stuck in a data stage the
    /// host never completes, the gadget is unbound from here after 3 s, which releases it. Idempotent.
    public func shutdown() async {
        core.requestStop()
        if await core.waitForThread(timeout: .seconds(3)) { return }
        let paths = configuration.paths
        core.logger?.warning("USB gadget \(configuration.gadgetName): ep0 thread still busy after 3 s; unbinding from outside")
        try? DedicatedThread.spawn(name: "usb-gadget-unbind") {
            GadgetThread.blockAsynchronousSignals()
            _ = LinuxGadgetSystem().writeFile(paths.udcFile, Array("\n".utf8))
        }
        if !(await core.waitForThread(timeout: .seconds(5))) {
            core.logger?.error("USB gadget \(configuration.gadgetName): could not be removed; \(paths.gadget) may be left behind")
        }
    }

    // MARK: - Device resets

    /// Re-enumerates as `productID` (and `product`, when given): a device resetting into another image.
    ///
    /// 1. Waits until the host has fetched every packet queued so far (at most `drainTimeout`), then `settle` more,
    ///    so the reply to the command that caused the reset (e.g. JumpToBootloader) reaches the host first.
    /// 2. Ends the current link, unbinds, writes idProduct and the product string, binds again (3-11 ms measured).
    ///
    /// The host sees a disconnect, then the new device about 0.4 s later (dummy_hcd under QEMU); its ENABLE starts
    /// a new link for `accept()`. Ends attached even when called while detached. Returns the time the unbind,
    /// identity change and rebind took. Throws `TransportError` (`.closed` after `close()`, `.io`/`.busy` when
    /// configfs refuses) or `CancellationError` (during step 1 only).
    @discardableResult
    public func reenumerate(productID: UInt16, product: String? = nil, drainTimeout: Duration = .seconds(1),
                            settle: Duration = .milliseconds(20)) async throws -> Duration {
        let product = product ?? self.product
        var check = configuration
        check.productID = productID
        check.product = product
        try check.validate()
        try await drain(timeout: drainTimeout, settle: settle)
        return try await core.perform(.reenumerate(productID: productID, product: product))
    }

    /// Waits until the host has fetched every packet queued so far (at most `timeout`), then `settle` more: before a
    /// device reset, or before the gadget goes away after its last reply. Throws `CancellationError`.
    public func drain(timeout: Duration = .seconds(1), settle: Duration = .milliseconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        do {
            core.noteDraining(1)
            defer { core.noteDraining(-1) }
            while !core.isDrained, ContinuousClock.now < deadline, !core.isStopRequested {
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        if settle > .zero { try await Task.sleep(for: settle) }
    }

    /// Takes the device off the bus (power off): ends the current link and unbinds. No-op when detached.
    /// Throws `TransportError` (`.closed` after `close()`).
    public func detach() async throws {
        _ = try await core.perform(.detach)
    }

    /// Puts the device back on the bus with its current identity (power on): binds again; the host enumerates it.
    /// No-op when attached. Throws `TransportError` (`.closed` after `close()`).
    public func attach() async throws {
        _ = try await core.perform(.attach)
    }
}
