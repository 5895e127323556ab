import Simulator
import Transport

/// How a simulated headset behaves on its links — for testing clients' timeouts and retries.
///
/// Text forms (`init(parsing:)` / `description`): `normal`, `slow`, `flaky`, `flaky:SEED`, `silent`, `stops-after:N`.
public enum BehaviourProfile: Sendable, Hashable, CustomStringConvertible {
    /// Answers every request at once.
    case normal
    /// Delays every reply by `slowReplyDelay` (150 ms); pushes are not delayed. Replies on one link stay in order, so
    /// pipelined requests are answered 150 ms apart.
    case slow
    /// Serves every link through a `ConditionedTransport` with `flakyConditions(seed:)`: light bit corruption and
    /// occasional lost chunks in both directions, reproducible for a given seed and traffic.
    case flaky(seed: UInt64)
    /// Never answers: received bytes are discarded unprocessed and nothing is ever sent (no replies, no pushes).
    /// Device-side events (buttons, battery) still change the state.
    case silent
    /// Answers the first `after` requests (counted over the device's lifetime, across links), then behaves like
    /// `.silent`.
    case stopsAnswering(after: Int)

    /// The reply delay of `.slow`.
    public static let slowReplyDelay: Duration = .milliseconds(150)

    /// The link conditions of `.flaky`: about 1 bit error per 5000 bytes (≈ 5 % of full-size frames) and 2 % of
    /// chunks lost, with the given seed.
    public static func flakyConditions(seed: UInt64) -> LinkConditions {
        LinkConditions(corruptionRate: 0.0002, dropRate: 0.02, seed: seed)
    }

    /// Parses a text form. Throws `SimulatorError(.invalidProfile)` naming the accepted forms.
    public init(parsing text: String) throws(SimulatorError) {
        let trimmed = String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        let parts = trimmed.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let name = parts[0].lowercased()
        let argument = parts.count > 1 ? parts[1] : nil
        func bad(_ why: String) -> SimulatorError {
            SimulatorError(.invalidProfile, "bad behaviour profile '\(text)': \(why); expected normal, slow, flaky, "
                + "flaky:SEED, silent or stops-after:N")
        }
        switch (name, argument) {
        case ("normal", nil): self = .normal
        case ("slow", nil): self = .slow
        case ("silent", nil): self = .silent
        case ("flaky", nil): self = .flaky(seed: 0)
        case ("flaky", let seedText?):
            let seed = seedText.hasPrefix("0x") ? UInt64(seedText.dropFirst(2), radix: 16)
                : (seedText.allSatisfy(\.isNumber) ? UInt64(seedText) : nil)
            guard let seed else { throw bad("the seed '\(seedText)' is not an unsigned integer (decimal or 0x hex)") }
            self = .flaky(seed: seed)
        case ("stops-after", let countText?):
            guard countText.allSatisfy(\.isNumber), let n = Int(countText) else {
                throw bad("the count '\(countText)' is not a non-negative integer")
            }
            self = .stopsAnswering(after: n)
        case ("stops-after", nil): throw bad("stops-after needs a count, e.g. stops-after:3")
        case ("normal", _?), ("slow", _?), ("silent", _?): throw bad("'\(name)' takes no argument")
        default: throw bad("unknown profile '\(parts[0])'")
        }
    }

    /// The text form: `normal`, `slow`, `flaky:SEED`, `silent` or `stops-after:N`.
    public var description: String {
        switch self {
        case .normal: return "normal"
        case .slow: return "slow"
        case .flaky(let seed): return "flaky:\(seed)"
        case .silent: return "silent"
        case .stopsAnswering(let n): return "stops-after:\(n)"
        }
    }

    /// The delay before each reply, if any.
    var replyDelay: Duration? { self == .slow ? Self.slowReplyDelay : nil }

    /// Whether the device still talks after having answered `answered` requests.
    func answers(afterAnswering answered: Int) -> Bool {
        switch self {
        case .silent: return false
        case .stopsAnswering(let n): return answered < n
        case .normal, .slow, .flaky: return true
        }
    }

    /// The link the device actually serves for `transport` (owning it: closing the result closes `transport`).
    func link(for transport: any Transport) -> any Transport {
        guard case .flaky(let seed) = self else { return transport }
        return ConditionedTransport(wrapping: transport, conditions: Self.flakyConditions(seed: seed))
    }
}
