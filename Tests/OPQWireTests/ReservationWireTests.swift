import OPQCore
import Testing
import OPQWire

/// The wire of reservations (issue 18): Reserve / Reserved, OperationSpec.reservation and .cancelled.
@Suite struct ReservationWireTests {
    @Test func aReserveAndItsReplyRoundTripAndBadValuesAreRefusedNamingTheField() throws {
        let request = Opq_V1_ClientRequest.with { $0.requestID = 7; $0.reserve.count = 3 }
        #expect(try roundTrip(request).message.reserve.count == 3)
        for count: UInt32 in [0, UInt32(Limits.maxReservations) + 1] {
            let error = decodeError(Opq_V1_ClientRequest.with { $0.reserve.count = count })
            #expect(error?.field == "ClientRequest.reserve.count", "count \(count)")
        }
        let reply = Opq_V1_CoordinatorToClient.with {
            $0.reply.requestID = 7
            $0.reply.reserved.ids = [OperationID.reservation(1).rawValue, OperationID.reservation(2).rawValue]
        }
        #expect(try roundTrip(reply).message.reply.reserved.ids.map(OperationID.init) == [.reservation(1), .reservation(2)])
        let ordinary = Opq_V1_CoordinatorToClient.with { $0.reply.reserved.ids = [5] }
        #expect(decodeError(ordinary)?.field == "CoordinatorToClient.reply.reserved.ids[0]")
    }

    @Test func aSpecCarriesItsReservationAndCancelAndOnlyAReservationIsAccepted() throws {
        var spec = OperationSpec(name: "a", work: .command(Command(["true"])), dependencies: [.id(.reservation(2))])
        spec.reservation = .reservation(1)
        spec.isCancelled = true
        let back = OperationSpec(try roundTrip(Opq_V1_ClientRequest.with { $0.submit = Opq_V1_Submit(Submission([spec])) })
            .message.submit.operations[0])
        #expect(back.reservation == .reservation(1) && back.isCancelled && back.dependencies == [.id(.reservation(2))])
        #expect(OperationSpec(Opq_V1_OperationSpec(OperationSpec(name: "b"))).reservation == nil)
        let bad = Opq_V1_ClientRequest.with { $0.submit.operations = [Opq_V1_OperationSpec.with { $0.reservation = 12 }] }
        #expect(decodeError(bad)?.field == "ClientRequest.submit.operations[0].reservation")
    }

    @Test func reservationIdsAreABoundedRangeShownAsOpR() {
        #expect(OperationID.reservation(3).description == "op-r3")
        #expect(!OperationID(OperationID.reservationBase).isReservation)
        #expect(OperationID(OperationID.reservationBase + OperationID.maxReservationNumber).isReservation)
        #expect(!OperationID(OperationID.reservationBase + OperationID.maxReservationNumber + 1).isReservation)
        #expect(OperationID(UInt64.max).description == "op-\(UInt64.max)")
    }

    @Test func aRenewalAndItsReplyRoundTripAndOnlyReservationsAreRenewed() throws {
        let ids = [OperationID.reservation(1).rawValue, OperationID.reservation(7).rawValue]
        let request = Opq_V1_ClientRequest.with { $0.requestID = 9; $0.renewReservations.ids = ids }
        #expect(try roundTrip(request).message.renewReservations.ids == ids)
        let ordinary = Opq_V1_ClientRequest.with { $0.renewReservations.ids = [ids[0], 5] }
        #expect(decodeError(ordinary)?.field == "ClientRequest.renew_reservations.ids[1]")
        let reply = Opq_V1_CoordinatorToClient.with {
            $0.reply.requestID = 9
            $0.reply.renewed.gone = [ids[1]]
            $0.reply.renewed.leaseSeconds = 30
        }
        let back = try roundTrip(reply).message.reply.renewed
        #expect(back.gone == [ids[1]] && back.leaseSeconds == 30)
        let negative = Opq_V1_CoordinatorToClient.with { $0.reply.reserved.ids = [ids[0]]; $0.reply.reserved.leaseSeconds = -1 }
        #expect(decodeError(negative)?.field == "CoordinatorToClient.reply.reserved.lease_seconds")
    }

    @Test func operationIDsParseAsTheyAreWritten() {
        #expect(OperationID(parsing: "op-r3") == .reservation(3))
        #expect(OperationID(parsing: "op-12") == OperationID(12))
        #expect(OperationID(parsing: "op-\(UInt64.max)") == OperationID(UInt64.max), "unknown to the coordinator, not malformed")
        #expect(OperationID(parsing: OperationID.reservation(OperationID.maxReservationNumber).description) == .reservation(OperationID.maxReservationNumber))
        for text in ["op-r0", "op-0", "op-r", "op-rx", "op-", "r3", "op-r\(OperationID.maxReservationNumber + 1)", "job-3", "op--3"] {
            #expect(OperationID(parsing: text) == nil, "\(text)")
        }
    }
}
