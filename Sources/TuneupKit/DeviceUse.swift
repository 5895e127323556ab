import FirmwareUpdate
import Headset
import Logging
import Transport
import WearableSession

extension Devices {
    /// Opens the headset at `address` (`openHeadset`), runs `body` and closes it, also when `body` throws; an
    /// application command refused by a headset that runs its bootloader is explained (`Headset.bootloaderAdvice`).
    public static func withHeadset<T>(_ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger,
                                      _ body: (Headset) async throws -> T) async throws -> T {
        let headset = try await openHeadset(address, options: options, logger: logger)
        do {
            let result = try await body(headset)
            await headset.close()
            return result
        } catch {
            let advice = await headset.bootloaderAdvice(for: error)
            await headset.close()
            throw advice ?? error
        }
    }

    /// A bootloader client for the headset at `address` (`bootloaderClient`), given to `body` and closed after it,
    /// also when `body` throws.
    public static func withBootloaderClient<T>(address: DeviceAddress, wait: Duration, connection: ConnectionOptions = .init(),
                                               logger: Logger, _ body: (BootloaderClient) async throws -> T) async throws -> T {
        let client = bootloaderClient(address: address, wait: wait, connection: connection, logger: logger)
        do {
            let value = try await body(client)
            await client.close()
            return value
        } catch {
            await client.close()
            throw error
        }
    }
}
