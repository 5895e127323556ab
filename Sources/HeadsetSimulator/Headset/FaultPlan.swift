import Simulator
import Transport

/// Faults a simulator injects into every device it runs (the CLI's `--faults SPEC`).
///
/// Text form (`init(parsing:)`, `description`): items separated by `;`, whitespace around items ignored:
/// - `cut@N` — cut the power during flash operation N (N ≥ 1; erases and page programs are numbered from 1 per
///   device since the simulator started): the operation is torn (an erase leaves each byte of the sector either as it
///   was or 0xFF, a program writes only a prefix), every host link drops, RAM is lost, and the device powers up
///   again after `DeviceTiming.powerUpDelay`. May be repeated.
/// - `fail@N` — flash operation N fails: flash unchanged, the command answers Fail. May be repeated.
/// - `link:SPEC` — serve every host link through a `ConditionedTransport` with `LinkConditions(parsing: SPEC)`
///   (e.g. `link:drop=0.01,corrupt=0.0001,seed=3`); link k of a device (0, 1, ... since start) uses the spec's seed
///   plus k, so reconnects do not replay the same faults. At most once.
/// - `seed=N` — seed of the torn-operation generator (decimal or 0x hex; default 0). At most once.
/// The empty string and `none` mean no faults. Errors: `SimulatorError(.invalidFaults)`, one line quoting the spec
/// and naming the bad item.
public struct FaultPlan: Sendable, Hashable, CustomStringConvertible {
    /// Flash operations during which the power is cut.
    public var powerCutAt: Set<Int>
    /// Flash operations that fail.
    public var failAt: Set<Int>
    /// Conditions for every host link, nil for none.
    public var link: LinkConditions?
    /// Seed of the torn-operation generator.
    public var seed: UInt64

    /// Creates a plan; the default injects nothing.
    public init(powerCutAt: Set<Int> = [], failAt: Set<Int> = [], link: LinkConditions? = nil, seed: UInt64 = 0) {
        self.powerCutAt = powerCutAt
        self.failAt = failAt
        self.link = link
        self.seed = seed
    }

    /// No faults.
    public static let none = FaultPlan()

    /// One line summarising the grammar, for help texts and error messages.
    public static let usage = "items separated by ';': cut@N, fail@N, link:LINKSPEC (e.g. link:drop=0.01,seed=3), seed=N; or none"

    /// Parses the text form described on the type.
    public init(parsing spec: String) throws(SimulatorError) {
        self.init()
        let trimmed = spec.trimmingSpaces
        if trimmed.isEmpty || trimmed == "none" { return }
        func bad(_ why: String) -> SimulatorError {
            SimulatorError(.invalidFaults, "bad fault spec '\(spec)': \(why); expected \(Self.usage)")
        }
        var seenSeed = false
        for raw in trimmed.split(separator: ";", omittingEmptySubsequences: true) {
            let item = String(raw).trimmingSpaces
            if item.isEmpty { continue }
            if item.hasPrefix("link:") {
                guard link == nil else { throw bad("'link:' is given twice") }
                let text = String(item.dropFirst(5))
                do {
                    link = try LinkConditions(parsing: text)
                } catch let error as TransportError {
                    throw bad("link conditions: \(error.message)")
                } catch {
                    throw bad("link conditions: \(error)")
                }
            } else if item.hasPrefix("cut@") || item.hasPrefix("fail@") {
                let isCut = item.hasPrefix("cut@")
                let number = String(item.dropFirst(isCut ? 4 : 5))
                guard !number.isEmpty, number.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(number), n >= 1 else {
                    throw bad("'\(item)' needs a flash operation number 1, 2, ...")
                }
                if isCut { powerCutAt.insert(n) } else { failAt.insert(n) }
            } else if item.hasPrefix("seed=") {
                guard !seenSeed else { throw bad("'seed=' is given twice") }
                seenSeed = true
                let value = String(item.dropFirst(5))
                let parsed = value.hasPrefix("0x") ? UInt64(value.dropFirst(2), radix: 16)
                    : (value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) ? UInt64(value) : nil)
                guard let parsed else { throw bad("seed '\(value)' is not an unsigned integer (decimal or 0x hex)") }
                seed = parsed
            } else {
                throw bad("unknown item '\(item)'")
            }
        }
        if let both = powerCutAt.intersection(failAt).min() {
            throw bad("operation \(both) is both cut and failed")
        }
    }

    /// The canonical text form; `FaultPlan(parsing: p.description) == p`. No faults is `none`.
    public var description: String {
        var items = powerCutAt.sorted().map { "cut@\($0)" } + failAt.sorted().map { "fail@\($0)" }
        if let link { items.append("link:\(link)") }
        if seed != 0 { items.append("seed=\(seed)") }
        return items.isEmpty ? "none" : items.joined(separator: ";")
    }

    /// Whether the plan injects nothing.
    public var isEmpty: Bool { powerCutAt.isEmpty && failAt.isEmpty && link == nil }

    /// The flash part of the plan.
    var flashFaults: FlashFaults { FlashFaults(powerCutAt: powerCutAt, failAt: failAt, seed: seed) }

    /// The conditions for link number `ordinal` of a device, if any.
    func linkConditions(forLink ordinal: UInt64) -> LinkConditions? {
        guard var c = link else { return nil }
        c.seed = c.seed &+ ordinal
        return c
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
