import Transport

/// A simulated device a `SimulatedDeviceServer` serves: the server accepts links on whatever listeners are attached
/// (TCP, pseudo-terminal, RFCOMM, USB gadget, in-process) and hands each accepted link to the device, which decodes,
/// answers and pushes in its own protocol. The server knows nothing of that protocol; a device family (the LightX
/// headset today, a Wi-Fi speaker or a BLE wearable next) is one conforming type.
///
/// Contract:
/// - `serve(_:)` may be called for several links at once (one task each); it returns when the link is done (the
///   peer closed it, the device dropped it, or `shutdown()`), and closes the link before returning. It never throws:
///   what goes wrong on one link is the device's to log.
/// - `shutdown()` stops the device: every `serve(_:)` in progress returns soon after, and later ones close their link
///   at once. Idempotent. The server calls it once per device when it shuts down, before waiting for its links.
public protocol SimulatedDevice: Sendable {
    /// A short name for logs and listings ("headset 0").
    var deviceDescription: String { get }
    /// Serves one link until it is done; closes it. See the protocol's contract.
    func serve(_ link: any Transport) async
    /// Stops the device (see the protocol's contract). The default does nothing: a device without timers or
    /// resources whose `serve` ends when the link closes needs none.
    func shutdown() async
}

extension SimulatedDevice {
    /// Does nothing.
    public func shutdown() async {}
}
