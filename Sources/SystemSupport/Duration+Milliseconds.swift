extension Duration {
    /// The duration in milliseconds, fractions kept: what timings are reported in.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
