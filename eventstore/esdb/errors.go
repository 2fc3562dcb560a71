package esdb

import (
	"errors"
	"fmt"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

// This file is the one place where the client's errors become the port's.
// The client's *esdb.Error never leaves the package: its text is kept, the
// value is not wrapped.

// errorCode is the client's code for err, ErrorCodeUnknown for errors that
// are not the client's. It looks through wrapping, which esdb.FromError
// does not.
func errorCode(err error) esdb.ErrorCode {
	var e *esdb.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return esdb.ErrorCodeUnknown
}

// portError is the port's error for a client error code, nil when the port
// has none.
func portError(code esdb.ErrorCode) error {
	switch code {
	case esdb.ErrorCodeWrongExpectedVersion:
		return eventstore.ErrWrongExpectedVersion
	case esdb.ErrorCodeResourceNotFound, esdb.ErrorCodeStreamDeleted:
		// A soft-deleted stream reads as not found; a tombstoned one
		// reports "deleted": both have no events for the port.
		return eventstore.ErrStreamNotFound
	case esdb.ErrorCodeConnectionClosed:
		return eventstore.ErrClosed
	}
	return nil
}

// translate describes a failed operation op (such as `append to "link-1"`)
// with the port's error when there is one.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	detail := err
	var e *esdb.Error
	if errors.As(err, &e) && e.Err() != nil {
		detail = e.Err()
	}
	if perr := portError(errorCode(err)); perr != nil {
		return fmt.Errorf("esdb: %s: %w: %v", op, perr, detail)
	}
	return fmt.Errorf("esdb: %s: %v", op, err)
}
