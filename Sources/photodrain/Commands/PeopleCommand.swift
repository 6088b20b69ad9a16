import AssetStore
import Drain
import FaceAnalysis
import FaceClustering
import PhotoAnalysis
import Foundation
import SystemSupport

/// `photodrain people [DIR]` and its actions: the library's people, and a user's decisions about
/// them (issue 36 item 5).
enum PeopleCommand: Command {
    static let spec = CommandSpec(
        name: "people",
        abstract: "List the people clustering found in a library's faces; name, merge, split or forget them.",
        arguments: "[DIR] | name ID NAME [DIR] | merge ID OTHER [DIR] | split FACE [DIR] | forget FACE [DIR] | bench",
        discussion: """
        Without an action: gives every face analysed since the last listing a person, then lists each
        person: id, name, face count, the representative face (the one nearest the person's
        centroid) and every face with its id, photo and box (in the verdict's pixels). A new face
        joins the person whose centroid is nearest, within 0.55 (measured: see --threshold),
        unless that person already has a face in its photo; else it is a new person. Faces
        clustered before are never compared again, and the same library gives the same people
        with the same ids on every machine. Faces analysed before they had descriptors (an
        older PhotoDrain, or analyze --people off) get theirs first: their photos are read again,
        only while they are the files their verdicts were made from, and decoded at the size they
        were analysed at (--no-embed skips this; they stay out of people).

        Decisions are kept by later clustering: 'name ID NAME' names person ID ('' clears it);
        'merge ID OTHER' makes OTHER part of ID (refused when one photo has a face of each: two
        faces of one photo are never one person); 'split FACE' takes a face out of its person into
        one of its own; 'forget FACE' takes it out of every person for good (a stranger, a
        poster). A photo that changes loses its faces and their decisions; analysed again, its
        faces find their people again.

        'bench' clusters synthetic faces (--faces, --identities) in memory, or with
        --through-store as a library's store does, for BENCHMARKS.md.
        A folder called like an action is written './name'.
        """,
        options: [LibraryOptions.store, .flag("json", "One JSON array of people, each with its faces."),
                  .option("threshold", "D", "The distance to a person's centroid within which a new face joins them, for the faces this listing clusters (those clustered before keep their people).", default: "\(PeopleClusterer.defaultThreshold)"),
                  .flag("no-embed", "List without first giving descriptors to faces analysed before they had any (they stay out of people)."),
                  .option("faces", "N", "With bench: how many synthetic faces.", default: "100000"),
                  .option("identities", "N", "With bench: how many synthetic people they are faces of.", default: "2000"),
                  .flag("through-store", "With bench: bank the faces in a store of a temporary library and cluster them by the store's passes, then time one new photo's pass.")],
        positionals: (0, 4),
        examples: [("photodrain people ~/Pictures", "who is in the library"),
                   ("photodrain people name 7 'Anna' ~/Pictures", "name person 7"),
                   ("photodrain people merge 7 12 ~/Pictures", "person 12 is Anna too"),
                   ("photodrain people forget 311 ~/Pictures", "face 311 is a stranger"),
                   ("photodrain people --json . | jq '.[] | {id, name, face_count}'", "for scripts")],
        exitCodes: [(0, "listed, or the action done"), (1, "the store could not be read or written, no person or face has that id, or a merge would put two faces of one photo in one person"),
                    (64, "usage error")]
    )

    /// What the positionals ask for.
    enum Action: Equatable {
        case list
        case name(Int64, String)
        case merge(Int64, Int64)
        case split(Int64)
        case forget(Int64)
        case bench
    }

