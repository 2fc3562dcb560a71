package esdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

func TestPortError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code esdb.ErrorCode
		want error
	}{
		{"wrong expected version", esdb.ErrorCodeWrongExpectedVersion, eventstore.ErrWrongExpectedVersion},
		{"stream not found", esdb.ErrorCodeResourceNotFound, eventstore.ErrStreamNotFound},
		{"stream deleted", esdb.ErrorCodeStreamDeleted, eventstore.ErrStreamNotFound},
		{"connection closed", esdb.ErrorCodeConnectionClosed, eventstore.ErrClosed},
		{"unknown", esdb.ErrorCodeUnknown, nil},
		{"unavailable", esdb.ErrorUnavailable, nil},
		{"deadline", esdb.ErrorCodeDeadlineExceeded, nil},
		{"access denied", esdb.ErrorCodeAccessDenied, nil},
		{"not leader", esdb.ErrorCodeNotLeader, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := portError(tt.code); got != tt.want {
				t.Errorf("portError(%d) = %v, want %v", tt.code, got, tt.want)
			}
		})
	}
}

// closedClient gives real client errors without a server: a closed client
// fails every call with ErrorCodeConnectionClosed.
func closedClient(t *testing.T) *esdb.Client {
	t.Helper()
	conf, err := esdb.ParseConnectionString("esdb://localhost:1?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	conf.Logger = esdb.NoopLogging()
	db, err := esdb.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return db
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	_, closedErr := closedClient(t).AppendToStream(context.Background(), "s", esdb.AppendToStreamOptions{})
	if closedErr == nil {
		t.Fatal("append on a closed client succeeded")
	}
	tests := []struct {
		name string
		err  error
		want error // nil: none of the port's errors
	}{
		{"client error", closedErr, eventstore.ErrClosed},
		{"wrapped client error", fmt.Errorf("outer: %w", closedErr), eventstore.ErrClosed},
		{"bare client error", &esdb.Error{}, nil},
		{"other error", errors.New("boom"), nil},
	}
	ports := []error{eventstore.ErrWrongExpectedVersion, eventstore.ErrStreamNotFound, eventstore.ErrClosed, eventstore.ErrInvalidEvent}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate("do it", tt.err)
			if !strings.HasPrefix(got.Error(), "esdb: do it") {
				t.Errorf("message %q does not name the operation", got)
			}
			var leaked *esdb.Error
			if errors.As(got, &leaked) {
				t.Errorf("%v: the client's error leaks", got)
			}
			for _, p := range ports {
				if errors.Is(got, p) != (p == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", got, p, !(p == tt.want))
				}
			}
		})
	}
	if translate("x", nil) != nil {
		t.Error("translate(nil) is not nil")
	}
}

func TestClosedStore(t *testing.T) {
	t.Parallel()
	conf, err := esdb.ParseConnectionString("esdb://localhost:1?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{conf: conf, db: closedClient(t)}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checks := map[string]error{}
	_, checks["Append"] = s.Append(ctx, "s-1", eventstore.Any(), eventstore.EventData{Type: "T"})
	_, checks["ReadStream"] = s.ReadStream(ctx, "s-1", 0, 10)
	_, _, checks["StreamVersion"] = s.StreamVersion(ctx, "s-1")
	_, checks["ReadAll"] = s.ReadAll(ctx, eventstore.Start, 10)
	_, checks["Head"] = s.Head(ctx)
	_, checks["SubscribeAll"] = s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	for name, err := range checks {
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A client that closed itself (it gives up after failed rediscovery) is
// replaced, so the store is not dead for good.
func TestLostConnectionIsReplaced(t *testing.T) {
	t.Parallel()
	conf, err := esdb.ParseConnectionString("esdb://localhost:1?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	conf.Logger = esdb.NoopLogging()
	dead := closedClient(t)
	s := &Store{conf: conf, db: dead}
	t.Cleanup(func() { s.Close() })
	_, err = s.Append(context.Background(), "s-1", eventstore.Any(), eventstore.EventData{Type: "T"})
	if err == nil || errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("append on a lost connection: %v, want a plain error", err)
	}
	if s.db == dead {
		t.Error("the closed client was not replaced")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		events []eventstore.EventData
		ok     bool
	}{
		{"fine", "link-1", []eventstore.EventData{{Type: "LinkCreated"}}, true},
		{"no events", "link-1", nil, true},
		{"empty stream", "", []eventstore.EventData{{Type: "LinkCreated"}}, false},
		{"system stream", "$link-1", []eventstore.EventData{{Type: "LinkCreated"}}, false},
		{"no type", "link-1", []eventstore.EventData{{Type: "A"}, {}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(tt.stream, tt.events)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, eventstore.ErrInvalidEvent)) {
				t.Errorf("validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestOpenBadConnString(t *testing.T) {
	t.Parallel()
	for _, cs := range []string{"http://localhost:2113", "esdb://admin:s3cret@host:2113?tls=maybe", "esdb://admin:s3cret@ho st:2113"} {
		_, err := Open(context.Background(), cs, Options{})
		if err == nil {
			t.Errorf("Open(%q) succeeded", cs)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): the error shows the password: %v", cs, err)
		}
	}
}
