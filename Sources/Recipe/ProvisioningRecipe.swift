import Foundation
import LightX

/// A provisioning recipe: what a station does to each unit of one product (docs/recipe.md is the reference).
///
/// A value: parsed and range-checked from YAML by `init(yaml:file:)`, checked against its images and key by
/// `ProvisioningRecipe.load(path:)`. `contentHash` identifies its content (not its layout) in unit records.
public struct ProvisioningRecipe: Sendable, Hashable, Encodable {
    /// The recipe format this version reads.
    public static let formatVersion = 1

    /// The product the recipe applies to.
    public struct Product: Sendable, Hashable, Encodable {
        /// The model the images must be made for and the unit must report (e.g. `TS-1`).
        public var model: String
        /// A display name, when given.
        public var name: String?
    }

    /// Images and the key they must be signed with: paths as written, relative to the recipe's directory.
    public struct Images: Sendable, Hashable, Encodable {
        public var application: String
        public var resource: String?
        /// The Ed25519 public key (PEM) every image must be signed with.
        public var key: String
    }

    /// Settings applied to every unit (nil: left as the firmware has it).
    public struct Settings: Sendable, Hashable, Encodable {
        public struct ANC: Sendable, Hashable, Encodable {
            public var enabled: Bool
            /// 0.0...1.0.
            public var level: Double?
        }
        public struct Ambient: Sendable, Hashable, Encodable {
            /// Steps 0...steps-1 (the application image's manifest gives the steps).
            public var left: Int?
            public var right: Int?
            public var preset: AwarenessLevel?
        }
        public struct EQ: Sendable, Hashable, Encodable {
            public var audioPreset: AudioPreset?
            /// A graphic-EQ preset name from the application's manifest: selected, and the gains are written to it.
            public var graphicPreset: String?
            /// One gain per band (dB), within the manifest's range.
            public var gains: [Int]?
        }
        public var anc: ANC?
        public var ambient: Ambient?
        public var eq: EQ?
        /// The smart button controls ANC.
        public var smartButton: Bool?
        public var autoOff: Bool?
        public var voicePrompt: Bool?
    }

    /// Awareness (ambient) preset names and their LightX codes.
    public enum AwarenessLevel: String, Sendable, Hashable, Encodable, CaseIterable {
        case none, low, medium, high
        public var code: AwarenessPreset {
            switch self {
            case .none: return .none
            case .low: return .low
            case .medium: return .medium
            case .high: return .high
            }
        }
    }

    /// Audio EQ preset names and their LightX codes.
    public enum AudioPreset: String, Sendable, Hashable, Encodable, CaseIterable {
        case music, gaming, movie, conference
        public var code: AudioEQPreset {
            switch self {
            case .music: return .music
            case .gaming: return .gaming
            case .movie: return .movie
            case .conference: return .conference
            }
        }
    }

    /// Low and high limits; either may be open.
    public struct Limits: Sendable, Hashable, Encodable {
        public var low: Double?
        public var high: Double?

        public init(low: Double? = nil, high: Double? = nil) { (self.low, self.high) = (low, high) }

        public func contains(_ value: Double) -> Bool {
            (low.map { value >= $0 } ?? true) && (high.map { value <= $0 } ?? true)
        }
    }

    /// Calibration steps.
    public struct Calibration: Sendable, Hashable, Encodable {
        public struct ANC: Sendable, Hashable, Encodable {
            public var enabled: Bool
            /// The accepted range of the calibration result (gain correction, dB).
            public var limits: Limits
        }
        /// ANC calibration; nil = not calibrated.
        public var anc: ANC?
    }

    /// Units a measurement may have.
    public enum MeasurementUnit: String, Sendable, Hashable, Encodable, CaseIterable {
        case dB, dBFS, dBSPL, Hz, percent, V, mV, mA, ms, s, count, none
    }

    /// How often a failing test is tried and how long the station waits between tries.
    public struct RetryPolicy: Sendable, Hashable, Encodable {
        /// Tries in all, 1...10.
        public var attempts: Int
        /// 0...60 s.
        public var delay: Duration

