extension Headset {
    /// `error` explained when it is an application command's refusal (NotSupported, NotFound) by a headset that runs
    /// its bootloader: one line that says so and how to get an application running (a device error: exit 65 in the
    /// tools). Else nil: `error` stands as it is. Asks the device its mode (a failure to ask is nil too).
    public func bootloaderAdvice(for error: any Error) async -> HeadsetError? {
        guard let error = error as? HeadsetError, error.code == .deviceNotSupported || error.code == .deviceNotFound,
              let mode = try? await firmwareMode(), mode.running == .bootloader else { return nil }
        return HeadsetError(.deviceNotSupported, "the headset is in its bootloader, not running its application: "
            + (mode.committedApplication.map { "'tuneup bootloader leave' starts the committed \($0), or " } ?? "")
            + "'tuneup flash IMAGE' installs one")
    }
}
