extension SimulatedLine.Event {
    /// "slot 0: unit 3 arrived (tcp:127.0.0.1:4400)", "slot 0: unit 3 taken out", "every unit has come and gone".
    public var text: String {
        switch self {
        case let .arrived(slot, unit, address): return "slot \(slot): unit \(unit) arrived (\(address))"
        case let .left(slot, unit): return "slot \(slot): unit \(unit) taken out"
        case .done: return "every unit has come and gone"
        }
    }
}

extension SimulatedLine {
    /// Hands every event to `report` until every unit has come and gone, or `control` says `quit` or ends (a signal,
    /// the end of standard input); the line keeps running (call `shutdown()`).
    public func follow(until control: AsyncStream<String>, report: @escaping @Sendable (Event) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in self.events { report(event) }
            }
            group.addTask {
                for await line in control where line == "quit" { return }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
