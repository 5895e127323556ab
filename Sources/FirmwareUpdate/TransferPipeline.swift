import Headset
import LightX

/// The I/O of a `TransferMachine`: puts the operations it chooses on the link in its order through
/// `Bootloader.submit`, awaits their replies concurrently, and hands every outcome (with its latency) back to it.
/// The same driver programs an image and reads a region back.
enum TransferPipeline {
    /// Runs `machine` on `bootloader` until it has nothing left to issue on this link, recording every outcome in
    /// `machine` as it comes (so that it survives a throw); `report` is called after each.
    /// Throws `HeadsetError` when the link fails (the caller reconnects, `linkLost()`, `resume(...)`), and what
    /// `TransferMachine.complete` throws.
    static func run(_ machine: inout TransferMachine, on bootloader: Bootloader,
                    report: (TransferMachine) -> Void = { _ in }) async throws {
        struct Completion: Sendable {
            let operation: TransferMachine.Operation
            let outcome: TransferMachine.Outcome
        }
        try await withThrowingTaskGroup(of: Completion.self) { group in
            var inFlight = 0
            while true {
                while let op = machine.next() {
                    let ticket: BootTicket
                    do {
                        ticket = try await bootloader.submit(machine.request(for: op), timeout: machine.timeout)
                    } catch let error as HeadsetError where error.code == .invalidArgument {
                        throw UpdateError(.badImage, "cannot encode a flash request: \(error.message)")
                    }
                    inFlight += 1
                    group.addTask {
                        guard let reply = try await bootloader.reply(to: ticket) else { return Completion(operation: op, outcome: .lost) }
                        let latency = reply.latency.seconds
                        return Completion(operation: op, outcome: reply.answer.isOK
                                          ? .ok(latency: latency, data: reply.data) : .refused(reply.answer, latency: latency))
                    }
                }
                guard inFlight > 0, let done = try await group.next() else { break }
                inFlight -= 1
                try machine.complete(done.operation, done.outcome)
                report(machine)
            }
        }
    }
}
