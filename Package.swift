// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

// Test code compiled without optimisation also in release builds (CI builds and tests in release, the build its QEMU
// guest runs): the tests' own code is glue around what they test, and optimising it was a sixth of CI's cold build
// (test modules rebuilt with -O: 504 s of CPU, 286 s of wall; with -Onone 292 s, 159 s).
let testing: [SwiftSetting] = strict + [.unsafeFlags(["-Onone"], .when(configuration: .release))]

// `tuneup --version` names the commit of the build: `TUNEUP_COMMIT=$(git rev-parse --short=12 HEAD) swift build ...`
// (docs/packaging.md). Only hex digits and "-dirty" are kept; without it the version stands alone.
let buildCommit = String((Context.environment["TUNEUP_COMMIT"] ?? "").filter { $0.isHexDigit || $0 == "-" || "dirty".contains($0) }.prefix(64))

let package = Package(
    name: "Tuneup",
    products: [
        .executable(name: "tuneup", targets: ["tuneup"]),
        .library(name: "LightX", targets: ["LightX"]),
        .library(name: "Transport", targets: ["Transport"]),
        .library(name: "Session", targets: ["Session"]),
        .library(name: "Headset", targets: ["Headset"]),
        .library(name: "Simulator", targets: ["Simulator"]),
        .library(name: "HeadsetSimulator", targets: ["HeadsetSimulator"]),
        .library(name: "Firmware", targets: ["Firmware"]),
        .library(name: "FirmwareUpdate", targets: ["FirmwareUpdate"]),
        .library(name: "Progress", targets: ["Progress"]),
        .library(name: "DeviceAccess", targets: ["DeviceAccess"]),
        .library(name: "TuneupKit", targets: ["TuneupKit"]),
        .library(name: "Recipe", targets: ["Recipe"]),
        .library(name: "Records", targets: ["Records"]),
        .library(name: "Station", targets: ["Station"]),
        .library(name: "Wearable", targets: ["Wearable"]),
        .library(name: "Speaker", targets: ["Speaker"]),
        .library(name: "WearableSession", targets: ["WearableSession"]),
        .library(name: "WearableSimulator", targets: ["WearableSimulator"]),
        .library(name: "SpeakerPlayback", targets: ["SpeakerPlayback"]),
        .library(name: "SpeakerSession", targets: ["SpeakerSession"]),
        .library(name: "SpeakerSimulator", targets: ["SpeakerSimulator"]),
        .library(name: "SpeakerHub", targets: ["SpeakerHub"]),
        .library(name: "AudioInput", targets: ["AudioInput"]),
        .library(name: "StationPage", targets: ["StationPage"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", exact: "2.8.1"),
    ],
    targets: [
        // The one error shape of every module: stable codes, a failure category, one line (no dependencies).
        .target(name: "Failure", swiftSettings: strict),
        // Pure protocol values: frames, header, enums, typed commands, CRC. No I/O.
        .target(name: "LightX", dependencies: ["Failure"], swiftSettings: strict),
        // The Bose Wearable codec: the GATT service's payloads as pure values, sensor scaling. No I/O.
        .target(name: "Wearable", dependencies: ["Failure"], swiftSettings: strict),
        // GATT operations framed for Tuneup's byte-stream links (TCP, pty, in-memory): pure values, no I/O.
        .target(name: "WearableLink", dependencies: ["Failure", "Wearable"], swiftSettings: strict),
        // The Wearable session: GATT on the shared request core, sensor/gesture configuration, listeners.
        .target(
            name: "WearableSession",
            dependencies: ["Failure", "Wearable", "WearableLink", "Session", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The simulated wearable: the GATT service, the device's rules, a head motion model, faults.
        .target(
            name: "WearableSimulator",
            dependencies: ["Failure", "Wearable", "WearableLink", "Simulator", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Wearable recordings (docs/wearable.md §10): the line format, the metadata header, the writer (written as it
        // goes, off the cooperative pool), per-sensor CSVs, reading a recording back; the streaming workflow of
        // `wearable stream` and `record`, and the plot (SVG; a PNG through Spawn's rsvg-convert).
        .target(name: "WearableRecording", dependencies: ["Failure", "Wearable", "WearableSession", "Spawn", "Support"], swiftSettings: strict),
        // The HKWirelessHD speaker protocols as pure values: control frames and messages, audio and discovery
        // datagrams, clock-sync maths, reason and error codes, FLAC audio frames (CFLAC). No I/O.
        .target(name: "Speaker", dependencies: ["CFLAC", "CZlib", "Failure"], swiftSettings: strict),
        // zlib's CRC-32 (slicing by 8 in Swift took twice zlib's time per audio datagram, a twentieth of a receiver's CPU).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // One FLAC frame encoded or decoded in memory by Debian's libFLAC (linked: libflac-dev).
        .target(name: "CFLAC", linkerSettings: [.linkedLibrary("FLAC")]),
        // What the controller's player and the simulated speakers share of a playback, pure (no I/O): the stream's
        // timeline, the clock-sync policy, the player's options, PCM samples, WAV headers, sources and a test signal.
        .target(name: "SpeakerPlayback", dependencies: ["Failure", "Speaker"], swiftSettings: strict),
        // Small C helpers for libc calls Swift cannot import directly (pty allocation, eventfd).
        .target(name: "CShims"),
        // The one executor for blocking work (file and database I/O, fsync, waitpid, sleeps): a bounded thread pool
        // outside Swift's cooperative pool, serial lanes on it, and threads for event loops.
        .target(name: "Support", dependencies: ["CShims", "Failure"], swiftSettings: strict),
        // Child processes that inherit only their standard streams (tests, benchmarks, the PostgreSQL helper, tools).
        .target(name: "Spawn", dependencies: ["CShims", "Failure"], swiftSettings: strict),
        // Unit labels: ZPL II for the printer and an SVG/PNG preview, barcodes encoded by Debian's libzint.
        .systemLibrary(name: "CZint", path: "Sources/CZint", providers: [.apt(["libzint-dev"])]),
        .target(name: "Labels", dependencies: ["CZint", "Failure", "Spawn", "Support"], swiftSettings: strict),
        // The transport abstraction, device addresses and the byte-stream back ends.
        .target(
            name: "Transport",
            dependencies: [
                "CShims", "Failure", "Support", .product(name: "Logging", package: "swift-log"),
                .product(name: "HeapModule", package: "swift-collections"),  // the reactor's timer queue
            ],
            swiftSettings: strict),
        // libusb-1.0 and BlueZ's libbluetooth, found with pkg-config.
        .systemLibrary(name: "CLibUSB", pkgConfig: "libusb-1.0", providers: [.apt(["libusb-1.0-0-dev"])]),
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        // USB host back end: LightX over HID feature reports (libusb).
        .target(
            name: "USBTransport",
            dependencies: ["Transport", "LightX", "CLibUSB", "Support", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // USB device side: a FunctionFS HID gadget that presents the simulated headset to a real USB host.
        .target(
            name: "USBGadget",
            dependencies: ["Transport", "LightX", "CShims", "Support", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Bluetooth back end: RFCOMM client and listener, SDP (BlueZ).
        .target(
            name: "BluetoothTransport",
            dependencies: ["Transport", "CBluetooth", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The protocol-neutral request/response core: matching, timeouts, retransmission, pushes, events.
        .target(
            name: "Session",
            dependencies: ["Failure", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]),
        // The client session and the typed device API.
        .target(
            name: "Headset",
            dependencies: ["Failure", "LightX", "Session", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Speakers: the control session on the Session core, a controller over many speakers, UDP discovery.
        .target(
            name: "SpeakerSession",
            dependencies: ["Failure", "Speaker", "SpeakerPlayback", "Session", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Simulated speakers: identity, persisted settings, the speaker side of the protocol, a DAC clock with offset
        // and drift, the discovery responder; served by the generic SimulatedDeviceServer.
        .target(
            name: "SpeakerSimulator",
            dependencies: ["Failure", "Speaker", "SpeakerPlayback", "Simulator", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The HKWHub v1 API as pure code: query parsing, client sessions with priorities, pre-emption and expiry on an
        // injected clock, the calls' rules over a speakers/player protocol, JSON rendering. No I/O (fuzzed).
        // The one writer of hand-ordered JSON documents (the hub's answers, CFX messages): no dependencies.
        .target(name: "OrderedJSON", swiftSettings: strict),
        .target(name: "SpeakerHubCore", dependencies: ["Failure", "OrderedJSON"], swiftSettings: strict),
        // The hub served: the Hummingbird router over SpeakerHubCore, real speakers through SpeakerController, the
        // media folder, the control page.
        .target(
            name: "SpeakerHub",
            dependencies: [
                "AudioInput", "Failure", "SpeakerHubCore", "SpeakerPlayback", "SpeakerSession", "Speaker", "Support", "Transport", "WebServing",
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),  // /jsonrpc's WebSocket (docs/hub.md §8)
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        // The one dlopen loader of CSndfile, CSoxr, CCurl, CALSA and CQpidProton (below).
        .target(name: "CLazyLibrary"),
        // libsndfile (decoding), libsoxr (resampling) and libcurl (HTTP), Debian's: their headers, and the functions
        // Tuneup calls as stubs that open the library with dlopen on first use (not linked: together they map some
        // thirty-five libraries that no other command needs at start-up; include/*.h).
        .target(name: "CSndfile", dependencies: ["CLazyLibrary"]),
        // alsa-lib (the receiver's sound card output), opened the same way (include/CALSA.h).
        .target(name: "CALSA", dependencies: ["CLazyLibrary"]),
        // A real speaker on this machine (`tuneup speaker receive`): the simulated speaker's protocol core with its
        // output on an ALSA device, written by a thread of its own and kept on the DAC clock by the card's position.
        .target(
            name: "SpeakerReceiver",
            dependencies: ["CALSA", "Failure", "Speaker", "SpeakerSimulator", "Simulator", "Support", "Transport",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(name: "CSoxr", dependencies: ["CLazyLibrary"]),
        .target(name: "CCurl", dependencies: ["CLazyLibrary"]),
        // Audio input for the speakers: local files and HTTP streams decoded (libsndfile), resampled (libsoxr) and
        // mixed to a speaker's PCM format.
        .target(
            name: "AudioInput",
            dependencies: ["Failure", "Speaker", "SpeakerPlayback", "Support", "Transport", "CSndfile", "CSoxr", "CCurl"],
            swiftSettings: strict),
        // Firmware images: MCUboot signed images, Intel HEX, raw; keys; the simulated application's manifest.
        .target(
            name: "Firmware",
            dependencies: [
                "Failure", "LightX",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // Weighted, nested progress phases whose overall fraction never goes back, for any number of consumers.
        .target(name: "Progress", dependencies: ["Failure", "Support"], swiftSettings: strict),
        // The firmware updater: the update state machine and its progress stream.
        .target(
            name: "FirmwareUpdate",
            dependencies: ["Failure", "Firmware", "Headset", "LightX", "Progress", "Session", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // What every simulated device shares: the server that serves devices on any link (TCP, pty, in process), the
        // in-process listener and the simulators' error vocabulary. No protocol of any family.
        .target(
            name: "Simulator",
            dependencies: ["Failure", "Support", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The simulated headset: bootloader and application firmware on a modelled NOR flash, its state file, faults,
        // control line and simulated line, served by Simulator.
        .target(
            name: "HeadsetSimulator",
            dependencies: ["Failure", "LightX", "Simulator", "Support", "Transport", "Firmware", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Provisioning recipes: the YAML file parsed and validated (images, key, model, identity rules, settings,
        // tests, lock), its content hash, and the identity generator.
        .target(
            name: "Recipe",
            dependencies: [
                "Failure", "Firmware", "LightX", "Support",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // Device access without simulators: the device registry (address schemes and their openers, composed by the
        // caller), the connector, the real back ends' bridges (USB re-open policy, Bluetooth, BLE, speakers), opening
        // a headset, an updater or a bootloader client by address, presence checks, the factory sequences.
        .target(
            name: "DeviceAccess",
            dependencies: [
                "Failure", "LightX", "Transport", "Headset", "Firmware", "FirmwareUpdate", "USBTransport", "BluetoothTransport", "Session",
                "SpeakerSession", "Capture", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Everything composed for the tools: DeviceAccess (re-exported) with the in-process simulators' schemes
        // (`Devices.registry`), the simulated headset's state file, USB gadget glue, image inspection.
        .target(
            name: "TuneupKit",
            dependencies: [
                "DeviceAccess", "Failure", "LightX", "Transport", "Headset", "Simulator", "HeadsetSimulator", "Firmware", "FirmwareUpdate",
                "USBGadget", "WearableSimulator", "WearableRecording", "SpeakerSession", "SpeakerSimulator", "Support",
                "Capture",  // sim headset --emulate on a USB gadget (USBGadgetEmulation)
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The values of the unit records (runs, steps, measurements, identities, attachments) and their rules: pure, no
        // store (what CFX maps from, and what both stores take and return).
        .target(
            name: "RecordModel",
            dependencies: ["Failure", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // Unit records of factory provisioning: units, runs, steps, measurements, identities and leases (SQLite, or
        // PostgreSQL for a line of stations).
        .target(
            name: "Records",
            dependencies: [
                "RecordModel", "Failure", "Support", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),  // attachments' SHA-256
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        // Captures (docs/capture.md): the pcapng codec and the decoder of every family's links (pure), the writer that
        // appends each block as it happens (off the cooperative pool), the capturing Transport wrapper.
        .target(
            name: "Capture",
            dependencies: ["Failure", "LightX", "Speaker", "Support", "Transport", "WearableLink"],
            swiftSettings: strict),
        // The provisioning station: a recipe run on units in slots, several at once, every run recorded.
        .target(
            name: "Station",
            dependencies: [
                "Failure", "LightX", "Transport", "Headset", "Firmware", "FirmwareUpdate", "Recipe", "Records",
                "Labels",  // a label for every unit that passes (StationSession)
                "DeviceAccess",  // real back ends only: the caller passes the registry (the tools' has the simulators)
                "Support",  // attachments are read on the blocking executor
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The Hummingbird server of the operator page, the line dashboard and the hub: started once it listens, stopped
        // within about a second whatever its clients do (idle connections closed, WebSockets sent a close frame).
        .target(
            name: "WebServing",
            dependencies: [
                "Support",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        // The station's operator page and the line dashboard: Hummingbird pages whose updates are pushed over a
        // WebSocket (station events fanned out without blocking the station; the line's PostgreSQL read on a timer).
        .target(
            name: "StationPage",
            dependencies: [
                "Failure", "Records", "Station", "Support", "Transport", "WebServing",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict),
        // IPC-CFX (IPC-2591) messages mapped from the records: envelopes and bodies as JSON. Pure, no I/O: it maps the
        // record values (RecordModel), with no store or database driver (tools/check-layering.py).
        .target(name: "CFX", dependencies: ["RecordModel", "OrderedJSON", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // Debian's Qpid Proton C library (AMQP 1.0): its headers, and the functions the publisher calls as stubs that
        // open it with dlopen on first use (it brings libssl and libcrypto: a millisecond of every start; the header).
        .target(name: "CQpidProton", dependencies: ["CLazyLibrary"]),
        // The station's CFX publisher: a durable spool and an AMQP 1.0 sender on Proton's proactor (its own thread).
        .target(
            name: "CFXPublisher",
            dependencies: ["CFX", "CQpidProton", "Failure", "Records", "Station", "Support"],
            swiftSettings: strict),
        // The commit the build was made from (TUNEUP_COMMIT above), for `tuneup --version`.
        .target(name: "CBuildInfo", cSettings: [.define("TUNEUP_COMMIT", to: "\"\(buildCommit)\"")]),
        // The terminal: what the tools write (`Console`, off the pool, in order; `Output`: text or JSON) and their live
        // views, one width- and height-aware renderer (`LiveScreen`) under the station's, the updater's and the wearable's.
        .target(
            name: "Terminal",
            dependencies: ["Failure", "Support", "Transport", "Progress", "FirmwareUpdate", "Labels", "Station", "WearableRecording"],
            swiftSettings: strict),
        .executableTarget(
            name: "tuneup",
            dependencies: [
                "CBuildInfo", "Failure", "LightX", "Transport", "Headset", "HeadsetSimulator", "Firmware", "FirmwareUpdate", "USBTransport", "USBGadget",
                "BluetoothTransport", "TuneupKit", "Recipe", "Records", "Station", "SpeakerPlayback", "SpeakerSession", "SpeakerSimulator", "Progress",
                "Wearable", "WearableLink", "WearableSession", "WearableSimulator", "WearableRecording", "SpeakerHub", "AudioInput", "Spawn", "Support",
                "StationPage", "Labels", "CFX", "CFXPublisher", "SpeakerReceiver", "Terminal", "Capture", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The Swift runtime and Foundation linked in: factory scripts start tuneup once per step, and the dynamic
            // loader's symbol lookups into a dozen Swift libraries were a third of its start-up (docs/architecture.md,
            // "Start-up"). Compiled with it too: this module's imports then name the static libraries Foundation needs
            // (CoreFoundation, ICU). A target's linker settings reach every product that links it, so no test target
            // depends on this one (there is no static Testing library to link them with).
            // --no-export-dynamic: the static standard library's link arguments export every symbol of the program
            // (88k entries in .dynsym); nothing looks them up, but the loader and the runtime's start (dladdr over the
            // table) pay for them at every start (docs/architecture.md, "Start-up"). One symbol stays exported:
            // CSndfile's mpg123_new, which libsndfile's libmpg123 must bind to (it makes the decoder quiet).
            swiftSettings: strict + [.unsafeFlags(["-static-stdlib"])],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xlinker", "--no-export-dynamic", "-Xlinker", "--export-dynamic-symbol=mpg123_new"])]),
        // Benchmarks: `swift run -c release tuneup-bench --help`.
        .executableTarget(
            name: "tuneup-bench",
            dependencies: [
                "LightX", "Transport", "Headset", "Firmware", "FirmwareUpdate", "Simulator", "HeadsetSimulator", "TuneupKit", "Recipe", "Records", "Station",
                "ThrowawayPostgres", "ThrowawayRabbitMQ", "Wearable", "WearableSession", "WearableSimulator", "SpeakerPlayback", "SpeakerSession",
                "SpeakerSimulator", "Spawn", "Support", "StationPage", "CFX", "CFXPublisher", "SpeakerReceiver", "Capture",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            swiftSettings: strict),
        // Helpers shared by the test targets.
        // A PostgreSQL server of a test's or benchmark's own (Debian's binaries, initdb into a temporary directory).
        .target(name: "ThrowawayPostgres", dependencies: ["Failure", "Spawn"], swiftSettings: strict),
        // A RabbitMQ broker (AMQP 1.0) of a test's or benchmark's own, and an AMQP consumer (tools/cfx-consume.py).
        .target(name: "ThrowawayRabbitMQ", dependencies: ["Failure", "Spawn"], swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["ThrowawayPostgres", "ThrowawayRabbitMQ", "Spawn", "Support", "Transport", "CSndfile"], path: "Tests/TestSupport", swiftSettings: testing),
        .testTarget(name: "LightXTests", dependencies: ["LightX", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "WearableTests", dependencies: ["Wearable", "TestSupport"], swiftSettings: testing),
        .testTarget(
            name: "WearableSessionTests",
            dependencies: ["WearableSession", "WearableSimulator", "WearableRecording", "WearableLink", "Wearable", "Transport",
                           "TestSupport"],
            swiftSettings: testing),
        .testTarget(
            name: "WearableRecordingTests",
            dependencies: ["WearableRecording", "WearableSession", "WearableSimulator", "Wearable", "Support", "TestSupport"],
            swiftSettings: testing),
        .testTarget(name: "SpeakerTests", dependencies: ["Speaker", "CSndfile", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "SpeakerPlaybackTests", dependencies: ["SpeakerPlayback", "Speaker", "Failure"], swiftSettings: testing),
        .testTarget(
            name: "SpeakerSessionTests",
            dependencies: ["SpeakerSession", "SpeakerPlayback", "SpeakerSimulator", "Speaker", "Simulator", "Support", "Transport", "TestSupport"],
            swiftSettings: testing),
        .testTarget(
            name: "SpeakerReceiverTests",
            dependencies: ["SpeakerReceiver", "SpeakerPlayback", "SpeakerSession", "SpeakerSimulator", "Speaker", "Transport", "TestSupport"],
            swiftSettings: testing),
        .testTarget(
            name: "SpeakerHubTests",
            dependencies: ["SpeakerHub", "SpeakerHubCore", "SpeakerSession", "SpeakerSimulator", "Speaker", "Transport", "TestSupport", "Spawn", "Support",
                           .product(name: "HummingbirdWSClient", package: "hummingbird-websocket")],
            swiftSettings: testing),
        .testTarget(
            name: "AudioInputTests",
            dependencies: ["AudioInput", "Speaker", "Transport", "CSndfile", "TestSupport"],
            swiftSettings: testing),
        .testTarget(name: "SupportTests", dependencies: ["Support", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "LabelsTests", dependencies: ["Labels", "Spawn", "Support", "Transport", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "Support", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "SessionTests", dependencies: ["Session", "Transport", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "HeadsetTests", dependencies: ["Headset", "HeadsetSimulator", "Transport", "LightX", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "HeadsetSimulator", "LightX", "Transport", "Firmware", "Support", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "FirmwareTests", dependencies: ["Firmware", "LightX", "TestSupport", "Spawn"], swiftSettings: testing),
        .testTarget(
            name: "FirmwareUpdateTests",
            dependencies: ["FirmwareUpdate", "Firmware", "Simulator", "HeadsetSimulator", "Headset", "Transport", "LightX", "Failure", "Progress", "TestSupport"],
            swiftSettings: testing),
        .testTarget(name: "USBTransportTests", dependencies: ["USBTransport", "Transport", "LightX", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "USBGadgetTests", dependencies: ["USBGadget", "Transport", "LightX", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "BluetoothTransportTests", dependencies: ["BluetoothTransport", "Transport", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "ProgressTests", dependencies: ["Progress", "TestSupport"], swiftSettings: testing),
        .testTarget(name: "TerminalTests", dependencies: ["Terminal", "Station", "TestSupport"], swiftSettings: testing),
        .testTarget(
            name: "TuneupKitTests",
            dependencies: ["TuneupKit", "Transport", "Headset", "Firmware", "Failure", "Session", "SpeakerSession", "TestSupport"],
            swiftSettings: testing),
        .testTarget(name: "RecipeTests", dependencies: ["Recipe", "Firmware", "Failure", "LightX", "TestSupport"], swiftSettings: testing),
        .testTarget(
            name: "RecordsTests",
            dependencies: ["Records", "Failure", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: testing),
        .testTarget(
            name: "StationTests",
            dependencies: ["Station", "HeadsetSimulator", "Records", "Recipe", "TuneupKit", "FirmwareUpdate", "LightX", "TestSupport"],
            swiftSettings: testing),
        .testTarget(
            name: "StationPageTests",
            dependencies: [
                "StationPage", "Station", "HeadsetSimulator", "Records", "Recipe", "TuneupKit", "TestSupport", "Spawn", "Support",
                "WebServing", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            swiftSettings: testing),
        .testTarget(
            name: "CFXTests",
            dependencies: ["CFX", "CFXPublisher", "Station", "HeadsetSimulator", "Records", "Recipe", "TuneupKit", "TestSupport", "Spawn", "Support"],
            swiftSettings: testing),
        .testTarget(
            name: "CaptureTests",
            dependencies: ["Capture", "Firmware", "FirmwareUpdate", "Headset", "HeadsetSimulator", "LightX", "Simulator", "Support", "Transport", "TestSupport"],
            swiftSettings: testing),
        .testTarget(name: "SpawnTests", dependencies: ["Failure", "Spawn", "Support"], swiftSettings: testing),
        // The Lua dissectors of tools/wireshark/ run by tshark against the project's own decoding (issue 32 §2).
        .testTarget(
            name: "WiresharkTests",
            dependencies: ["Capture", "DeviceAccess", "Firmware", "FirmwareUpdate", "Headset", "HeadsetSimulator", "LightX", "Simulator",
                           "Speaker", "SpeakerSession", "SpeakerSimulator", "Spawn", "Support", "TestSupport", "Transport", "Wearable",
                           "WearableLink", "WearableSession", "WearableSimulator"],
            swiftSettings: testing),
        // The CLI's tests run the built tuneup as a process (not a dependency: its static Swift runtime, above).
        .testTarget(name: "TuneupTests", dependencies: ["Capture", "LightX", "Transport", "TuneupKit", "Records", "Spawn", "TestSupport"], swiftSettings: testing),
    ]
)
