import Glibc
import LightX
import Logging
import Transport

/// The ep0 thread: owns ep0 and the configfs gadget; reads FunctionFS events, answers every SETUP exactly once,
/// runs the commands (`reenumerate`, `detach`, `attach`) between events, and tears the gadget down when asked to stop.
/// Blocking calls are fine here: this is a dedicated thread, never a thread of the cooperative pool. Internal.
struct EP0Loop {
    let core: GadgetCore
    var gadget: ConfigFSGadget
    let logger: Logger?
    private var eventBuffer = [UInt8](repeating: 0, count: 4 * FunctionFSEvent.recordSize)
    private var dataBuffer = [UInt8](repeating: 0, count: HIDReports.bufferReportSize)
    private var lastErrorLog = ContinuousClock.now - .seconds(10)

    init(core: GadgetCore, gadget: ConfigFSGadget, logger: Logger?) {
        self.core = core
        self.gadget = gadget
        self.logger = logger
    }

    mutating func run() {
        let ep0 = gadget.system.endpointZero(gadget.ep0)
        while true {
            var fds = [pollfd(fd: ep0.descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: core.wakeFD, events: Int16(POLLIN), revents: 0)]
            let rc = poll(&fds, 2, -1)
            if rc < 0 {
                let e = errno
                if e != EINTR { trouble("poll on ep0 failed: \(POSIX.describe(e))") }
                continue
            }
            if fds[1].revents != 0 {
                var counter: UInt64 = 0
                _ = withUnsafeMutableBytes(of: &counter) { read(core.wakeFD, $0.baseAddress, 8) }
            }
            let (commands, stop) = core.takeCommands()
            if stop {
                for (_, c) in commands { c.resume(throwing: TransportError(.closed, "USB gadget \(core.gadgetName) is closed")) }
                break
            }
            for (command, continuation) in commands {
                continuation.resume(with: execute(command))
            }
            if fds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                readEvents(ep0)
            }
        }
        core.endAttachment(reason: "the USB gadget was closed")
        gadget.destroy()
        logger?.info("USB gadget \(core.gadgetName): removed")
        core.threadFinished()
    }

    // MARK: - Commands

    private mutating func execute(_ command: GadgetCore.Command) -> Result<Duration, any Error> {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            switch command {
            case .reenumerate(let productID, let product):
                core.endAttachment(reason: "the device re-enumerates")
                try gadget.unbind()
                core.noteBound(false)
                try gadget.setIdentity(productID: productID, product: product)
                core.noteIdentity(productID: productID, product: product)
                try gadget.rebind()
                core.noteBound(true)
                let elapsed = clock.now - start
                core.noteReenumeration(elapsed)
                logger?.info("USB gadget \(core.gadgetName): re-enumerated as \(gadget.paths.hex(gadget.configuration.vendorID)):\(gadget.paths.hex(productID)) '\(product)' (unbind + rebind \(elapsed))")
                return .success(elapsed)
            case .detach:
                core.endAttachment(reason: "the device detached from the bus")
                try gadget.unbind()
                core.noteBound(false)
                logger?.info("USB gadget \(core.gadgetName): detached")
            case .attach:
                try gadget.rebind()
                core.noteBound(true)
                logger?.info("USB gadget \(core.gadgetName): attached")
            }
            return .success(clock.now - start)
        } catch {
            core.noteBound(gadget.isBound)
            return .failure(error)
        }
    }

    // MARK: - Events

    private mutating func readEvents(_ ep0: any EndpointZero) {
        let n = ep0.readEvents(&eventBuffer)
        guard n > 0 else {
            let e = n < 0 ? Int32(-n) : EIO
            switch e {
            case EINTR, EAGAIN:
                return
            case EIDRM:
                // The kernel cancelled a SETUP because a newer event was queued; the state is reset and the new event
                // is still queued: read again.
                core.countCancelledRead()
                logger?.debug("USB gadget \(core.gadgetName): EIDRM reading events (cancelled setup); reading again")
            default:
                trouble("reading ep0 events failed: \(POSIX.describe(e))")
            }
            return
        }
        for event in FunctionFSEvent.parse(Array(eventBuffer[0..<min(n, eventBuffer.count)])) {
            switch event {
            case .setup(let setup):
                answer(setup, ep0)
            case .enable:
                logger?.debug("USB gadget \(core.gadgetName): ENABLE")
                core.beginAttachment()
            case .bind, .unbind, .disable:
                logger?.debug("USB gadget \(core.gadgetName): \(event.name)")
                core.endAttachment(reason: event == .disable ? "the USB host dropped the configuration" : "the gadget was \(event == .bind ? "bound again" : "unbound")")
            case .suspend, .resume, .unknown:
                logger?.trace("USB gadget \(core.gadgetName): \(event.name)")
            }
        }
    }

    /// Answers `setup` exactly once, by the direction rules (`EP0Responder.call(for:_:)`).
    private mutating func answer(_ setup: SetupPacket, _ ep0: any EndpointZero) {
        let action = core.decide(setup)
        let call = EP0Responder.call(for: action, setup)
        var payload: [UInt8] = []
        if case .write(let bytes, _) = action { payload = bytes }
        let n = ep0.perform(call, data: payload, into: &dataBuffer)
        let e = n < 0 ? Int32(-n) : 0
        switch action {
        case .write(_, let effect):
            core.count(stall: false, cancelled: e == EIDRM)
            if n >= 0 { core.commit(effect) }
        case .readReport(_, let reportID):
            core.count(stall: false, cancelled: e == EIDRM)
            if n >= 0 { core.receivedSetReport(reportID, Array(dataBuffer[0..<min(n, dataBuffer.count)])) }
        case .acknowledge:
            core.count(stall: false, cancelled: e == EIDRM)
        case .stall:
            // FunctionFS answers the zero-length opposite-direction call with EL2HLT ("halted"): the expected result.
            core.count(stall: true, cancelled: e == EIDRM)
            logger?.debug("USB gadget \(core.gadgetName): \(setup) stalled")
            if n < 0 && e == EL2HLT { return }
        }
        if n < 0 {
            // EIDRM: the host moved on (a newer SETUP cancelled this one); the request is dropped.
            logger?.debug("USB gadget \(core.gadgetName): answering \(setup) (\(call)) failed: \(POSIX.describe(e))")
        }
    }

    /// An unexpected failure: logged at most once a second, and a short pause so a persistent error cannot spin.
    private mutating func trouble(_ message: String) {
        let now = ContinuousClock.now
        if now - lastErrorLog > .seconds(1) {
            logger?.warning("USB gadget \(core.gadgetName): \(message)")
            lastErrorLog = now
        }
        usleep(20_000)
    }
}
