import Logging
import Synchronization
import Transport

/// Serves simulated devices — any `SimulatedDevice` — on any `TransportListener`s until `shutdown()`.
///
/// Each device may have any number of listeners attached (`attach(_:toDevice:)`); every link a listener accepts is
/// handed to the device's `serve(_:)`, concurrently with the others. Links made elsewhere (an in-memory pair) are
/// served the same way with `serve(link:onDevice:)`. The server only accepts, dispatches and stops: framing, requests
/// and replies are the device's. `SimulatorServer` is this server for `SimulatedHeadset`s, with their constructors
/// (`listenTCP`, `listenPTY`, `inProcess`, ...).
public final class SimulatedDeviceServer<Device: SimulatedDevice>: Sendable {
    /// The devices, in order.
    public let devices: [Device]

    /// The endpoints of the attached listeners, in device order (and attachment order for a device), in address
    /// syntax: `tcp:HOST:PORT`, `serial:/dev/pts/N`, `usb:1209:0001:SERIAL`, `bt:ADDR:CHANNEL`.
    public var endpoints: [String] {
        listeners.withLock { $0.sorted { $0.device < $1.device }.map(\.listener.endpoint) }
    }

    /// The most devices one server runs.
    public static var maxDevices: Int { 64 }

    private let logger: Logger?
    private let afterShutdown: (@Sendable () async -> Void)?
    private let listeners = Mutex<[(device: Int, listener: any TransportListener)]>([])
    private let loops = Mutex<[Task<Void, Never>]>([])
    private let linkWrapper = WrapperSlot()

    /// The current `LinkWrapper`, shared with the accept loops.
    private final class WrapperSlot: Sendable {
        let wrap = Mutex<LinkWrapper?>(nil)
    }

    /// What wraps every link before a device serves it (`tuneup sim --capture`: a capturing transport).
    public typealias LinkWrapper = @Sendable (any Transport) async throws -> any Transport

    /// Wraps every link accepted or served from now on with `wrap` before its device serves it (a link `wrap` throws
    /// for is closed and not served). Set it before the endpoints are given out.
    public func wrapLinks(_ wrap: @escaping LinkWrapper) {
        linkWrapper.wrap.withLock { $0 = wrap }
    }

    /// `link` as the device is to serve it (wrapped when `wrapLinks` says so); nil when wrapping failed.
    private static func wrapped(_ link: any Transport, _ wrap: LinkWrapper?, logger: Logger?) async -> (any Transport)? {
        guard let wrap else { return link }
        do {
            return try await wrap(link)
        } catch {
            logger?.warning("\(link.peerDescription): \(error)")
            await link.close()
            return nil
        }
    }

    /// A server for `devices` (1...`maxDevices` of them), with no link yet: `attach` listeners to them.
    /// `afterShutdown` runs at the end of `shutdown()`, once every device has stopped (e.g. to close a state file the
    /// devices share).
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` for no or too many devices.
    public init(devices: [Device], logger: Logger? = nil,
                afterShutdown: (@Sendable () async -> Void)? = nil) throws(SimulatorError) {
        try Self.checkCount(devices.count)
        self.devices = devices
        self.logger = logger
        self.afterShutdown = afterShutdown
    }

    /// Serves device `index` on every link `listener` accepts (concurrently), until `shutdown()` closes it.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` when there is no device `index`.
    public func attach(_ listener: any TransportListener, toDevice index: Int) throws(SimulatorError) {
        let device = try device(index)
        listeners.withLock { $0.append((index, listener)) }
        let logger = logger
        let wrapper = linkWrapper
        startLoop { await Self.accept(listener, device, wrap: { wrapper.wrap.withLock { $0 } }, logger: logger) }
    }

    /// Serves one link made elsewhere (e.g. one end of an in-memory pair) on device `index`; the returned task ends
    /// when the device is done with the link. `shutdown()` ends it too.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` when there is no device `index`.
    @discardableResult
    public func serve(link: any Transport, onDevice index: Int) throws(SimulatorError) -> Task<Void, Never> {
        let device = try device(index)
        let wrap = linkWrapper.wrap.withLock { $0 }
        let logger = logger
        return startLoop {
            guard let link = await Self.wrapped(link, wrap, logger: logger) else { return }
            await device.serve(link)
        }
    }

    /// Device `index`.
    ///
    /// - Throws: `SimulatorError(.invalidArgument)` naming the devices there are.
    public func device(_ index: Int) throws(SimulatorError) -> Device {
        guard devices.indices.contains(index) else {
            throw SimulatorError(.invalidArgument, "there is no device \(index); this simulator has devices 0...\(devices.count - 1)")
        }
        return devices[index]
    }

    /// Stops listening, shuts every device down (which ends the links they serve), waits for every link to end and
    /// then runs `afterShutdown`. Idempotent.
    public func shutdown() async {
        listeners.withLock { $0 }.forEach { $0.listener.close() }
        for device in devices { await device.shutdown() }
        let running = loops.withLock { l in
            defer { l = [] }
            return l
        }
        for task in running {
            task.cancel()
            await task.value
        }
        await afterShutdown?()
    }

    /// Refuses a device count outside 1...`maxDevices`.
    public static func checkCount(_ count: Int) throws(SimulatorError) {
        guard (1...maxDevices).contains(count) else {
            throw SimulatorError(.invalidArgument, "device count \(count) is outside 1...\(maxDevices)")
        }
    }

    // MARK: - Internals

    @discardableResult
    private func startLoop(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        let task = Task { await body() }
        loops.withLock { $0.append(task) }
        return task
    }

    /// Accepts links until the listener closes; each is served concurrently.
    private static func accept(_ listener: any TransportListener, _ device: Device, wrap: @escaping @Sendable () -> LinkWrapper?,
                               logger: Logger?) async {
        await withDiscardingTaskGroup { group in
            while true {
                do {
                    let transport = try await listener.accept()
                    let wrapper = wrap()
                    group.addTask {
                        guard let link = await wrapped(transport, wrapper, logger: logger) else { return }
                        await device.serve(link)
                    }
                } catch let error as TransportError where error.code != .closed {
                    // Resource exhaustion and the like: keep serving after a pause.
                    logger?.warning("\(error.message)")
                    do { try await Task.sleep(for: .milliseconds(100)) } catch { return }
                } catch {
                    return  // closed or cancelled
                }
            }
        }
    }
}
