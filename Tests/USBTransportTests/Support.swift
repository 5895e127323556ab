import Testing
import Transport

/// The `TransportError` that `body` throws; records an issue (and returns a placeholder) when it throws nothing or
/// something else.
func thrown<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> TransportError {
    do {
        let value = try body()
        Issue.record("expected a TransportError, got \(value)", sourceLocation: sourceLocation)
    } catch let error as TransportError {
        return error
    } catch {
        Issue.record("expected a TransportError, got \(error)", sourceLocation: sourceLocation)
    }
    return TransportError(.io, "<no TransportError>")
}
