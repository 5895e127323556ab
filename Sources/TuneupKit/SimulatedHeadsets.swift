import BluetoothTransport
import HeadsetSimulator
import Logging
import Support
import Transport

/// Where `tuneup sim headset` serves its simulated headsets.
public enum SimulatedHeadsetLink: Sendable, Hashable {
    /// TCP listeners: device k on PORT+k (port 0: free ports).
    case tcp(host: String, port: UInt16)
    /// Pseudo-terminals, one a device (usable as serial:PATH).
    case pty
    /// A Bluetooth RFCOMM listener on `channel` of `adapter` (nil: the first adapter up), one device.
    case rfcomm(adapter: String?, channel: UInt8)
    /// A real USB HID device (FunctionFS on the first free UDC), one device, following it to its bootloader and back.
    case usbGadget
}

/// Simulated headsets served on a link, as `tuneup sim headset` runs them: started, driven by control lines, shut down.
public struct SimulatedHeadsets: Sendable {
    public let server: SimulatorServer
    private let usb: USBGadgetPresence?

    /// The addresses of the devices, one a device (`tcp:HOST:PORT`, `serial:/dev/pts/N`, ...).
    public var endpoints: [String] { server.endpoints }

    /// Checks the state file's place (`statePath`: kept across restarts; nil: in memory), runs `prepare` (a capture
    /// file made), then serves `count` devices on `link`.
    public static func start(on link: SimulatedHeadsetLink, count: Int, statePath: String?, options: SimulatorOptions,
                             logger: Logger, prepare: () async throws -> Void = {}) async throws -> SimulatedHeadsets {
        if let statePath {
            try await Blocking.perform("sim state path") { try SimulatorBridge.checkStatePath(statePath, createDirectory: false) }
        }
        try await prepare()
        switch link {
        case .pty:
            return SimulatedHeadsets(server: try await SimulatorServer.listenPTY(count: count, statePath: statePath, options: options), usb: nil)
        case let .rfcomm(adapter, channel):
            let listener = try await RFCOMMListener.bind(adapter: adapter, channel: channel, logger: logger)
            return SimulatedHeadsets(server: try await SimulatorServer.serve([listener], statePath: statePath, options: options), usb: nil)
        case .usbGadget:
            let server = try await SimulatorServer.start(count: 1, statePath: statePath, options: options)
            do {
                return SimulatedHeadsets(server: server, usb: try await USBGadgetPresence.start(on: server, device: 0, logger: logger))
            } catch {
                await server.shutdown()
                throw error
            }
        case let .tcp(host, port):
            return SimulatedHeadsets(
                server: try await SimulatorServer.listenTCP(host: host, port: port, count: count, statePath: statePath, options: options), usb: nil)
        }
    }

    /// Applies each control line (`SimulatorControl`) until `quit` or the lines' end; a bad line's one-line error
    /// goes to `refused` and the lines go on.
    public func follow(_ lines: AsyncStream<String>, refused: (String) -> Void) async {
        for await line in lines {
            do {
                if try await server.perform(try SimulatorControl.parse(line)) == false { return }
            } catch {
                refused(error.message)
            }
        }
    }

    /// Stops the USB gadget (it must not outlive the process in configfs), then the server and its devices.
    public func shutdown() async {
        await usb?.shutdown()
        await server.shutdown()
    }
}
