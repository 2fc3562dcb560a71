package domain

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Event is a domain event. Its wire name is fixed by hand in EventType and
// never derived from the Go type: a stored event must keep its meaning when
// code is renamed. A breaking change gets a new name and an upcaster.
type Event interface {
	EventType() string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]func() Event{}
)

// Register makes an event type decodable by its wire name. Aggregate
// packages call it from init for each of their events. Registering a name
// twice panics: two meanings for one name would corrupt history.
func Register(factory func() Event) {
	name := factory().EventType()
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("domain: event " + name + " registered twice")
	}
	registry[name] = factory
}

// EventTypes lists every registered wire name, sorted.
func EventTypes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewEvent returns a zero value of the event registered under name.
func NewEvent(name string) (Event, bool) {
	registryMu.RLock()
	f, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, false
	}
	return f(), true
}

// ErrUnknownEvent is returned by DecodeEvent for a wire name nobody
// registered. Readers of the log skip such events rather than fail, so that
// an older binary can read a newer log.
var ErrUnknownEvent = fmt.Errorf("domain: unknown event type")

// JSONAppender is implemented by events on hot paths that encode
// themselves (exactly as encoding/json would, which their tests check).
// AppendJSON returns nil for what it cannot encode so: EncodeEvent then
// uses encoding/json, which says why.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// EncodeEvent returns the wire name and JSON of e.
func EncodeEvent(e Event) (string, []byte, error) {
	if a, ok := e.(JSONAppender); ok {
		if data := a.AppendJSON(make([]byte, 0, 512)); data != nil {
			return e.EventType(), data, nil
		}
	}
	data, err := json.Marshal(e)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.EventType(), err)
	}
	return e.EventType(), data, nil
}

// DecodeEvent decodes JSON data of the event registered under name.
func DecodeEvent(name string, data []byte) (Event, error) {
	e, ok := NewEvent(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, name)
	}
	if d, ok := e.(PlainDecoder); ok && d.DecodePlain(data) {
		return e, nil
	}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("decode %s: %w", name, err)
	}
	return e, nil
}

// PlainDecoder is an event that reads the data linkd writes for it faster
// than encoding/json, and gives the same value: DecodePlain reports
// whether it read data, and leaves the event as it was when not (the data
// is then for encoding/json).
type PlainDecoder interface {
	DecodePlain(data []byte) bool
}

// Metadata travels with every event: who caused it and why.
type Metadata struct {
	// UserID is the acting user ("admin" for the operator key); empty for
	// anonymous actions such as clicks.
	UserID string `json:"user_id,omitempty"`
	// KeyID is the API key that made the call.
	KeyID string `json:"key_id,omitempty"`
	// CorrelationID ties together the events of one request.
	CorrelationID string `json:"correlation_id,omitempty"`
	// CausationID is the event or command that caused this one.
	CausationID string `json:"causation_id,omitempty"`
}
