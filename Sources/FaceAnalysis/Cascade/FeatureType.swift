/// The feature family a cascade evaluates.
public enum FeatureType: String, Sendable, Codable {
    /// Haar-like rectangle features with variance normalisation.
    case haar = "HAAR"
    /// Local binary patterns over 3x3 grids of blocks.
    case lbp = "LBP"
}
