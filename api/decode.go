package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
)

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 1 << 20

var errTooLarge = &domain.Error{Kind: domain.KindTooLarge, Message: "Request body too large"}

// decodeBody reads a JSON object into v. Unknown fields are ignored; a
// known field of the wrong type, malformed JSON, or anything but one object
// is a 400 naming the problem.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return domain.Invalid("Could not read the request body")
	}
	if len(body) > MaxBodyBytes {
		return errTooLarge
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return domain.Invalid("Request body is required")
	}
	if trimmed[0] != '{' {
		return domain.Invalid("Request body must be a JSON object")
	}
	if err := checkText(trimmed); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return domain.Invalid("Request body must be one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Invalid("Request body must be one JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return de
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return domain.Invalid("Invalid JSON value of type %s", te.Value)
		}
		return domain.Invalid("Invalid value for field '%s': expected %s", field, typeName(te.Type.String()))
	case errors.As(err, &se):
		return domain.Invalid("Malformed JSON at byte %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("Malformed JSON: unexpected end of input")
	default:
		return domain.Invalid("Malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func typeName(goType string) string {
	switch {
	case strings.Contains(goType, "string"), strings.Contains(goType, "Time"):
		return "string"
	case strings.Contains(goType, "int"):
		return "integer"
	case strings.Contains(goType, "float"):
		return "number"
	case strings.Contains(goType, "bool"):
		return "boolean"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	default:
		return "object"
	}
}

// Time is a timestamp as callers send it: RFC 3339, or an ISO 8601 date and
// time without zone (taken as UTC), or a bare date.
type Time struct{ time.Time }

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// ParseTime reads a timestamp in any of the accepted forms.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid timestamp %q", s)
}

func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return domain.Invalid("Timestamps must be ISO 8601 strings")
	}
	v, err := ParseTime(s)
	if err != nil {
		return domain.Invalid("Invalid timestamp %q: use ISO 8601", s)
	}
	t.Time = v
	return nil
}

// formatTime renders timestamps: ISO 8601, UTC, with microseconds when
// there are any (as Python's isoformat does), so that a whole-second time
// sent as "2031-06-01T12:30:00Z" comes back exactly as it was sent.
func formatTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

func formatTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}
