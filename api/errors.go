package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// statusOf maps a domain error kind to its HTTP status: the one place that
// does so.
func statusOf(k domain.Kind) int {
	switch k {
	case domain.KindInvalid:
		return http.StatusBadRequest
	case domain.KindUnauthorized:
		return http.StatusUnauthorized
	case domain.KindForbidden, domain.KindPlan:
		return http.StatusForbidden
	case domain.KindNotFound:
		return http.StatusNotFound
	case domain.KindConflict:
		return http.StatusConflict
	case domain.KindGone:
		return http.StatusGone
	case domain.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case domain.KindRateLimited:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// ErrorStatus is the status of an error: statusOf its domain kind (500
// for any other error).
func ErrorStatus(err error) int { return statusOf(domain.KindOf(err)) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// okBody is {"ok": true} as writeJSON writes it.
var okBody = []byte("{\"ok\":true}\n")

// writeOK answers {"ok": true}, the answer of every collected hit and
// conversion: the same bytes as writeJSON's, without encoding them again.
func writeOK(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(okBody)
}

// writeDetail answers {"detail": msg}.
func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": msg})
}

// writeError answers an error in the spec's shape. Unknown errors are
// logged and answered with a generic 500: never a stack trace.
// MsgStoreUnavailable answers a write while the event store cannot be
// reached (503, with Retry-After).
const MsgStoreUnavailable = "The event store is unavailable; try again shortly"

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorBody(r, err, "detail")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

// errorBody maps an error to its status and body, the message under key
// ("detail" for v1, "error" for the conversion interface). Unknown errors
// are logged and become a generic 500.
func (s *Server) errorBody(r *http.Request, err error, key string) (int, map[string]any) {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		body := map[string]any{key: de.Message}
		for k, v := range de.Extra {
			body[k] = v
		}
		return statusOf(de.Kind), body
	case errors.Is(err, commands.ErrConcurrency):
		return http.StatusConflict, map[string]any{key: "The resource was changed concurrently; try again"}
	case errors.Is(err, eventstore.ErrUnavailable):
		return http.StatusServiceUnavailable, map[string]any{key: MsgStoreUnavailable}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, map[string]any{key: "The request timed out"}
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		return http.StatusInternalServerError, map[string]any{key: "Internal server error"}
	}
}
