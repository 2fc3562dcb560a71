package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/queries"
)

// The conversion event interface (spec 4.8) at {track_url}: POST
// /api/events/lead and /api/events/sale, with a secret key as bearer
// (server side) or a publishable key in X-Publishable-Key (browsers, from
// the key's allowed hostnames only). Errors are {"error": ...}, with
// "details" for an invalid payload.

// MaxEventBodyBytes bounds a conversion body: metadata holds at most
// 10,000 bytes, the customer's strings a few hundred.
const MaxEventBodyBytes = 64 << 10

// Texts of the conversion interface (spec section 7).
const (
	msgHostnameNotAllowed = "Hostname not in allowed list"
	msgEventTooLarge      = "Request body too large"
)

// eventError is an error of the conversion interface.
type eventError struct {
	status  int
	message string
}

func (e *eventError) Error() string { return e.message }

func (s *Server) trackLead(w http.ResponseWriter, r *http.Request) {
	s.serveEvent(w, r, false)
}

func (s *Server) trackSale(w http.ResponseWriter, r *http.Request) {
	s.serveEvent(w, r, true)
}

func (s *Server) serveEvent(w http.ResponseWriter, r *http.Request, sale bool) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := s.trackEvent(ctx, w, r, sale); err != nil {
		s.writeEventError(w, r, err)
		return
	}
	writeOK(w, http.StatusOK)
}

func (s *Server) trackEvent(ctx context.Context, w http.ResponseWriter, r *http.Request, sale bool) error {
	key, err := s.eventKey(ctx, w, r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxEventBodyBytes+1))
	if err != nil {
		return &eventError{status: http.StatusBadRequest, message: conversion.MsgInvalidPayload}
	}
	if len(body) > MaxEventBodyBytes {
		return &eventError{status: http.StatusRequestEntityTooLarge, message: msgEventTooLarge}
	}
	var p conversion.Payload
	if sale {
		p, err = conversion.ParseSale(body)
	} else {
		p, err = conversion.ParseLead(body)
	}
	if err != nil {
		return err
	}
	actor := commands.Actor{UserID: key.UserID, KeyID: key.ID}
	if sale {
		_, _, err = s.cmd.TrackSale.Handle(ctx, commands.TrackSale{Actor: actor, Payload: p})
	} else {
		_, _, err = s.cmd.TrackLead.Handle(ctx, commands.TrackLead{Actor: actor, Payload: p})
	}
	return err
}

// eventKey authenticates a conversion call: a secret key as bearer, or a
// publishable key from one of its allowed hostnames. For a browser's call
// from an allowed origin it sets the CORS headers.
func (s *Server) eventKey(ctx context.Context, w http.ResponseWriter, r *http.Request) (queries.APIKey, error) {
	if pk := strings.TrimSpace(r.Header.Get("X-Publishable-Key")); pk != "" {
		return s.publishableKey(ctx, w, r, pk)
	}
	k, err := s.keyByValue(ctx, bearer(r))
	if err != nil {
		return k, err
	}
	if k.ID == "" || k.Kind != apikey.KindSecret {
		return k, &eventError{status: http.StatusUnauthorized, message: domain.MsgInvalidAPIKey}
	}
	return k, nil
}

// publishableKey authenticates a browser's call with the publishable key
// value: an active publishable key (401 Invalid API key), called from one
// of its allowed hostnames (401 Hostname not in allowed list). It sets the
// CORS headers for the call's origin.
func (s *Server) publishableKey(ctx context.Context, w http.ResponseWriter, r *http.Request, value string) (queries.APIKey, error) {
	k, err := s.keyByValue(ctx, value)
	if err != nil {
		return k, err
	}
	if k.ID == "" || k.Kind != apikey.KindPublishable {
		return k, &eventError{status: http.StatusUnauthorized, message: domain.MsgInvalidAPIKey}
	}
	if _, ok := apikey.HostAllowed(k.AllowedHostnames, r.Header.Get("Origin"), r.Header.Get("Referer")); !ok {
		return k, &eventError{status: http.StatusUnauthorized, message: msgHostnameNotAllowed}
	}
	if o := r.Header.Get("Origin"); o != "" {
		allowOrigin(w, o)
	}
	return k, nil
}

// eventPreflight answers a browser's CORS preflight for the client-side
// interfaces: allowed (204, echoing the origin) when some active
// publishable key allows the origin's host; else 403 without CORS headers,
// so the browser does not send the call.
func (s *Server) eventPreflight(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	host, ok := apikey.RequestHost(origin, "")
	if ok {
		ok, _ = s.q.OriginAllowed.Handle(r.Context(), queries.OriginAllowed{Host: host})
	}
	w.Header().Add("Vary", "Origin")
	if !ok {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": msgHostnameNotAllowed})
		return
	}
	allowOrigin(w, origin)
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, X-Publishable-Key")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func allowOrigin(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
}

// writeEventError answers an error in the conversion interface's shape:
// {"error": ...}, with "details" for an invalid payload.
func (s *Server) writeEventError(w http.ResponseWriter, r *http.Request, err error) {
	var ee *eventError
	var pe *conversion.PayloadError
	switch {
	case errors.As(err, &ee):
		writeJSON(w, ee.status, map[string]any{"error": ee.message})
	case errors.As(err, &pe):
		body := map[string]any{"error": pe.Message}
		if len(pe.Details) > 0 {
			body["details"] = pe.Details
		}
		writeJSON(w, http.StatusBadRequest, body)
	default:
		status, body := s.errorBody(r, err, "error")
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, status, body)
	}
}
