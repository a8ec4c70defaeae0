// EventStore
