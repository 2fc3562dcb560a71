package eventstore

import "context"

// Leaser is a store shared by several processes that grants named leases:
// one holder at a time across every process on the store. linkd holds
// one to run the relay, the one publisher of the log (ADR 0106).
type Leaser interface {
	// AcquireLease blocks until this process holds the lease named name,
	// or ctx ends. The returned context ends when the lease is lost (the
	// store unreachable) or ctx ends; release gives the lease up. A holder
	// that dies loses its lease within seconds.
	AcquireLease(ctx context.Context, name string) (held context.Context, release func(), err error)
}

// Checkpoints is a store that keeps named positions for every process on
// it: the relay's, which whichever process holds the relay's lease
// resumes from.
type Checkpoints interface {
	// LoadCheckpoint returns the position saved under name, Start if none.
	LoadCheckpoint(ctx context.Context, name string) (Position, error)
	// SaveCheckpoint raises the position saved under name to p: a smaller
	// p than the one saved changes nothing.
	SaveCheckpoint(ctx context.Context, name string, p Position) error
}

// CategoryHeads is a store that tells the position of the last event of
// some categories cheaply, without reading the log: a redirect checks
// that its instance has applied every change of links made anywhere
// (ADR 0106).
type CategoryHeads interface {
	// CategoryHead returns a position at or after the last event of the
	// categories (if any) and at or before the last event of the log, or
	// Start: once a projection has applied the log up to it, it has
	// applied every change of the categories made before the call.
	// PostgreSQL answers the last event itself; EventStoreDB may answer
	// a later one (ADR 0109).
	CategoryHead(ctx context.Context, categories []string) (Position, error)
}

// Presence is a store shared by several processes that knows whether this
// process is alone on it lately: then its read models follow every write
// already, and a Follower reads no head.
type Presence interface {
	Alone() bool
}