    /// The action and the library folder's positionals (none or one) from the command line.
    static func action(_ positionals: [String]) throws(UsageError) -> (Action, [String]) {
        func id(_ text: String, _ what: String) throws(UsageError) -> Int64 {
            guard let value = Int64(text), value > 0 else {
                throw UsageError("\(what) wants a whole number (an id `photodrain people` lists), not '\(text)'", command: spec.name)
            }
            return value
        }
        func folder(after count: Int, _ usage: String) throws(UsageError) -> [String] {
            guard positionals.count >= count + 1, positionals.count <= count + 2 else {
                throw UsageError("usage: photodrain people \(usage) [DIR]", command: spec.name)
            }
            return Array(positionals.dropFirst(count + 1))
        }
        switch positionals.first {
        case "name":
            let rest = try folder(after: 2, "name ID NAME")
            return (.name(try id(positionals[1], "name"), positionals[2]), rest)
        case "merge":
            let rest = try folder(after: 2, "merge ID OTHER")
            return (.merge(try id(positionals[1], "merge"), try id(positionals[2], "merge")), rest)
        case "split":
            let rest = try folder(after: 1, "split FACE")
            return (.split(try id(positionals[1], "split")), rest)
        case "forget":
            let rest = try folder(after: 1, "forget FACE")
            return (.forget(try id(positionals[1], "forget")), rest)
        case "bench":
            guard positionals.count == 1 else { throw UsageError("bench takes no folder", command: spec.name) }
            return (.bench, [])
        default:
            guard positionals.count <= 1 else {
                throw UsageError("'\(positionals[0])' is no action (name, merge, split, forget, bench); a folder comes alone", command: spec.name)
            }
            return (.list, positionals)
        }
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let (action, folder) = try action(arguments.positionals)
        if action == .bench && arguments.flag("through-store") {
            return try PeopleBench.runThroughStore(faces: arguments.int("faces", default: 100_000, range: 1...10_000_000),
                                                   identities: arguments.int("identities", default: 2_000, range: 1...10_000_000),
                                                   json: arguments.flag("json"))
        }
        if action == .bench {
            return try PeopleBench.run(faces: arguments.int("faces", default: 100_000, range: 1...10_000_000),
                                       identities: arguments.int("identities", default: 2_000, range: 1...10_000_000),
                                       json: arguments.flag("json"))
        }
        var library = arguments
        library.positionals = folder
        let store = try LibraryOptions.open(library, unfiltered: true)
        let console = Console.shared
        switch action {
        case .list:
            if !arguments.flag("no-embed") {
                if let path = ModelSearch.current.locate(FaceDescriptorNetwork.fileName) {
                    let embedder = DescriptorEmbedder(network: try FaceDescriptorNetwork(contentsOf: path))
                    try await embedWaitingFaces(store, embedder: embedder, slots: ProcessInfo.processInfo.activeProcessorCount,
                                                quiet: arguments.flag("json"), command: spec.name)
                } else if try store.photosToEmbedCount(minimumFaceSize: FaceChip.minimumFaceSize) > 0 {
                    console.err("photodrain people: faces without a descriptor stay out of people: \(ModelSearch.current.describeSearch(for: FaceDescriptorNetwork.fileName))")
                }
            }
            let threshold = Float(try arguments.double("threshold", default: Double(PeopleClusterer.defaultThreshold), range: 0.05...2))
            let pass = try store.clusterFaces(threshold: threshold)
            let people = try store.people()
            let tally = try store.faceTally(minimumFaceSize: FaceChip.minimumFaceSize)
            if arguments.flag("json") {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                console.out(String(decoding: try encoder.encode(people.map(PersonLine.init)), as: UTF8.self))
            } else {
                for person in people { print(person, to: console) }
                console.out("\(people.count) \(people.count == 1 ? "person" : "people"); \(tally.faces) faces, \(tally.clustered) in a person, \(tally.withoutEmbedding) without an embedding"
                            + (tally.tooSmall > 0 ? " (\(tally.tooSmall) narrower than \(FaceChip.minimumFaceSize) px: too small to tell who)" : "")
                            + (pass.joined + pass.started > 0 ? "; \(pass.joined + pass.started) clustered now (\(pass.started) new people)" : ""))
                if tally.faces > tally.tooSmall && tally.withoutEmbedding == tally.faces {
                    console.out("No face has an embedding yet: list without --no-embed, or analyse with --people on, to give them descriptors.")
                }
            }
        case .name(let id, let name):
            let person = try store.namePerson(id, name)
            console.out(name.isEmpty ? "person \(person) has no name now" : "person \(person) is \(name)")
        case .merge(let into, let other):
            let person = try store.mergePeople(into, other)
            console.out("person \(other) is now part of person \(person)")
        case .split(let face):
            console.out("face \(face) is person \(try store.splitFace(face)) now")
        case .forget(let face):
            try store.forgetFace(face)
            console.out("face \(face) is in no person now, and stays out")
        case .bench:
            break
        }
        return .success
    }

    /// A person's text lines: a header, then a face a line.
    static func print(_ person: PersonRecord, to console: Console) {
        let name = person.name.map { " \"\(TerminalText.escaped($0))\"" } ?? ""
        let representative = person.representative.map { ", representative face \($0)" } ?? ""
        console.out("person \(person.id)\(name): \(person.faces.count) \(person.faces.count == 1 ? "face" : "faces")\(representative)")
        for face in person.faces {
            let box = face.face
            console.out("  face \(face.id)  \(TerminalText.escaped(face.path))  \(box.width)x\(box.height) at \(box.x),\(box.y)"
                        + (face.decision == .split ? "  (split out)" : ""))
        }
    }

    /// A person as `--json` prints it.
    struct PersonLine: Encodable {
        let id: Int64
        let name: String?
        let faceCount: Int
        let representative: FaceLine?
        let faces: [FaceLine]

        enum CodingKeys: String, CodingKey {
            case id, name, representative, faces
            case faceCount = "face_count"
        }

        init(_ person: PersonRecord) {
            id = person.id
            name = person.name
            faceCount = person.faces.count
            faces = person.faces.map(FaceLine.init)
            representative = faces.first { $0.id == person.representative }
        }
    }

    /// A face as `--json` prints it: its id, photo, place in the photo's verdict and box.
    struct FaceLine: Encodable {
        let id: Int64
        let path: String
        let index: Int
        let box: [Int]
        let decision: String?

        init(_ face: FaceRecord) {
            id = face.id
            path = face.path
            index = face.face.index
            box = [face.face.x, face.face.y, face.face.width, face.face.height]
            decision = face.decision?.rawValue
        }
    }
}
