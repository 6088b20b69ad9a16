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

        // MARK: C shims
        // libcrypto (Debian's libssl-dev) for SHA-256; a system library, nothing compiled here.
        .systemLibrary(
            name: "CCrypto",
            path: "Sources/CCrypto"
        ),

        // MARK: Pipeline modules
        .target(
            name: "PhotoDecoding",
            dependencies: ["CJPEG", "CPNG"],
            swiftSettings: swiftSettings
        ),

        // MARK: Protocol constants shared by Transfer and Receiver
        .target(
            name: "UploadProtocol",
            swiftSettings: swiftSettings
        ),

        // MARK: Receiver
        // The reference upload server behind `photodrain serve` (DESIGN.md, Resumable uploads).
        .target(
            name: "Receiver",
            dependencies: ["UploadProtocol", "CCrypto"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ReceiverTests",
            dependencies: ["Receiver", "UploadProtocol", "CCrypto"],
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
            name: "UploadProtocolTests",
            dependencies: ["UploadProtocol"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PhotoDecodingTests",
            dependencies: ["PhotoDecoding"],
            swiftSettings: swiftSettings
        ),
    ]
)
