package eventcache_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/eventcache"
)

func recorded(t *testing.T, id uuid.UUID, e domain.Event) eventstore.RecordedEvent {
	t.Helper()
	typ, data, err := domain.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.RecordedEvent{ID: id, Type: typ, Data: data}
}

// Callers decoding one event share one decoded value; another event, or
// one without an id, is decoded for itself.
func TestDecodeSharesAnEventByItsID(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	sale := recorded(t, id, &conversion.SaleTracked{ConversionID: "cv1", AmountMinor: 1999, Currency: "usd"})
	a, err := eventcache.Decode(sale)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := eventcache.Decode(sale)
	if a != b {
		t.Errorf("the same event decoded twice: %p and %p", a, b)
	}
	if s, ok := a.(*conversion.SaleTracked); !ok || s.ConversionID != "cv1" || s.AmountMinor != 1999 {
		t.Errorf("decoded %#v", a)
	}
	// Another event in the same slot (same low bits of the id) replaces it.
	other := id
	other[0] ^= 0xff
	o, _ := eventcache.Decode(recorded(t, other, &conversion.SaleTracked{ConversionID: "cv2"}))
	if s := o.(*conversion.SaleTracked); s.ConversionID != "cv2" {
		t.Errorf("another id got %#v", s)
	}
	nid := recorded(t, uuid.Nil, &conversion.SaleTracked{ConversionID: "cv3"})
	x, _ := eventcache.Decode(nid)
	y, _ := eventcache.Decode(nid)
	if x == y || x.(*conversion.SaleTracked).ConversionID != "cv3" {
		t.Errorf("an event without an id was shared or misread: %p %p %#v", x, y, x)
	}
	if _, err := eventcache.Decode(eventstore.RecordedEvent{ID: uuid.Must(uuid.NewV7()), Type: conversion.EventSaleTracked, Data: []byte("{")}); err == nil {
		t.Error("bad JSON decoded")
	}
}
