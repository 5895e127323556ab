import Foundation
@testable import Recipe
import Testing

/// issue 31 §5: a measurement's judgement at the edges of its limits and of its marginal band.
@Suite struct JudgementBoundaryTests {
    typealias Spec = ProvisioningRecipe.TestSpec
    typealias Limits = ProvisioningRecipe.Limits

    func spec(_ limits: Limits, marginal: Limits? = nil) -> Spec {
        Spec(name: "mic", unit: .dBFS, limits: limits, marginal: marginal, retry: .once)
    }

    /// Limits are inclusive at both ends; a value just outside fails.
    @Test func aValueExactlyAtALimitPasses() {
        let test = spec(Limits(low: -42, high: -34))
        #expect(test.judge(-42) == .pass, "exactly at the low limit")
        #expect(test.judge(-34) == .pass, "exactly at the high limit")
        #expect(test.judge(-42.001) == .fail)
        #expect(test.judge(-33.999) == .fail)
        #expect(test.judge(-38) == .pass)
        #expect(Limits(low: -42, high: -34).contains(-42) && Limits(low: -42, high: -34).contains(-34))
        #expect(Limits(low: 1).contains(1) && !Limits(low: 1).contains(0.999))
        #expect(Limits(high: 1).contains(1) && !Limits(high: 1).contains(1.001))
        #expect(spec(Limits(low: 0)).judge(0) == .pass && spec(Limits(high: 0)).judge(0) == .pass)
        #expect(test.judge(.nan) == .fail && test.judge(.infinity) == .fail)
    }

    /// Inside the marginal band: pass. Outside it but inside the limits: marginal. Outside the limits: fail. The
    /// band's own edges are inside it.
    @Test func theMarginalBandIsWhereAValuePasses() {
        let test = spec(Limits(low: -42, high: -34), marginal: Limits(low: -41, high: -35))
        #expect(test.judge(-38) == .pass, "in the middle of the band")
        #expect(test.judge(-41) == .pass && test.judge(-35) == .pass, "at the band's edges")
        #expect(test.judge(-41.5) == .marginal, "between the low limit and the band")
        #expect(test.judge(-34.5) == .marginal, "between the band and the high limit")
        #expect(test.judge(-42) == .marginal && test.judge(-34) == .marginal, "at the limits")
        #expect(test.judge(-42.5) == .fail && test.judge(-33.5) == .fail)
    }
}

extension JudgementBoundaryTests {
    /// issue 31 §5 (planted: the attoseconds divided into microseconds): a retry delay is encoded (into the recipe's
    /// JSON and content hash) in whole nanoseconds.
    @Test func aRetryDelayIsEncodedInNanoseconds() throws {
        for (delay, nanoseconds) in [(Duration.milliseconds(200), 200_000_000), (.seconds(1.5), 1_500_000_000), (.zero, 0),
                                     (.nanoseconds(7), 7)] {
            let data = try JSONEncoder().encode(ProvisioningRecipe.RetryPolicy(attempts: 3, delay: delay))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["delayNanoseconds"] as? Int == nanoseconds, "\(delay): \(String(decoding: data, as: UTF8.self))")
            #expect(object["attempts"] as? Int == 3)
        }
    }
}
