"""The audit trail: Agent OS FlightRecorder records into LightningStore spans and files."""
