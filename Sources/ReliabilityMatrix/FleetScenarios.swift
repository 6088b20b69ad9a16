import FaultProxy
import Foundation

/// Issue 35's fleet: three `serve --store s3://…` instances on one moto bucket behind nginx (round
/// robin, no stickiness), a FaultProxy in front of nginx counting what the clients send. Two
/// libraries drain through it while one instance after another is SIGKILLed and restarted at
/// seeded moments. Every photo must be stored once, byte-identical (`verify --deep` downloads each
/// object through the fleet), with the bytes sent again bounded by the usual ratio.
enum FleetScenarios {
    static func killedInstances(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("three serve --store instances, one SIGKILLed at random", context) { run, random, result in
            let root = context.workRoot + "/fleet-\(run)"
            let libraries = [try Library(root: root + "/a"), try Library(root: root + "/b")]
            defer { if !context.keep { try? FileManager.default.removeItem(atPath: root) } }
            let tool = Tool(binary: context.binary, logs: libraries[0].logs)
            let moto = try Moto(logs: libraries[0].logs)
            defer { moto.stop() }
            let bucket = "fleet-\(run)-\(context.seed)"
            try moto.createBucket(bucket)
            let environment = ["AWS_ACCESS_KEY_ID": "matrix", "AWS_SECRET_ACCESS_KEY": "matrix-secret", "AWS_REGION": "us-east-1"]
            let store = ["--store", "s3://\(bucket)/receiver", "--s3-endpoint", "http://127.0.0.1:\(moto.port)"]

            let uploadToken = root + "/phone.token", readToken = root + "/auditor.token"
            let (added, _) = try tool.run(["serve"] + store + ["accounts", "add", Rig.account], name: "accounts-add", seconds: 60,
                                          environment: environment)
            guard added == 0 else { throw MatrixError("serve --store accounts add exited \(added)") }
            for (device, scope, file) in [("matrix-phone", "upload", uploadToken), ("matrix-auditor", "read", readToken)] {
                let (status, child) = try tool.run(["serve"] + store + ["tokens", "add", Rig.account, device, "--scope", scope],
                                                   name: "tokens-add-\(device)", seconds: 60, environment: environment)
                guard status == 0 else { throw MatrixError("serve --store tokens add exited \(status)") }
                try Data(child.stdout.utf8).write(to: URL(fileURLWithPath: file))
            }
            let instances = try (0..<3).map { _ in
                try ServeInstance(tool: tool, directory: root, environment: environment, storeArguments: store)
            }
            defer { instances.forEach { $0.stop() } }
            let balancer = try NginxBalancer(prefix: root + "/nginx", backends: instances.map(\.port))
            defer { balancer.stop() }
            let proxy = try FaultProxy(targetPort: balancer.port, plan: .none)
            defer { proxy.stop() }
            let url = "http://127.0.0.1:\(proxy.port)/uploads"

            for (index, library) in libraries.enumerated() {
                try library.addPhotos(context.photos * 3 / 2, samples: context.samples, prefix: "lib\(index)", random: &random)
            }
            // The killer: every 2 to 5 seconds one instance, chosen at random, is SIGKILLed and
            // restarted at once (on its port, so nginx finds it again).
            let stop = FaultSwitch()
            let kills = Counter()
            let killing = Killing(instances: instances, random: random)
            let killer = Thread {
                while stop.isOn {
                    usleep(killing.pause())
                    guard stop.isOn else { break }
                    killing.killOne()
                    kills.increment()
                }
            }
            killer.start()
            for library in libraries {
                var statuses: [Int32] = []
                for _ in 0..<10 {
                    let (status, _) = try tool.run(["drain", library.folder, "--store", library.store, "--to", url, "--json",
                                                    "--offline-timeout", "2", "--token-file", uploadToken] + Rig.analysis,
                                                   name: "drain", seconds: 300)
                    statuses.append(status)
                    if status == 0 { break }
                    usleep(300_000)
                }
                if statuses.last != 0 { result.failures.append("drain of \(library.root) statuses \(statuses)") }
            }
            stop.turnOff()
            while !killer.isFinished { usleep(50_000) }
            result.faults += kills.value
            for instance in instances where !(instance.child?.isRunning ?? false) { try instance.start() }

            // Every photo once, byte-identical: the listing, then every object downloaded through the fleet.
            let token = (try? String(contentsOfFile: readToken, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            let listed = Listing.objects("http://127.0.0.1:\(instances[0].port)/objects", token: token)
            let shas = listed.compactMap { $0["sha256"] as? String }
            var audit = Audit()
            audit.listed = shas.count
            audit.duplicates = shas.count - Set(shas).count
            let wanted = libraries.flatMap { $0.current.values }
            audit.lost = wanted.filter { !Set(shas).contains($0) }.count
            audit.corrupted = Set(shas).subtracting(libraries.flatMap(\.everWritten)).count
            for library in libraries {
                let (verified, verify) = try tool.run(["verify", library.folder, "--store", library.store, "--deep", "--json",
                                                       "--to", url, "--token-file", readToken], name: "verify", seconds: 300)
                let summary = verify.stdout.split(separator: "\n").last.flatMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                let mismatched = summary?["mismatched"] as? Int ?? 0
                audit.corrupted += mismatched
                if verified != 0 { result.failures.append("verify --deep of \(library.root) exited \(verified): \(verify.stdout.suffix(300))") }
            }
            result.add(audit, photos: wanted.count, fileBytes: libraries.reduce(0) { $0 + $1.fileBytes },
                       uploadBytes: Int64(proxy.bytesForwarded(.upstream)))
        }
    }
}

/// The killer thread's instances and seeded choices (only that thread uses them while it runs).
final class Killing: @unchecked Sendable {
    private let instances: [ServeInstance]
    private var random: SeededRandom

    init(instances: [ServeInstance], random: SeededRandom) {
        self.instances = instances
        self.random = random
    }

    /// 2 to 5 seconds, in microseconds.
    func pause() -> useconds_t { random.micros(2, 5) }

    /// SIGKILLs one instance chosen at random and starts it again at once.
    func killOne() {
        let instance = instances[random.int(0..<instances.count)]
        instance.kill()
        try? instance.start()
    }
}

/// A thread-safe count.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

extension Listing {
    /// `GET /objects` as JSON objects (empty when it fails).
    static func objects(_ url: String, token: String?) -> [[String: Any]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sf", "--max-time", "30"] + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + [url]
        let out = Pipe()
        process.standardOutput = out
        guard (try? process.run()) != nil else { return [] }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] ?? []
    }
}

/// Debian's nginx as the fleet's load balancer: round robin over `backends`, no stickiness, bodies
/// streamed (no buffering, no size limit), a request whose connection to an instance fails passed
/// to the next (a request already sent is never resent: PATCH and POST are not idempotent).
final class NginxBalancer {
    let port: UInt16
    private let child: Child

