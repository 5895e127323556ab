import Firmware
import FirmwareUpdate
import Logging
import Transport

extension DeviceRegistry {
    /// An updater that flashes `image` onto the device at `address`, opening the link again through `connector`
    /// whenever the device resets (the jump to its bootloader, the reboot) or the link drops.
    public func updater(
        image: FirmwareImage, address: DeviceAddress, options: UpdateOptions = .init(),
        connection: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.update")
    ) -> FirmwareUpdater {
        let connector = connector(connection)
        return FirmwareUpdater(image: image, options: options, sessionOptions: connection.session, logger: logger) {
            try await connector.open(address)
        }
    }

    /// A client of the bootloader of the device at `address` (status, enter, leave, read back), reconnecting as the
    /// device resets; `wait` is how long it waits for a device that answered once to come back.
    public func bootloaderClient(
        address: DeviceAddress, wait: Duration, connection: ConnectionOptions = .init(),
        logger: Logger = Logger(label: "tuneup.bootloader")
    ) -> BootloaderClient {
        let connector = connector(connection)
        return BootloaderClient(sessionOptions: connection.session, wait: wait, logger: logger) {
            try await connector.open(address)
        }
    }
}
