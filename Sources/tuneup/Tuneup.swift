import ArgumentParser

@main
struct Tuneup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuneup",
        abstract: "Probe, configure and simulate LightX headsets over USB, Bluetooth, serial or TCP.",
        discussion: """
            Every device command takes --device ADDR (default: $TUNEUP_DEVICE, else the built-in simulated \
            headset 'sim'). Addresses: sim[:STATEFILE], tcp:HOST:PORT, serial:PATH, usb:VID:PID[:SERIAL], \
            usb:BUS-PORT[.PORT], bt:AA:BB:CC:DD:EE:FF[:CHANNEL]. 'tuneup devices' lists USB headsets.

            Exit codes: 0 success, 64 bad arguments, 65 the device refused or answered with an error (or an \
            image is invalid), 69 the device could not be reached or stopped answering, 74 a local file could \
            not be read or written, 1 anything else.

            Examples:
              tuneup probe
              tuneup flash firmware-images/app-1.5.0.img
              tuneup anc on
              tuneup ambient set --left 3 --right 3
              tuneup eq set --preset user -- 2 1 0 0 -1 -1 0 1 2 3
              tuneup sim headset --listen tcp:127.0.0.1:0 &
              tuneup probe --device tcp:127.0.0.1:PORT --format json
            """,
        version: TuneupVersion.string,
        subcommands: [
            ProbeCommand.self, ANCCommand.self, AmbientCommand.self, EQCommand.self, BatteryCommand.self,
            SettingsCommand.self, MonitorCommand.self, DevicesCommand.self, FlashCommand.self, BootloaderCommand.self, FirmwareCommand.self, ImageCommand.self,
            SimCommand.self,
        ])
}

enum TuneupVersion {
    static let string = "0.1.0"
}