    init(prefix: String, backends: [UInt16]) throws {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw MatrixError("nginx is not installed (apt-get install -y nginx)")
        }
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        var tried: [UInt16] = []
        while true {
            let port = UInt16.random(in: 20_000..<32_000)
            tried.append(port)
            let servers = backends.map { "        server 127.0.0.1:\($0) max_fails=0;" }.joined(separator: "\n")
            let config = """
                daemon off;
                worker_processes 1;
                pid \(prefix)/nginx.pid;
                error_log \(prefix)/error.log;
                events { worker_connections 256; }
                http {
                    access_log \(prefix)/access.log;
                    client_body_temp_path \(prefix)/client_body;
                    proxy_temp_path \(prefix)/proxy;
                    fastcgi_temp_path \(prefix)/fastcgi;
                    uwsgi_temp_path \(prefix)/uwsgi;
                    scgi_temp_path \(prefix)/scgi;
                    upstream photodrain {
                \(servers)
                    }
                    server {
                        listen 127.0.0.1:\(port);
                        client_max_body_size 0;
                        proxy_request_buffering off;
                        proxy_buffering off;
                        proxy_http_version 1.1;
                        proxy_read_timeout 120s;
                        location / {
                            proxy_pass http://photodrain;
                            proxy_set_header Host $host;
                            proxy_set_header Connection "";
                            proxy_next_upstream error timeout;
                        }
                    }
                }
                """
            try Data(config.utf8).write(to: URL(fileURLWithPath: prefix + "/nginx.conf"))
            try? FileManager.default.removeItem(atPath: prefix + "/nginx.pid")
            let child = try Child(binary, ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"], logPrefix: prefix + "/run")
            let deadline = Date().addingTimeInterval(20)
            while child.isRunning && !FileManager.default.fileExists(atPath: prefix + "/nginx.pid") && Date() < deadline { usleep(20_000) }
            if child.isRunning && FileManager.default.fileExists(atPath: prefix + "/nginx.pid") {
                self.port = port
                self.child = child
                return
            }
            _ = child.signal(SIGKILL)
            _ = child.wait(seconds: 5)
            let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
            guard log.contains("Address already in use") && tried.count < 5 else {
                throw MatrixError("nginx did not start (ports \(tried)): \(log.suffix(600))")
            }
        }
    }

    func stop() {
        _ = child.signal(SIGTERM)
        _ = child.wait(seconds: 10)
    }
}
