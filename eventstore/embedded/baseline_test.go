package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// pebbleStore is the Pebble-only baseline of the benchmarks: the same
// single writer with group commit and the same record encoding, but events
// live in Pebble itself:
//
//	'a' be64(seq)               → record
//	'v' len stream              → be64(last version)
//	(stream → version → seq entries are left out: they would only make it slower)
//
// With sync it fsyncs Pebble's WAL per group (pipelined through
// ApplyNoSyncWait, like SyncAlways); without sync a commit returns before
// Pebble's WAL reaches the operating system, so it promises less than
// SyncInterval. It implements Append and ReadAll, enough to benchmark.
type pebbleStore struct {
	db      *pebble.DB
	sync    bool
	queue   chan *appendReq
	waitCh  chan *pebbleWait
	done    chan struct{}
	seq     uint64
	version map[string]uint64
}

type pebbleWait struct {
	batch *pebble.Batch
	reqs  []*appendReq
}

func openPebbleStore(dir string, sync bool) (*pebbleStore, error) {
	db, err := pebble.Open(filepath.Join(dir, "pebble"), pebbleOptions(discardLogger()))
	if err != nil {
		return nil, err
	}
	p := &pebbleStore{db: db, sync: sync, queue: make(chan *appendReq, queueSize), done: make(chan struct{}), version: map[string]uint64{}}
	waiterDone := make(chan struct{})
	if sync {
		p.waitCh = make(chan *pebbleWait, stageQueue)
		go func() {
			defer close(waiterDone)
			for w := range p.waitCh {
				err := w.batch.SyncWait()
				w.batch.Close()
				for _, r := range w.reqs {
					if r.err == nil && err != nil {
						r.err = err
					}
					close(r.done)
				}
			}
		}()
	} else {
		close(waiterDone)
	}
	go func() {
		defer close(p.done)
		var group []*appendReq
		for req := range p.queue {
			group = append(group[:0], req)
		drain:
			for len(group) < maxGroupReqs {
				select {
				case r, ok := <-p.queue:
					if !ok {
						break drain
					}
					group = append(group, r)
				default:
					break drain
				}
			}
			p.writeGroup(group)
		}
		if p.waitCh != nil {
			close(p.waitCh)
		}
		<-waiterDone
	}()
	return p, nil
}

func (p *pebbleStore) lastVersion(stream string) (uint64, bool, error) {
	if v, ok := p.version[stream]; ok {
		return v, true, nil
	}
	val, closer, err := p.db.Get(append([]byte{'v'}, stream...))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	return binary.BigEndian.Uint64(val), true, nil
}

func (p *pebbleStore) writeGroup(group []*appendReq) {
	b := p.db.NewBatch()
	now := time.Now().UnixNano()
	var key [9]byte
	key[0] = 'a'
	for _, r := range group {
		cur, exists, err := p.lastVersion(r.stream)
		if err != nil {
			r.err = err
			continue
		}
		if !r.expected.Check(cur, exists) {
			r.err = wrongVersion(r.stream, r.expected, cur, exists)
			continue
		}
		next := uint64(0)
		if exists {
			next = cur + 1
		}
		for off := 0; off < len(r.buf); {
			l := recordLen(r.buf[off:])
			sealRecord(r.buf[off:off+l], next, now)
			p.seq++
			binary.BigEndian.PutUint64(key[1:], p.seq)
			b.Set(key[:], r.buf[off:off+l], nil)
			off += l
			next++
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], next-1)
		b.Set(append([]byte{'v'}, r.stream...), v[:], nil)
		p.version[r.stream] = next - 1
		r.res = eventstore.AppendResult{NextExpectedVersion: next - 1, Position: position(int64(p.seq))}
	}
	reqs := append([]*appendReq(nil), group...)
	if p.sync {
		if err := p.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
			panic(err)
		}
		p.waitCh <- &pebbleWait{batch: b, reqs: reqs}
		return
	}
	err := b.Commit(pebble.NoSync)
	b.Close()
	for _, r := range reqs {
		if r.err == nil && err != nil {
			r.err = err
		}
		close(r.done)
	}
}

func (p *pebbleStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	var buf []byte
	for i := range events {
		buf = appendRecord(buf, stream, &events[i], uuid.New(), i == len(events)-1)
	}
	req := &appendReq{ctx: ctx, stream: stream, expected: expected, buf: buf, n: len(events), done: make(chan struct{})}
	p.queue <- req
	<-req.done
	return req.res, req.err
}

// ReadAll reads up to max events after position after (a sequence number).
func (p *pebbleStore) ReadAll(ctx context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	var lower [9]byte
	lower[0] = 'a'
	binary.BigEndian.PutUint64(lower[1:], after.Commit+1)
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower[:], UpperBound: []byte{'b'}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var in interner
	out := make([]eventstore.RecordedEvent, 0, max)
	for ok := it.First(); ok && len(out) < max; ok = it.Next() {
		rec, _, err := parseRecord(it.Value())
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		out = append(out, toEvent(&rec, int64(binary.BigEndian.Uint64(it.Key()[1:])), &in, true))
	}
	return out, nil
}

func (p *pebbleStore) Close() error {
	close(p.queue)
	<-p.done
	return p.db.Close()
}
