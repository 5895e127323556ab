import Logging
import HeadsetSimulator
import Transport
import USBGadget

/// Presents a simulated headset as a real USB device and keeps the gadget in step with it: a jump to the
/// bootloader or back re-enumerates with the other product id, a power cut detaches until power returns.
public struct USBGadgetPresence: Sendable {
    /// The gadget presenting the device.
    public let gadget: USBGadget
    private let following: Task<Void, Never>

    /// Starts the gadget for device `index` of `server` (one UDC: one device).
    public static func start(on server: SimulatorServer, device index: Int, logger: Logger) async throws -> USBGadgetPresence {
        let device = server.devices[index]
        let serial = await device.state.identity.serialNumber
        let gadget = try await USBGadget.start(.simulatedHeadset(serialNumber: serial), logger: logger)
        try server.attach(gadget, toDevice: index)
        let following = Task {
            for await mode in device.modeChanges() {
                do {
                    switch mode {
                    case nil:
                        try await gadget.detach()
                    case .application?:
                        guard !(gadget.isAttached && gadget.productID == USBGadgetConfiguration.applicationProductID) else { continue }
                        _ = try await gadget.reenumerate(productID: USBGadgetConfiguration.applicationProductID,
                                                         product: USBGadgetConfiguration.applicationProduct)
                    case .bootloader?:
                        guard !(gadget.isAttached && gadget.productID == USBGadgetConfiguration.bootloaderProductID) else { continue }
                        _ = try await gadget.reenumerate(productID: USBGadgetConfiguration.bootloaderProductID,
                                                         product: USBGadgetConfiguration.bootloaderProduct)
                    }
                } catch {
                    logger.error("USB gadget: cannot follow the device to \(mode.map { "\($0)" } ?? "off"): \(error)")
                }
            }
        }
        return USBGadgetPresence(gadget: gadget, following: following)
    }

    /// Stops following and tears the gadget down (it must not outlive the process in configfs).
    public func shutdown() async {
        following.cancel()
        await gadget.shutdown()
    }
}
