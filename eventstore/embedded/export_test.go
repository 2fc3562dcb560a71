package embedded

// WithCollidingHashes names every stream in the index's event keys by one
// of three hashes, so that most streams share theirs with others.
func WithCollidingHashes(o Options) Options {
	o.hash = collidingHash
	return o
}

func collidingHash(stream string) uint64 { return nameHash(stream) % 3 }
