package eventstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// RecordStore keeps small records in named streams: the last record of a
// stream with its version, and a write that names the version it follows.
// Shared keeps its leases and checkpoints in one. StoreRecords makes one of
// any Store; an adapter may keep the records out of its global log
// (eventstore/esdb keeps them in stream metadata, ADR 0109).
type RecordStore interface {
	// LastRecord returns the last record of stream, false when it has none.
	LastRecord(ctx context.Context, stream string) (Record, bool, error)
	// PutRecord writes r to stream if the stream's last record is the one
	// expected names (NoStream: none), else it returns an error wrapping
	// ErrWrongExpectedVersion. It returns the version of r.
	PutRecord(ctx context.Context, stream string, expected ExpectedVersion, r Record) (uint64, error)
}

// Record is a record of a RecordStore.
type Record struct {
	Type    string // what it says, such as "LeaseHeld"
	Data    []byte // a JSON object
	Version uint64 // its version in its stream, set by LastRecord
}

// StoreRecords keeps records as events of s: LastRecord reads the last
// event of a stream, PutRecord appends one with the expected version. The
// records are events of the global log like any other, which the relay
// publishes and every projection skips: fit for tests and for stores whose
// log readers can bear them, not for a busy relay (ADR 0109).
func StoreRecords(s Store) RecordStore { return storeRecords{s} }

type storeRecords struct{ s Store }

func (r storeRecords) LastRecord(ctx context.Context, stream string) (Record, bool, error) {
	v, ok, err := r.s.StreamVersion(ctx, stream)
	if err != nil || !ok {
		return Record{}, false, err
	}
	evs, err := r.s.ReadStream(ctx, stream, v, 1)
	if errors.Is(err, ErrStreamNotFound) {
		return Record{}, false, nil
	}
	if err != nil || len(evs) == 0 {
		return Record{}, false, err
	}
	return Record{Type: evs[0].Type, Data: evs[0].Data, Version: evs[0].Version}, true, nil
}

func (r storeRecords) PutRecord(ctx context.Context, stream string, expected ExpectedVersion, rec Record) (uint64, error) {
	res, err := r.s.Append(ctx, stream, expected, EventData{Type: rec.Type, Data: rec.Data})
	return res.NextExpectedVersion, err
}

// The streams of Shared's records: "<prefix><name>". Their category
// (linkd_lease, linkd_checkpoint) is no aggregate's.
const (
	LeaseStreamPrefix      = "linkd_lease-"
	CheckpointStreamPrefix = "linkd_checkpoint-"
)

// The types of Shared's records.
const (
	leaseHeld       = "LeaseHeld"
	leaseReleased   = "LeaseReleased"
	checkpointSaved = "CheckpointSaved"
)

// Defaults of SharedOptions.
const (
	DefaultLeaseTTL   = 6 * time.Second
	DefaultLeaseRetry = 500 * time.Millisecond
)

// releaseTimeout bounds the write of a release.
const releaseTimeout = 5 * time.Second

// SharedOptions tune Shared. The zero value is linkd's setting.
type SharedOptions struct {
	// Holder names this process in its lease records. Empty: the host
	// name, the process id and a random suffix. No two processes (no two
	// Shared) may have the same.
	Holder string
	// LeaseTTL is how long a lease outlives its holder's last renewal; the
	// holder renews every third of it. Zero: DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Retry is how often a process that waits for a lease reads it. Zero:
	// DefaultLeaseRetry.
	Retry time.Duration
	// CheckpointEvery is the least time between two writes of one
	// checkpoint by this process: a save that comes sooner is written when
	// that time is up. Zero: every save that raises it is written at once.
	CheckpointEvery time.Duration
	// Logger receives lost leases and failed delayed writes. Nil drops them.
	Logger *slog.Logger
}

// Shared implements Leaser and Checkpoints on a RecordStore with expected
// versions alone, for a store shared by processes that has no lock of its
// own (ADR 0109).
//
// A lease is the stream LeaseStreamPrefix+name. Its last record says who
// holds it and for how long after the record was written (LeaseHeld), or
// that it is free (LeaseReleased). A process takes it by writing a
// LeaseHeld after the last record it read, so that of two processes that
// read the same record one alone succeeds; the holder writes one again
// every third of the TTL, each after its own last.
//
// Clocks: nothing compares one process's clock with another's. The holder
// counts the TTL from before it sent its last successful write; a waiting
// process counts TTL+TTL/6 from when it first read the record it wants to
// replace, which was after that write was sent. Only the rates of the
// clocks must agree (to a sixth, and NTP slews far less); their settings
// may differ by any amount. The record's "until" (the holder's clock) is
// for people reading it.
//
// So a holder that dies (or stops renewing: its ctx ended without release)
// is replaced TTL+TTL/6 after a waiting process first saw its last renewal,
// plus up to two Retry: 8 s at the defaults. A holder whose renewal fails
// (the store refuses or does not answer before the TTL is up) loses its
// lease at once: its held context ends.
type Shared struct {
	records RecordStore
	holder  string
	ttl     time.Duration
	retry   time.Duration
	every   time.Duration
	log     *slog.Logger

	mu          sync.Mutex
	held        map[string]bool // leases held or being taken in this process
	checkpoints map[string]*pendingCheckpoint
	// flushes counts the delayed checkpoint writes scheduled and not yet
	// ended (stopped, or run to their end); flushed is signalled, with
	// mu, when it falls.
	flushes int
	flushed sync.Cond
}

var (
	_ Leaser      = (*Shared)(nil)
	_ Checkpoints = (*Shared)(nil)
)

