package commands

import (
	"github.com/linkd/linkd/domain/conversion"
)

// CustomerCache keeps the state of the customers that conversions recorded
// recently, as snapshots at their last version (conversion.Customer.Snapshot),
// so that the next conversion of a customer reads nothing from the store. A
// shop's active customers outnumber what a cache of decoded histories holds
// in the same memory, and a customer missed is read from the log, from a
// compressed segment once it is older (a fifth of a sale's CPU after a
// minute of sales to 100,000 customers; ADR 0018).
//
// It is optimistic: a snapshot is used as is and the append of the
// conversion checks its version, so a customer changed meanwhile (by another
// process too) fails that append, which drops the snapshot, and the retry
// reads the stream. A snapshot knows only the last few conversion ids: it
// serves conversions whose id is new, or reserved by the caller (a repeat
// of that eventId running at the same time, which may record it first, is
// in those last few; after a failed append the caller reads the stream).
// A repeat of an eventId never uses it.
//
// A nil *CustomerCache keeps nothing.
type CustomerCache struct{ lru *lru[*conversion.Customer] }

// NewCustomerCache keeps up to customers snapshots (each a few hundred
// bytes).
func NewCustomerCache(customers int) *CustomerCache {
	return &CustomerCache{lru: newLRU(customers, func(old, c *conversion.Customer) bool {
		return old.Version() < c.Version()
	})}
}

// get returns a customer to record a conversion with a new id on: a copy of
// the snapshot of stream, which the caller may change.
func (cc *CustomerCache) get(stream string) (*conversion.Customer, bool) {
	if cc == nil {
		return nil, false
	}
	c, ok := cc.lru.get(stream)
	if !ok {
		return nil, false
	}
	return c.Snapshot(), true
}

// saved keeps the state of c, whose events were just appended to stream.
func (cc *CustomerCache) saved(stream string, c *conversion.Customer) {
	if cc != nil {
		cc.lru.put(stream, c.Snapshot())
	}
}

// conflicted drops the snapshot of stream, which another writer appended to.
func (cc *CustomerCache) conflicted(stream string) {
	if cc != nil {
		cc.lru.remove(stream)
	}
}
