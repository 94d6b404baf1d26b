"""Generated gRPC/protobuf code for the ppdm wire contract (``python -m parties.gen_proto``)."""
