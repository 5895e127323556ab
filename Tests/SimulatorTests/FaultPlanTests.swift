import Testing
import Transport
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct FaultPlanTests {
    @Test func parsesEveryItem() throws {
        let plan = try FaultPlan(parsing: " cut@37 ; fail@12;cut@5;link:drop=0.01,corrupt=0.001,seed=3; seed=0x10 ")
        #expect(plan.powerCutAt == [5, 37])
        #expect(plan.failAt == [12])
        #expect(plan.link == LinkConditions(corruptionRate: 0.001, dropRate: 0.01, seed: 3))
        #expect(plan.seed == 16)
        #expect(plan.flashFaults == FlashFaults(powerCutAt: [5, 37], failAt: [12], seed: 16))
        #expect(try FaultPlan(parsing: plan.description) == plan)
        #expect(plan.description == "cut@5;cut@37;fail@12;link:corrupt=0.001,drop=0.01,seed=3;seed=16")
        // Link k of a device gets the spec's seed plus k.
        #expect(plan.linkConditions(forLink: 2)?.seed == 5)
    }

    @Test func emptyAndNoneMeanNoFaults() throws {
        for text in ["", "  ", "none", ";", " ; "] {
            let plan = try FaultPlan(parsing: text)
            #expect(plan == .none && plan.isEmpty && plan.description == "none")
        }
        #expect(try FaultPlan(parsing: "seed=5").isEmpty)
        #expect(try !FaultPlan(parsing: "link:none").isEmpty)
    }

    @Test(arguments: [
        ("cut@", "'cut@' needs a flash operation number"), ("cut@0", "'cut@0'"), ("cut@-1", "'cut@-1'"), ("cut@x", "'cut@x'"),
        ("fail@1.5", "'fail@1.5'"), ("cut 3", "unknown item 'cut 3'"), ("power@3", "unknown item"),
        ("seed=abc", "seed 'abc'"), ("seed=1;seed=2", "'seed=' is given twice"), ("link:bw=fast", "bad bandwidth"),
        ("link:drop=0.1;link:drop=0.2", "'link:' is given twice"), ("cut@3;fail@3", "operation 3 is both cut and failed"),
        ("cut@99999999999999999999", "needs a flash operation number"),
    ])
    func rejectsBadSpecs(spec: String, fragment: String) {
        #expect {
            try FaultPlan(parsing: spec)
        } throws: { error in
            guard let e = error as? SimulatorError else { return false }
            return e.code == .invalidFaults && e.message.contains("'\(spec)'") && e.message.contains(fragment)
                && !e.message.contains("\n")
        }
    }
}
