// swift-tools-version:6.0
// PhotoDrain: analyse a photo library on the device and drain it safely to a server.
// The layout follows shared/DESIGN.md: C shims on the left, one Swift module per pipeline stage.
import PackageDescription

/// Settings shared by every Swift target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "PhotoDrain",
    products: [
        .executable(name: "photodrain", targets: ["photodrain"]),
    ],
    targets: [
        // MARK: C shims and system libraries (the only places that touch C error handling)
        .target(
            name: "CJPEG",
            linkerSettings: [.linkedLibrary("jpeg")]
        ),
        .target(
            name: "CPNG",
            linkerSettings: [.linkedLibrary("png16")]
        ),

        // MARK: Pipeline modules
        .target(
            name: "PhotoDecoding",
            dependencies: ["CJPEG", "CPNG"],
            swiftSettings: swiftSettings
        ),

        // MARK: FaceAnalysis
        .target(
            name: "FaceAnalysis",
            dependencies: ["PhotoDecoding"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FaceBench",
            dependencies: ["FaceAnalysis", "PhotoDecoding"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FaceAnalysisTests",
            dependencies: ["FaceAnalysis", "PhotoDecoding"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),

        // MARK: The command-line tool
        .executableTarget(
            name: "photodrain",
            dependencies: ["PhotoDecoding"],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        .testTarget(
            name: "PhotoDecodingTests",
            dependencies: ["PhotoDecoding"],
            swiftSettings: swiftSettings
        ),
    ]
)
