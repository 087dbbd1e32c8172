"""The session orchestrator: the protocol run through the device nodes."""
