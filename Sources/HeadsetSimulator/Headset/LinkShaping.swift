import Logging
import Transport

/// Faults a headset injects into its own links, on purpose: the behaviour profile's (a flaky link, a delay before
/// every reply) and the fault plan's link conditions (numbered per link, from 0). Flash faults are the machine's.
struct LinkShaping: Sendable {
    let profile: BehaviourProfile
    let faults: FaultPlan
    let logger: Logger?

    /// The delay before every reply, if any.
    var replyDelay: Duration? { profile.replyDelay }

    /// The link the device actually serves for `transport`, its `number`th link (owning it: closing the result closes
    /// `transport`).
    func shape(_ transport: any Transport, number: UInt64) -> any Transport {
        var link = profile.link(for: transport)
        if let conditions = faults.linkConditions(forLink: number) {
            link = ConditionedTransport(wrapping: link, conditions: conditions, logger: logger)
        }
        return link
    }
}
