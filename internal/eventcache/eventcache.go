// Package eventcache decodes each recorded event once for every projector
// of the process: the core, analytics and Radar projections (and, with a
// DSN, ClickHouse's) all apply a sale, and each decoding its JSON was a
// tenth of a sale's CPU.
package eventcache

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// slots is the number of events kept: projectors run a few batches apart
// at most, and an entry is about as large as its event's JSON.
const slots = 1 << 13

type entry struct {
	id  uuid.UUID
	typ string
	n   int // len(Data)
	ev  domain.Event
}

var table [slots]atomic.Pointer[entry]

// Decode is domain.DecodeEvent(re.Type, re.Data), shared by every caller
// that decodes the same event (by its id) while it is in the table.
//
// The event returned may be shared: callers must not change it. An event
// without an id (tests' hand-made logs) is decoded every time.
func Decode(re eventstore.RecordedEvent) (domain.Event, error) {
	if re.ID == uuid.Nil {
		return domain.DecodeEvent(re.Type, re.Data)
	}
	slot := &table[binary.LittleEndian.Uint64(re.ID[8:])%slots]
	if e := slot.Load(); e != nil && e.id == re.ID && e.typ == re.Type && e.n == len(re.Data) {
		return e.ev, nil
	}
	ev, err := domain.DecodeEvent(re.Type, re.Data)
	if err != nil {
		return nil, err
	}
	slot.Store(&entry{id: re.ID, typ: re.Type, n: len(re.Data), ev: ev})
	return ev, nil
}
