package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
)

func TestFileCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	cp := kafka.NewFileCheckpoint(filepath.Join(dir, kafka.CheckpointFile))

	got, err := cp.Load(ctx)
	if err != nil || got != eventstore.Start {
		t.Fatalf("Load of a missing file = %v, %v; want Start", got, err)
	}
	for _, p := range []eventstore.Position{{Commit: 5, Prepare: 5}, {Commit: 1 << 40, Prepare: 1<<40 - 3}} {
		if err := cp.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
		// A new store over the same file sees it: it is on disk.
		got, err := kafka.NewFileCheckpoint(cp.Path()).Load(ctx)
		if err != nil || got != p {
			t.Fatalf("Load after Save(%v) = %v, %v", p, got, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files left in the directory: %v", entries)
	}
}

func TestFileCheckpointRefusesGarbage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), kafka.CheckpointFile)
	if err := os.WriteFile(path, []byte("not a position\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kafka.NewFileCheckpoint(path).Load(context.Background()); err == nil {
		t.Fatal("a corrupt checkpoint loaded without error")
	}
}
