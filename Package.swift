// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "Tuneup",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LightX", targets: ["LightX"]),
    ],
    targets: [
        // Pure protocol values: frames, header, enums, typed commands, CRC. No I/O.
        .target(name: "LightX", swiftSettings: strict),
        // Benchmarks: `swift run -c release tuneup-bench --help`.
        .executableTarget(name: "tuneup-bench", dependencies: ["LightX"], swiftSettings: strict),
        .testTarget(name: "LightXTests", dependencies: ["LightX"], swiftSettings: strict),
    ]
)
