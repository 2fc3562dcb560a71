package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/fsdir"
)

// CheckpointStore keeps the relay's checkpoint: the position of the global
// log below which every event has been published and acknowledged.
type CheckpointStore interface {
	// Load returns the saved position, or eventstore.Start if none was saved.
	Load(ctx context.Context) (eventstore.Position, error)
	// Save replaces the saved position. When it returns nil the position
	// survives a crash.
	Save(ctx context.Context, p eventstore.Position) error
}

// CheckpointFile is the default checkpoint file name in the data directory.
const CheckpointFile = "relay.checkpoint"

// FileCheckpoint is a CheckpointStore in one small text file. Save writes a
// temporary file, syncs it, renames it over the old one and syncs the
// directory, so the file always holds either the old or the new position.
type FileCheckpoint struct {
	path string
	mu   sync.Mutex
}

// NewFileCheckpoint keeps the checkpoint at path (for example
// filepath.Join(dataDir, CheckpointFile)). The directory is created on the
// first Save.
func NewFileCheckpoint(path string) *FileCheckpoint { return &FileCheckpoint{path: path} }

// Path is the file's path.
func (f *FileCheckpoint) Path() string { return f.path }

// Load reads the position; a missing file is Start.
func (f *FileCheckpoint) Load(context.Context) (eventstore.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return eventstore.Start, nil
	}
	if err != nil {
		return eventstore.Start, fmt.Errorf("relay: checkpoint: %w", err)
	}
	p, err := eventstore.ParsePosition(strings.TrimSpace(string(b)))
	if err != nil {
		return eventstore.Start, fmt.Errorf("relay: checkpoint %s: %w", f.path, err)
	}
	return p, nil
}

// Save writes p durably.
func (f *FileCheckpoint) Save(_ context.Context, p eventstore.Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("relay: checkpoint: %w", err)
	}
	err := fsdir.WriteFile(f.path, []byte(p.String()+"\n"), 0o600)
	if err != nil {
		return fmt.Errorf("relay: checkpoint: %w", err)
	}
	return nil
}

// MemoryCheckpoint is a CheckpointStore in memory, for tests and for a
// relay whose restart may start over.
type MemoryCheckpoint struct {
	mu sync.Mutex
	p  eventstore.Position
}

// Load returns the last saved position.
func (m *MemoryCheckpoint) Load(context.Context) (eventstore.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p, nil
}

// Save records p.
func (m *MemoryCheckpoint) Save(_ context.Context, p eventstore.Position) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p = p
	return nil
}

// StoreCheckpoint keeps the relay's checkpoint in the event store under
// name (RelayLease), where the next holder of the relay's lease finds it
// (ADR 0106). The store only ever raises it.
func StoreCheckpoint(s eventstore.Checkpoints, name string) CheckpointStore {
	return storeCheckpoint{s: s, name: name}
}

type storeCheckpoint struct {
	s    eventstore.Checkpoints
	name string
}

func (c storeCheckpoint) Load(ctx context.Context) (eventstore.Position, error) {
	return c.s.LoadCheckpoint(ctx, c.name)
}

func (c storeCheckpoint) Save(ctx context.Context, p eventstore.Position) error {
	return c.s.SaveCheckpoint(ctx, c.name, p)
}
