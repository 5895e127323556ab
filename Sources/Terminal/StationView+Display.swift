import Station

/// The terminal's view is what a `StationSession` shows its events on.
extension StationView: StationDisplay {}
