import Capture
import LightX
import Logging
import Transport
import USBGadget

/// `tuneup sim headset --emulate CAPTURE` (issue 32 §4, docs/capture.md §6): the recorded headset on TCP, or (with
/// `--usb-gadget`) presented as a real USB device, re-enumerating between its recorded links as the recorded device
/// did (the bootloader's product id on the links where it ran, the application's on the others).
public enum HeadsetEmulation {
    /// Where the emulated headset is.
    public enum Presence: Sendable {
        /// Listening on TCP `host:port` (port 0: a free one).
        case tcp(host: String, port: UInt16)
        /// A USB gadget on the first free UDC (root).
        case usbGadget
    }

    /// Serves `script` at `presence` until it is played out or diverges; `started` is given the address
    /// (`tcp:HOST:PORT`, `usb:1209:0001:SERIAL`) once the host can reach it.
    /// - Throws: `TransportError` when the port cannot be bound or the gadget cannot be made.
    public static func run(_ script: EmulationScript, on presence: Presence, logger: Logger,
                           started: @Sendable (String) -> Void) async throws -> HeadsetEmulator.Outcome {
        switch presence {
        case let .tcp(host, port):
            let listener = try await TCPListener.bind(host: host, port: port)
            started(listener.endpoint)
            return await HeadsetEmulator(script).run(listener)
        case .usbGadget:
            return try await USBGadgetEmulation.run(script, logger: logger, started: started)
        }
    }
}

/// The USB gadget's side of `HeadsetEmulation`.
public enum USBGadgetEmulation {
    /// Serves `script` on a USB gadget (the first free UDC; root) until it is played out or diverges; `started` is
    /// given the gadget's address (`usb:1209:0001:SERIAL`) once it is on the bus.
    /// - Throws: `TransportError` when the gadget cannot be made (no UDC, not root, ...).
    public static func run(_ script: EmulationScript, logger: Logger, started: @Sendable (String) -> Void) async throws -> HeadsetEmulator.Outcome {
        let bootloader = script.links.first?.runsBootloader ?? false
        let gadget = try await USBGadget.start(.simulatedHeadset(serialNumber: serialNumber(of: script), bootloader: bootloader), logger: logger)
        started(gadget.endpoint)
        let outcome = await HeadsetEmulator(script).run(gadget) { next in
            guard let next else {
                // The last reply: the host fetches it before the device goes away.
                try? await gadget.drain()
                return
            }
            let (productID, product) = next.runsBootloader
                ? (USBGadgetConfiguration.bootloaderProductID, USBGadgetConfiguration.bootloaderProduct)
                : (USBGadgetConfiguration.applicationProductID, USBGadgetConfiguration.applicationProduct)
            do {
                try await gadget.reenumerate(productID: productID, product: product)
            } catch {
                logger.error("USB gadget: cannot re-enumerate as \(next.name): \(error)")
            }
        }
        await gadget.shutdown()
        return outcome
    }

    /// The serial number the recorded device reported (ConfigSerialNumber), else the simulated headset's first one.
    static func serialNumber(of script: EmulationScript) -> String {
        for exchange in script.exchanges where exchange.request.command == .configSerialNumber && exchange.request.opcode == .read {
            if let reply = exchange.replies.first, reply.header.status == .ok {
                let text = String(decoding: reply.buffer.prefix { $0 != 0 }, as: UTF8.self)
                if !text.isEmpty, text.utf8.count <= 126, text.allSatisfy({ $0.isASCII && !$0.isWhitespace }) { return text }
            }
        }
        return "TS1-000001"
    }
}
