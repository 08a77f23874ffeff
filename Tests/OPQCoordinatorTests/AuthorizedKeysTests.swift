import Foundation
import OPQCoordinator
import Testing
import ZeroMQ

/// The ZAP decision: which keys the coordinator admits on which socket, and what a reload revokes.
@Suite struct AuthorizedKeysTests {
    let worker = "W" + String(repeating: "w", count: 39)
    let client = "C" + String(repeating: "c", count: 39)

    @Test func aKeyIsAdmittedOnlyOnItsRolesSocketAndOnlyWithCurve() {
        let keys = AuthorizedKeys(workers: [worker], clients: [client])
        let workers = PeerRole.worker.rawValue, clients = PeerRole.client.rawValue
        #expect(keys.decide(domain: workers, mechanism: "CURVE", publicKey: worker) == (true, "OK", worker))
        #expect(keys.decide(domain: clients, mechanism: "CURVE", publicKey: client) == (true, "OK", client))
        #expect(keys.decide(domain: clients, mechanism: "CURVE", publicKey: worker).admit == false, "a worker key cannot submit")
        #expect(keys.decide(domain: workers, mechanism: "CURVE", publicKey: client).admit == false, "a client key cannot register")
        #expect(keys.decide(domain: workers, mechanism: "NULL", publicKey: nil).admit == false)
        #expect(keys.decide(domain: "", mechanism: "CURVE", publicKey: worker).admit == false, "an unknown socket")
        #expect(keys.decide(domain: workers, mechanism: "CURVE", publicKey: "X" + String(repeating: "x", count: 39)).admit == false)
    }

    @Test func aKeyInBothDirectoriesHasBothRoles() {
        let keys = AuthorizedKeys(workers: [worker], clients: [worker])
        #expect(keys.admits(worker, as: .worker) && keys.admits(worker, as: .client))
        #expect(!keys.admits(nil, as: .worker))
    }

    @Test func loadingReadsBothDirectoriesAndAReloadSeesRemovedKeysAsRevoked() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("opq-authorized-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let workersDirectory = root + "/workers", clientsDirectory = root + "/clients"
        for directory in [workersDirectory, clientsDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let a = try CurveKeyPair.generate(), b = try CurveKeyPair.generate(), c = try CurveKeyPair.generate()
        try CurveKeys.write(a, to: workersDirectory, name: "a")
        try CurveKeys.write(b, to: workersDirectory, name: "b")
        try CurveKeys.write(c, to: clientsDirectory, name: "c")
        let settings = CurveSettings(keys: try CurveKeyPair.generate(), authorizedWorkers: workersDirectory, authorizedClients: clientsDirectory)
        let loaded = try AuthorizedKeys(loading: settings)
        #expect(loaded == AuthorizedKeys(workers: [a.publicKey, b.publicKey], clients: [c.publicKey]))

        try FileManager.default.removeItem(atPath: workersDirectory + "/b.public")
        let reloaded = try AuthorizedKeys(loading: settings)
        #expect(loaded.revoked(.worker, in: reloaded) == [b.publicKey])
        #expect(loaded.revoked(.client, in: reloaded).isEmpty)
        #expect(!reloaded.admits(b.publicKey, as: .worker) && reloaded.admits(a.publicKey, as: .worker))
    }
}