        public static let once = RetryPolicy(attempts: 1, delay: .zero)

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(attempts, forKey: .attempts)
            let (seconds, attoseconds) = delay.components
            try c.encode(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, forKey: .delayNanoseconds)
        }
        private enum Keys: String, CodingKey { case attempts, delayNanoseconds }
    }

    /// A test with a typed measurement: passes within `limits`, is marked marginal outside `marginal` (which lies
    /// within `limits`).
    public struct TestSpec: Sendable, Hashable, Encodable {
        /// Unique within the recipe: `a-z 0-9 - _ .`.
        public var name: String
        public var unit: MeasurementUnit
        public var limits: Limits
        public var marginal: Limits?
        public var retry: RetryPolicy
        /// Files the test attaches to the unit's run (nil: none).
        public var attach: [AttachSpec]? = nil

        /// pass, marginal (within limits, outside the marginal limits) or fail.
        public func judge(_ value: Double) -> Judgement {
            guard value.isFinite, limits.contains(value) else { return .fail }
            if let marginal, !marginal.contains(value) { return .marginal }
            return .pass
        }
    }

    /// A file a test attaches to the unit's run (docs/recipe.md, `attach:`).
    public enum AttachSpec: Sendable, Hashable, Encodable {
        /// The test's readings (every attempt: its number, seconds from the step's start, value, judgement) as CSV.
        case readings(name: String)
        /// A file another program (the fixture) wrote: `path` relative to the recipe's directory, with the fields
        /// `{hardware-id}` and `{serial}`; stored under `name`, of `mediaType` (nil: from the file name's extension).
        case file(path: String, name: String, mediaType: String?)

        /// The attachment's name in the run.
        public var name: String {
            switch self {
            case let .readings(name), let .file(_, name, _): name
            }
        }

        /// `path` with its fields filled in.
        public static func render(_ path: String, hardwareID: String, serial: String) -> String {
            path.replacingOccurrences(of: "{hardware-id}", with: hardwareID).replacingOccurrences(of: "{serial}", with: serial)
        }
    }

    /// Statistical process control (docs/recipe.md, `spc:`): the station stops taking units when, over the last
    /// `window` units, a measurement's Cpk or the first-pass yield falls below its limit.
    public struct ProcessControl: Sendable, Hashable, Encodable {
        /// 2...10000 units.
        public var window: Int
        /// Every measurement with limits (0.1...10).
        public var minCpk: Double?
        /// 0...1.
        public var minFirstPassYield: Double?
        /// Per measurement (a test's name, or `anc-correction`), its own least Cpk; 0 turns it off.
        public var measurements: [String: Double]?
    }

    /// A measurement's outcome against its limits.
    public enum Judgement: String, Sendable, Hashable, Codable {
        case pass, marginal, fail
    }

    public var version: Int
    public var product: Product
    public var images: Images
    public var identity: IdentityRules
    public var settings: Settings
    public var calibration: Calibration
    public var tests: [TestSpec]
    /// Close the factory commands as the last step (and prove they are closed).
    public var lock: Bool
    /// Free key/value traceability recorded with every run (nil: none).
    public var metadata: [String: String]? = nil
    /// A unit whose runs failed (or erred) this many times since its last release is quarantined: the station refuses
    /// it until `tuneup records release` (nil: never).
    public var maxRework: Int? = nil
    /// Process control limits (nil: none).
    public var spc: ProcessControl? = nil
    /// Steps that ask the operator, in their places among the tests (nil: none).
    public var prompts: [PromptSpec]? = nil
    /// A code the operator scans per unit, bound to it (nil: none).
    public var scan: ScanSpec? = nil

    /// Whether the station needs an operator to answer (prompts or a scan).
    public var asksOperator: Bool { scan != nil || !(prompts ?? []).isEmpty }

    /// Why nobody could answer this recipe's questions (a scan, prompts) with neither a terminal nor an operator
    /// page, or nil when it asks nothing or someone can answer. Checked with the recipe, before any records are
    /// opened or a unit touched.
    public func unanswerable(terminal: Bool, page: Bool) -> String? {
        guard asksOperator, !terminal, !page else { return nil }
        return "the recipe asks the operator (scan or prompts) but stdin is not a terminal and there is no --ui: run the station on a terminal or give --ui HOST:PORT"
    }

    /// The identity generator of these rules and this model.
    public var identityGenerator: IdentityGenerator { IdentityGenerator(rules: identity, model: product.model) }
}
