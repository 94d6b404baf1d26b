"""The committed generated code in parties/proto matches protos/ (regenerated with grpc_tools)."""

from parties import gen_proto


def test_generated_code_is_current(tmp_path):
    fresh = gen_proto.generate(tmp_path)
    committed = gen_proto.generated_files(gen_proto.ROOT)
    assert fresh == committed, f"file sets differ: run 'python -m parties.gen_proto' ({fresh} vs {committed})"
    stale = [str(f) for f in fresh if (tmp_path / f).read_bytes() != (gen_proto.ROOT / f).read_bytes()]
    assert not stale, f"stale generated files {stale}: run 'python -m parties.gen_proto' and commit"


def test_generated_code_imports_under_parties_package():
    from parties.proto.ppdm.v1 import party_pb2, party_pb2_grpc

    assert party_pb2.DESCRIPTOR.package == "ppdm.v1"
    assert hasattr(party_pb2_grpc, "PartyStub")
    svc = party_pb2.DESCRIPTOR.services_by_name["Party"]
    assert {m.name for m in svc.methods} == {"Deliver", "DeliverOne", "DeliverStream", "StartJob", "Abort", "Health"}
    # the sender is never part of a message: identity comes from the TLS certificate
    for msg in (party_pb2.Chunk, party_pb2.MessageHeader, party_pb2.AbortRequest):
        assert not {"sender", "from", "party"} & set(msg.DESCRIPTOR.fields_by_name)