// NewShared keeps leases and checkpoints in records.
func NewShared(records RecordStore, o SharedOptions) *Shared {
	s := &Shared{
		records: records, holder: o.Holder, ttl: o.LeaseTTL, retry: o.Retry, every: o.CheckpointEvery, log: o.Logger,
		held: map[string]bool{}, checkpoints: map[string]*pendingCheckpoint{},
	}
	s.flushed.L = &s.mu
	if s.holder == "" {
		s.holder = defaultHolder()
	}
	if s.ttl <= 0 {
		s.ttl = DefaultLeaseTTL
	}
	if s.retry <= 0 {
		s.retry = DefaultLeaseRetry
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Holder is the name this process writes in its lease records.
func (s *Shared) Holder() string { return s.holder }

func defaultHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// leaseRecord is the data of a lease record.
type leaseRecord struct {
	Holder string `json:"holder"`
	// TTLMillis is how long the lease outlives the record (LeaseHeld).
	TTLMillis int64 `json:"ttl_ms,omitempty"`
	// Until is when it ends on the holder's clock: for people only.
	Until *time.Time `json:"until,omitempty"`
}

func (s *Shared) leaseData(typ string, at time.Time) Record {
	l := leaseRecord{Holder: s.holder}
	if typ == leaseHeld {
		until := at.Add(s.ttl).UTC()
		l.TTLMillis, l.Until = s.ttl.Milliseconds(), &until
	}
	data, _ := json.Marshal(l)
	return Record{Type: typ, Data: data}
}

// seen is a version of a lease's record and when this process first read
// it (monotonic clock).
type seen struct {
	version uint64
	at      time.Time
	ok      bool
}

// free reports whether the lease whose last record is r may be taken:
// released, written by this process, or unchanged for longer than its
// holder's TTL and a sixth since first read here.
func (s *Shared) free(r Record, since *seen, now time.Time) bool {
	if !since.ok || since.version != r.Version {
		*since = seen{version: r.Version, at: now, ok: true}
	}
	if r.Type == leaseReleased {
		return true
	}
	var l leaseRecord
	ttl := s.ttl
	if json.Unmarshal(r.Data, &l) == nil {
		if l.Holder == s.holder {
			return true
		}
		if l.TTLMillis > 0 {
			ttl = time.Duration(l.TTLMillis) * time.Millisecond
		}
	}
	return now.Sub(since.at) >= ttl+ttl/6
}

// claim marks the lease name as being taken in this process, false when it
// is held or being taken here already.
func (s *Shared) claim(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[name] {
		return false
	}
	s.held[name] = true
	return true
}

func (s *Shared) unclaim(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, name)
}

// AcquireLease implements Leaser. The returned context ends when ctx does,
// when a renewal fails, or when the TTL passes without one; release writes
// that the lease is free, so that a waiting process takes it at its next
// read. A holder whose ctx ends without release stops renewing, as if it
// had died.
func (s *Shared) AcquireLease(ctx context.Context, name string) (context.Context, func(), error) {
	stream := LeaseStreamPrefix + name
	var since seen
	for {
		r, ok, err := s.records.LastRecord(ctx, stream)
		if err == nil {
			expected := NoStream()
			free := !ok
			if ok {
				expected = Exact(r.Version)
				free = s.free(r, &since, time.Now())
			}
			if free && s.claim(name) {
				at := time.Now()
				var v uint64
				if v, err = s.records.PutRecord(ctx, stream, expected, s.leaseData(leaseHeld, at)); err == nil {
					held, release := s.hold(ctx, name, stream, v, at)
					return held, release, nil
				}
				s.unclaim(name)
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case errors.Is(err, ErrClosed):
			return nil, nil, err
		case err != nil && !errors.Is(err, ErrWrongExpectedVersion):
			s.log.Warn("lease: cannot read or take it; trying again", "lease", name, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(s.retry):
		}
	}
}

// hold renews the lease written at version v (the write sent at at) until
// the held context ends, and returns that context and the release.
func (s *Shared) hold(ctx context.Context, name, stream string, v uint64, at time.Time) (context.Context, func()) {
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	last := v // the goroutine's until done is closed, then release's
	go func() {
		defer close(done)
		defer s.unclaim(name)
		defer cancel()
		deadline := at.Add(s.ttl)
		expire := time.NewTimer(time.Until(deadline))
		defer expire.Stop()
		renew := time.NewTicker(s.ttl / 3)
		defer renew.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-expire.C:
				s.log.Warn("lease: lost, not renewed in time", "lease", name)
				return
			case <-renew.C:
			}
			// Not ended by held: a release waits for this write instead,
			// so that last is the version the store holds. A write cut
			// off by a release could still land, and the release, written
			// after the version before it, would then be refused and leave
			// the lease taken for TTL+TTL/6.
			rctx, rcancel := context.WithDeadline(context.WithoutCancel(held), deadline)
			at := time.Now()
			v, err := s.records.PutRecord(rctx, stream, Exact(last), s.leaseData(leaseHeld, at))
			rcancel()
			if err != nil {
				if held.Err() == nil {
					s.log.Warn("lease: lost, its renewal failed", "lease", name, "err", err)
				}
				return
			}
			last, deadline = v, at.Add(s.ttl)
			expire.Reset(time.Until(deadline))
		}
	}()
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel()
			<-done
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer rcancel()
			// After last only: if another process wrote since, the lease
			// is its own and stays so.
			_, err := s.records.PutRecord(rctx, stream, Exact(last), s.leaseData(leaseReleased, time.Now()))
			if err != nil && !errors.Is(err, ErrWrongExpectedVersion) {
				s.log.Warn("lease: release not written; the lease frees itself after its TTL", "lease", name, "err", err)
			}
		})
	}
	return held, release
}
